// Password and revocation: revoke every browser or every script (the API
// token), and change the password (POST /api/auth/revoke and
// /api/auth/password, docs/api.md). Each spells out its consequence before
// it is confirmed; a new API token is shown once.

import { useState } from "preact/hooks";
import { onUnauthorized, post, setOnUnauthorized } from "../../lib/api";
import { Confirm, errText, FieldError, invalid, ShownOnce } from "./common";

type Scope = "browsers" | "scripts";

const CONSEQUENCE: Record<Scope, string> = {
  browsers:
    "Every browser signed in to this server is signed out at once, this one included, on every instance; open terminals and chats in them disconnect. Scripts keep working with the API token. You sign in again with the password.",
  scripts:
    "The API token stops working at once, for every script, helper (shadow-query) and tkn link that uses it, on every instance. A new token is made and shown here once; the config file's api_token line holds it too. Browsers stay signed in.",
};

/** After this browser's own cookie is void: no automatic jump to the sign-in page while the page has something to show. */
function signedOut(): () => void {
  const before = onUnauthorized;
  setOnUnauthorized(() => {});
  return () => setOnUnauthorized(before);
}

export function Security() {
  return (
    <>
      <Revoke />
      <Password />
    </>
  );
}

function Revoke() {
  const [ask, setAsk] = useState<Scope | null>(null);
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState<string | null>(null);
  const [done, setDone] = useState<{ scope: Scope; token?: string } | null>(null);
  const revoke = async (scope: Scope) => {
    setBusy(true);
    const restore = scope === "browsers" ? signedOut() : () => {};
    try {
      const r = await post<{ api_token?: string }>("/api/auth/revoke", { scope });
      setDone({ scope, token: r.api_token });
      setErr(null);
    } catch (e) {
      restore();
      setErr(errText(e));
    } finally {
      setBusy(false);
      setAsk(null);
    }
  };
  return (
    <section class="set-card" aria-label="Revoke access">
      <h3>Revoke access</h3>
      <div class="set-revoke">
        <div>
          <h4>Browsers</h4>
          <p class="muted">{CONSEQUENCE.browsers}</p>
          <button type="button" class="danger" onClick={() => setAsk("browsers")}>
            Revoke browsers
          </button>
        </div>
        <div>
          <h4>Scripts</h4>
          <p class="muted">{CONSEQUENCE.scripts}</p>
          <button type="button" class="danger" onClick={() => setAsk("scripts")}>
            Revoke scripts
          </button>
        </div>
      </div>
      {err && (
        <p class="notice error" role="alert">
          {err}
        </p>
      )}
      {done?.scope === "scripts" && (
        <div class="set-done" role="status">
          <strong>The old API token no longer works.</strong>
          {done.token && <ShownOnce label="New API token" value={done.token} />}
        </div>
      )}
      {done?.scope === "browsers" && (
        <div class="set-done" role="status">
          <strong>Every browser is signed out, this one included.</strong>{" "}
          <a href={"/login?next=" + encodeURIComponent("/settings?section=security")}>Sign in again</a>
        </div>
      )}
      {ask && (
        <Confirm title={`Revoke ${ask}`} danger busy={busy} onConfirm={() => revoke(ask)} onCancel={() => setAsk(null)}>
          <p>{CONSEQUENCE[ask]}</p>
          <p>This cannot be undone.</p>
        </Confirm>
      )}
    </section>
  );
}

function Password() {
  const [cur, setCur] = useState("");
  const [next, setNext] = useState("");
  const [again, setAgain] = useState("");
  const [err, setErr] = useState<{ field: "current" | "new" | "again" | "form"; msg: string } | null>(null);
  const [ask, setAsk] = useState(false);
  const [busy, setBusy] = useState(false);
  const [token, setToken] = useState<string | null>(null);
  const at = (f: string) => (err?.field === f ? err.msg : null);
  const check = (): boolean => {
    if (!cur) return setErr({ field: "current", msg: "Enter the current password." }), false;
    if (new TextEncoder().encode(next).length < 8) return setErr({ field: "new", msg: "A password must be at least 8 bytes long." }), false;
    if (next !== again) return setErr({ field: "again", msg: "The two new passwords differ." }), false;
    setErr(null);
    return true;
  };
  const change = async () => {
    setBusy(true);
    const restore = signedOut();
    try {
      const r = await post<{ api_token: string }>("/api/auth/password", { current_password: cur, new_password: next });
      setToken(r.api_token);
      setCur("");
      setNext("");
      setAgain("");
    } catch (e) {
      restore();
      const msg = errText(e);
      const code = (e as { code?: string }).code;
      setErr({ field: code === "invalid_password" ? "current" : /^new_password/.test(msg) ? "new" : "form", msg });
    } finally {
      setBusy(false);
      setAsk(false);
    }
  };
  if (token)
    return (
      <section class="set-card" aria-label="Password">
        <h3>Password</h3>
        <div class="set-done" role="status">
          <strong>Password changed. Every browser is signed out, this one included, and the old API token no longer works.</strong>
          <ShownOnce label="New API token" value={token} />
          <p>
            <a class="button primary" href={"/login?next=" + encodeURIComponent("/settings")}>
              Sign in again
            </a>
          </p>
        </div>
      </section>
    );
  return (
    <form
      class="set-card set-form"
      aria-label="Password"
      onSubmit={(e) => {
        e.preventDefault();
        if (check()) setAsk(true);
      }}
    >
      <h3>Password</h3>
      <p class="muted">
        As <code>make passwd</code>: 8 to 1024 bytes. Changing it signs every browser out (this one too) and replaces the API token.
      </p>
      <div class="set-grid">
        <label for="pw-current">Current password</label>
        <div>
          <input id="pw-current" type="password" autocomplete="current-password" value={cur} onInput={(e) => setCur(e.currentTarget.value)} {...invalid("pw-current-err", at("current"))} />
          <FieldError id="pw-current-err" msg={at("current")} />
        </div>
        <label for="pw-new">New password</label>
        <div>
          <input id="pw-new" type="password" autocomplete="new-password" value={next} onInput={(e) => setNext(e.currentTarget.value)} {...invalid("pw-new-err", at("new"))} />
          <FieldError id="pw-new-err" msg={at("new")} />
        </div>
        <label for="pw-again">New password again</label>
        <div>
          <input id="pw-again" type="password" autocomplete="new-password" value={again} onInput={(e) => setAgain(e.currentTarget.value)} {...invalid("pw-again-err", at("again"))} />
          <FieldError id="pw-again-err" msg={at("again")} />
        </div>
      </div>
      <FieldError id="pw-form-err" msg={at("form")} />
      <button type="submit" class="primary">
        Change password
      </button>
      {ask && (
        <Confirm title="Change the password" danger busy={busy} onConfirm={change} onCancel={() => setAsk(false)}>
          <p>Every browser signed in to this server is signed out at once, this one included: you sign in again with the new password.</p>
          <p>The API token stops working for every script and helper; the new one is shown here once (and is the config file's api_token line).</p>
        </Confirm>
      )}
    </form>
  );
}
