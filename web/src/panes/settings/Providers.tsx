// Providers: each agent provider's executable path, credentials, models
// and defaults for new sessions, and which provider is the default
// (docs/api.md "Providers", "Provider settings"). A refused value shows the
// server's message at its field; nothing is changed then.

import { useState } from "preact/hooks";
import { put } from "../../lib/api";
import { loadProviders } from "../../state/app";
import { Confirm, errText, fieldOf, FieldError, invalid, useGet } from "./common";

interface Executable {
  name: string;
  path: string | null;
  resolved: string | null;
  found: boolean;
  reason?: string;
}
interface Defaults {
  model: string | null;
  permission_mode: string;
  approval_policy?: string;
  sandbox?: string;
}
interface ProviderInfo {
  name: string;
  display_name: string;
  default: boolean;
  available: boolean;
  reason?: string;
  permission_modes: string[];
  executable: Executable;
  defaults: Defaults;
}

export function Providers() {
  const { data, error, reload } = useGet<{ default: string; providers: ProviderInfo[] }>("/api/providers");
  const [defErr, setDefErr] = useState<string | null>(null);
  if (error) return <p class="notice error">Providers could not be read: {error}</p>;
  if (!data) return <p class="muted">Loading…</p>;
  const refresh = () => {
    reload();
    loadProviders();
  };
  return (
    <>
      <fieldset class="set-card">
        <legend>Default provider</legend>
        <p class="muted">Sessions created without a provider use it, on every instance.</p>
        <div class="set-row" role="radiogroup" aria-label="Default provider">
          {data.providers.map((p) => (
            <label key={p.name} class="set-radio">
              <input
                type="radio"
                name="default-provider"
                checked={p.name === data.default}
                onChange={async () => {
                  try {
                    await put("/api/app/default-provider", { provider: p.name });
                    setDefErr(null);
                    refresh();
                  } catch (e) {
                    setDefErr(errText(e));
                  }
                }}
              />
              {p.display_name} <span class="muted">({p.name})</span>
            </label>
          ))}
        </div>
        <FieldError id="default-provider-err" msg={defErr} />
      </fieldset>
      {data.providers.map((p) => (
        <section key={p.name} class="set-card" aria-label={`Provider ${p.display_name}`}>
          <h3>
            {p.display_name} <span class="muted">({p.name})</span>{" "}
            <span class={`set-badge ${p.available ? "ok" : "bad"}`}>{p.available ? "available" : "not available"}</span>
          </h3>
          {!p.available && p.reason && <p class="notice warn">{p.reason}</p>}
          <PathForm p={p} onSaved={refresh} />
          <DefaultsForm p={p} onSaved={refresh} />
          <AuthForm name={p.name} />
          <ModelsForm name={p.name} />
        </section>
      ))}
    </>
  );
}

function PathForm({ p, onSaved }: { p: ProviderInfo; onSaved: () => void }) {
  const ex = p.executable;
  const [path, setPath] = useState(ex.path ?? "");
  const [err, setErr] = useState<string | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const id = `path-${p.name}`;
  const save = async (value: string | null) => {
    try {
      const r = await put<Executable>(`/api/app/provider-path/${p.name}`, { path: value });
      setErr(null);
      setPath(r.path ?? "");
      setNote(r.found ? `Saved: runs ${r.resolved}` : `Saved, but ${r.reason ?? "it is not found"}`);
      onSaved();
    } catch (e) {
      setNote(null);
      setErr(errText(e));
    }
  };
  return (
    <form
      class="set-form"
      onSubmit={(e) => {
        e.preventDefault();
        save(path.trim() || null);
      }}
    >
      <label for={id}>Path of {ex.name}</label>
      <div class="set-row">
        <input id={id} type="text" value={path} placeholder={`looked up on PATH (${ex.resolved ?? "not found"})`} onInput={(e) => setPath(e.currentTarget.value)} spellcheck={false} {...invalid(id + "-err", err)} />
        <button type="submit">Save path</button>
        {ex.path && (
          <button type="button" onClick={() => save(null)}>
            Use PATH
          </button>
        )}
      </div>
      <FieldError id={id + "-err"} msg={err} />
      <p class="muted">{note ?? (ex.found ? `Runs ${ex.resolved}` : (ex.reason ?? `${ex.name} is not found`))}</p>
    </form>
  );
}

const APPROVAL = ["untrusted", "on-request", "never"];
const SANDBOX = ["read-only", "workspace-write", "danger-full-access"];

function DefaultsForm({ p, onSaved }: { p: ProviderInfo; onSaved: () => void }) {
  const d = p.defaults;
  const codex = p.name === "app-server";
  const [v, setV] = useState({ model: d.model ?? "", permission_mode: d.permission_mode, approval_policy: d.approval_policy ?? "untrusted", sandbox: d.sandbox ?? "workspace-write" });
  const [err, setErr] = useState<{ field: string; msg: string } | null>(null);
  const [saved, setSaved] = useState(false);
  const fields = ["model", "permission_mode", "approval_policy", "sandbox"];
  const at = (f: string) => (err && err.field === f ? err.msg : null);
  const id = (f: string) => `def-${p.name}-${f}`;
  const save = async (e: Event) => {
    e.preventDefault();
    const body: Record<string, unknown> = { model: v.model.trim() || null, permission_mode: v.permission_mode };
    if (codex) Object.assign(body, { approval_policy: v.approval_policy, sandbox: v.sandbox });
    try {
      await put(`/api/app/provider-defaults/${p.name}`, body);
      setErr(null);
      setSaved(true);
      onSaved();
    } catch (x) {
      setSaved(false);
      const msg = errText(x);
      setErr({ field: fieldOf(msg, fields), msg });
    }
  };
  const set = (k: keyof typeof v) => (e: Event) => {
    setSaved(false);
    setV({ ...v, [k]: (e.currentTarget as HTMLInputElement).value });
  };
  return (
    <form class="set-form set-grid" onSubmit={save} aria-label={`Defaults of ${p.display_name}`}>
      <h4>Defaults for new sessions</h4>
      <label for={id("model")}>Model</label>
      <div>
        <input id={id("model")} type="text" value={v.model} placeholder="the agent's own default" onInput={set("model")} spellcheck={false} {...invalid(id("model") + "-err", at("model"))} />
        <FieldError id={id("model") + "-err"} msg={at("model")} />
      </div>
      <label for={id("permission_mode")}>Permission mode</label>
      <div>
        <select id={id("permission_mode")} value={v.permission_mode} onChange={set("permission_mode")} {...invalid(id("permission_mode") + "-err", at("permission_mode"))}>
          {p.permission_modes.map((m) => (
            <option key={m}>{m}</option>
          ))}
        </select>
        <FieldError id={id("permission_mode") + "-err"} msg={at("permission_mode")} />
      </div>
      {codex && (
        <>
          <label for={id("approval_policy")}>Approval policy (default mode)</label>
          <div>
            <select id={id("approval_policy")} value={v.approval_policy} onChange={set("approval_policy")}>
              {APPROVAL.map((m) => (
                <option key={m}>{m}</option>
              ))}
            </select>
            <FieldError id={id("approval_policy") + "-err"} msg={at("approval_policy")} />
          </div>
          <label for={id("sandbox")}>Sandbox (default mode)</label>
          <div>
            <select id={id("sandbox")} value={v.sandbox} onChange={set("sandbox")}>
              {SANDBOX.map((m) => (
                <option key={m}>{m}</option>
              ))}
            </select>
            <FieldError id={id("sandbox") + "-err"} msg={at("sandbox")} />
          </div>
        </>
      )}
      <span />
      <div class="set-row">
        <button type="submit">Save defaults</button>
        {saved && (
          <span class="ok" role="status">
            Saved
          </span>
        )}
      </div>
      <FieldError id={`def-${p.name}-form-err`} msg={err && !err.field ? err.msg : null} />
    </form>
  );
}

interface Auth {
  configured: boolean;
  api_key_set: boolean;
  api_key_env: string;
  sources: { kind: string; name: string; present: boolean }[];
}

function AuthForm({ name }: { name: string }) {
  const { data, reload } = useGet<Auth>(`/api/app/provider-auth/${name}`);
  const [key, setKey] = useState("");
  const [err, setErr] = useState<string | null>(null);
  const [removing, setRemoving] = useState(false);
  const id = `auth-${name}`;
  if (!data) return null;
  const save = async (value: string | null) => {
    try {
      await put(`/api/app/provider-auth/${name}`, { api_key: value });
      setErr(null);
      setKey("");
      setRemoving(false);
      reload();
    } catch (e) {
      setErr(errText(e));
    }
  };
  return (
    <form
      class="set-form"
      onSubmit={(e) => {
        e.preventDefault();
        if (key) save(key);
      }}
    >
      <h4>Credentials</h4>
      <p>
        {data.configured ? "Configured" : "Not configured"}: {data.sources.filter((s) => s.present).map((s) => s.name).join(", ") || "no source present"}.
      </p>
      <details>
        <summary>Where they may come from</summary>
        <ul class="set-list">
          {data.sources.map((s) => (
            <li key={s.kind + s.name}>
              {s.present ? "✓" : "·"} {s.kind}: <code>{s.name}</code>
            </li>
          ))}
        </ul>
      </details>
      <label for={id}>API key given to new processes as {data.api_key_env}</label>
      <div class="set-row">
        <input id={id} type="password" autocomplete="off" value={key} placeholder={data.api_key_set ? "a key is stored (never shown)" : "none stored"} onInput={(e) => setKey(e.currentTarget.value)} {...invalid(id + "-err", err)} />
        <button type="submit" disabled={!key}>
          Store key
        </button>
        {data.api_key_set && (
          <button type="button" onClick={() => setRemoving(true)}>
            Remove key
          </button>
        )}
      </div>
      <FieldError id={id + "-err"} msg={err} />
      <p class="muted">A stored key is kept as it is in PostgreSQL; the environment variable or the CLI's own login keeps it out of the database.</p>
      {removing && (
        <Confirm title="Remove the stored API key" danger onConfirm={() => save(null)} onCancel={() => setRemoving(false)}>
          <p>New agent processes of this provider will no longer get {data.api_key_env} from here; they use the other sources listed, if any. Running ones keep theirs.</p>
        </Confirm>
      )}
    </form>
  );
}

interface Models {
  configured: boolean;
  models: { id: string; display_name?: string; price?: Record<string, number> }[];
}

function ModelsForm({ name }: { name: string }) {
  const { data, setData } = useGet<Models>(`/api/app/provider-models/${name}`);
  const [text, setText] = useState<string | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const id = `models-${name}`;
  if (!data) return null;
  const save = async (models: unknown) => {
    try {
      const r = await put<Models>(`/api/app/provider-models/${name}`, { models });
      setData(r);
      setText(null);
      setErr(null);
    } catch (e) {
      setErr(errText(e));
    }
  };
  return (
    <details class="set-form">
      <summary>
        Models and prices ({data.models.length}, {data.configured ? "configured" : "built-in list"})
      </summary>
      <table class="set-table">
        <thead>
          <tr>
            <th scope="col">Model</th>
            <th scope="col">Input $/Mtok</th>
            <th scope="col">Cached $/Mtok</th>
            <th scope="col">Output $/Mtok</th>
          </tr>
        </thead>
        <tbody>
          {data.models.map((m) => (
            <tr key={m.id}>
              <td>{m.display_name ? `${m.display_name} (${m.id})` : m.id}</td>
              <td>{m.price?.input_per_mtok ?? "—"}</td>
              <td>{m.price?.cached_input_per_mtok ?? "—"}</td>
              <td>{m.price?.output_per_mtok ?? "—"}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <label for={id}>Models as JSON</label>
      <textarea id={id} rows={6} spellcheck={false} value={text ?? JSON.stringify(data.models, null, 1)} onInput={(e) => setText(e.currentTarget.value)} {...invalid(id + "-err", err)} />
      <FieldError id={id + "-err"} msg={err} />
      <div class="set-row">
        <button
          type="button"
          onClick={() => {
            try {
              save(JSON.parse(text ?? JSON.stringify(data.models)));
            } catch (e) {
              setErr("not JSON: " + (e as Error).message);
            }
          }}
        >
          Save models
        </button>
        {data.configured && (
          <button type="button" onClick={() => save(null)}>
            Back to the built-in list
          </button>
        )}
      </div>
    </details>
  );
}
