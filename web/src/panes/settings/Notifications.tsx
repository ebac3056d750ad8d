// Web Push on this device and the list of devices that get notifications
// (docs/api.md "Web Push"): enable here (the browser's permission, a push
// subscription with the server's VAPID key, registered under a name), send a
// test, remove a device; and the turn-end threshold when the server has it.

import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError, del, get, post, put } from "../../lib/api";
import { deviceName, fmtAgo } from "../../lib/format";
import type { PushTestQueued, PushTestResult } from "../../protocol/types.gen";
import { errText, FieldError, invalid, useGet } from "./common";

export interface PushDevice {
  id: string;
  name: string;
  endpoint_origin: string;
  created_at: string;
  last_success_at: string | null;
  last_error: string | null;
  user_agent?: string;
}

/** Where this browser keeps the id of its own registration (the server never echoes endpoints). */
const MINE = "svc-push-device";

/** Why this browser cannot get push notifications, or null when it can. */
export function pushUnsupported(w: { isSecureContext?: boolean; navigator: Navigator } & Record<string, any> = window): string | null {
  if (!w.isSecureContext) return "Notifications need a secure page: open svc-code over HTTPS (or on localhost).";
  const ios = /iPhone|iPad/.test(w.navigator.userAgent);
  if (!("serviceWorker" in w.navigator) || !("PushManager" in w) || !("Notification" in w)) {
    return ios
      ? "This browser cannot get push notifications here. On an iPhone or iPad (iOS 16.4 or later), add svc-code to the Home Screen (Share → Add to Home Screen) and open it from there."
      : "This browser cannot get push notifications (it has no Push API, or it is off, e.g. in a private window).";
  }
  return null;
}

/** A base64url string (padding optional) as bytes: the applicationServerKey. */
export function b64urlBytes(s: string): Uint8Array<ArrayBuffer> {
  const b64 = s.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((s.length + 3) % 4);
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function sameBytes(a: ArrayBuffer | null | undefined, b: Uint8Array): boolean {
  if (!a) return false;
  const x = new Uint8Array(a);
  return x.length === b.length && x.every((v, i) => v === b[i]);
}

function readMine(): { id: string; endpoint: string } | null {
  try {
    const v = JSON.parse(localStorage.getItem(MINE) ?? "null");
    return v && typeof v.id === "string" && typeof v.endpoint === "string" ? v : null;
  } catch {
    return null;
  }
}

const DENIED = "Notifications are blocked for this site in this browser. Allow them in the browser's site settings (the icon left of the address), then try again.";

/** The service worker's registration, or an error after a while (it failed to install). */
async function registration(): Promise<ServiceWorkerRegistration> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error("the app's service worker is not running (reload the page and try again)")), 10000);
  });
  try {
    return await Promise.race([navigator.serviceWorker.ready, late]);
  } finally {
    clearTimeout(timer);
  }
}

function when(iso: string | null | undefined): string {
  if (!iso) return "never";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : `${fmtAgo(iso)} (${d.toLocaleString()})`;
}

export function Notifications() {
  return (
    <>
      <ThisDevice />
      <TurnThreshold />
    </>
  );
}

type Msg = { tone: "ok" | "error"; text: string } | null;

function Note({ msg }: { msg: NonNullable<Msg> }) {
  return (
    <p class={msg.tone === "ok" ? "ok" : "notice error"} role={msg.tone === "ok" ? "status" : "alert"}>
      {msg.text}
    </p>
  );
}

function ThisDevice() {
  const unsupported = pushUnsupported();
  const list = useGet<{ subscriptions: PushDevice[] }>("/api/push/subscriptions");
  const [perm, setPerm] = useState<NotificationPermission | "unsupported">(() => (unsupported ? "unsupported" : Notification.permission));
  const [name, setName] = useState(() => deviceName(navigator.userAgent));
  const [busy, setBusy] = useState(false);
  const [msg, setMsg] = useState<Msg>(null);
  const [nameErr, setNameErr] = useState<string | null>(null);
  const [mine, setMine] = useState(readMine);
  // This browser's subscription as the browser has it (the stored id is only ours while the endpoint matches).
  const [endpoint, setEndpoint] = useState<string | null>(null);
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const [testing, setTesting] = useState<Set<string>>(new Set());
  // The last test's outcome: under its device (id), or in the list's head when the device went.
  const [tested, setTested] = useState<(Msg & { id: string | null }) | null>(null);
  useEffect(() => {
    if (unsupported) return;
    navigator.serviceWorker.getRegistration().then(
      (reg) => reg?.pushManager.getSubscription().then((s) => setEndpoint(s?.endpoint ?? null)),
      () => undefined,
    );
    return () => {
      if (timer.current) clearTimeout(timer.current);
    };
  }, []);
  const devices = list.data?.subscriptions ?? [];
  const myId = mine && endpoint && mine.endpoint === endpoint && devices.some((d) => d.id === mine.id) ? mine.id : null;

  const enable = async () => {
    setMsg(null);
    setNameErr(null);
    if (name.trim() === "") {
      setNameErr("Give this device a name (1 to 80 characters).");
      return;
    }
    setBusy(true);
    try {
      const p = await Notification.requestPermission();
      setPerm(p);
      if (p !== "granted") {
        setMsg({ tone: "error", text: p === "denied" ? DENIED : "Notifications were not allowed (the question was dismissed): try again." });
        return;
      }
      const { public_key } = await get<{ public_key: string }>("/api/push/key");
      const key = b64urlBytes(public_key);
      const reg = await registration();
      let sub = await reg.pushManager.getSubscription();
      // A subscription made for another server key cannot be used: replace it.
      if (sub && !sameBytes(sub.options.applicationServerKey, key)) {
        await sub.unsubscribe();
        sub = null;
      }
      try {
        sub ??= await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
      } catch (e) {
        throw new Error("the browser's push service refused the subscription: " + (e as Error).message);
      }
      const json = sub.toJSON();
      const r = await post<{ subscription: PushDevice }>("/api/push/subscriptions", { name: name.trim(), subscription: { endpoint: json.endpoint, keys: json.keys } });
      const me = { id: r.subscription.id, endpoint: sub.endpoint };
      localStorage.setItem(MINE, JSON.stringify(me));
      setMine(me);
      setEndpoint(sub.endpoint);
      setMsg({ tone: "ok", text: `This device (${r.subscription.name}) gets notifications now. Send a test to check.` });
      list.reload();
    } catch (e) {
      const text = errText(e);
      if (e instanceof ApiError && e.status === 400 && /name/.test(text)) setNameErr(text);
      else setMsg({ tone: "error", text: e instanceof ApiError ? `The server refused: ${text}` : `Not enabled: ${text}` });
    } finally {
      setBusy(false);
    }
  };

  const remove = async (d: PushDevice) => {
    setMsg(null);
    setTested(null);
    try {
      await del(`/api/push/subscriptions/${encodeURIComponent(d.id)}`).catch((e) => {
        if (!(e instanceof ApiError && e.status === 404)) throw e;
      });
      if (d.id === myId) {
        const reg = await navigator.serviceWorker.getRegistration();
        await (await reg?.pushManager.getSubscription())?.unsubscribe();
        localStorage.removeItem(MINE);
        setMine(null);
        setEndpoint(null);
      }
      setMsg({ tone: "ok", text: `Removed ${d.name}: it gets no more notifications.` });
    } catch (e) {
      setMsg({ tone: "error", text: `${d.name} could not be removed: ${errText(e)}` });
    }
    list.reload();
  };

  // POST /api/push/test answers once the push service has (or after
  // CHAT_PUSH_TEST_WAIT with 202 while tries go on: then the list is read
  // again until the device's record changes).
  const test = async (d: PushDevice) => {
    setMsg(null);
    setTested(null);
    if (timer.current) clearTimeout(timer.current);
    setTesting((t) => new Set(t).add(d.id));
    // The outcome shows under the device; a removed device's in the list's head.
    const say = (tone: "ok" | "error", text: string, removed = false) => setTested({ id: removed ? null : d.id, tone, text });
    try {
      const r = await post<PushTestResult | PushTestQueued>("/api/push/test", { id: d.id });
      if ("queued" in r) {
        say("ok", "The test is still being tried (the push service is slow to answer): its outcome shows here once known.");
        follow(d, Date.now() + 60000);
      } else if (r.delivered) {
        say("ok", "The push service took the test: it should show on the device within seconds.");
      } else if (r.removed) {
        say("error", `${d.name} was removed: ${r.error}. Enable notifications again on that device to get them there.`, true);
      } else {
        say("error", `The test was not delivered: ${r.error}.`);
      }
    } catch (e) {
      say("error", `The test could not be sent: ${errText(e)}`);
    } finally {
      setTesting((t) => {
        const n = new Set(t);
        n.delete(d.id);
        return n;
      });
      list.reload();
    }
  };

  /** Reads the list every 2 s until d's record changes (or it is gone), at most until the deadline. */
  const follow = (d: PushDevice, deadline: number) => {
    timer.current = setTimeout(async () => {
      try {
        const cur = await get<{ subscriptions: PushDevice[] }>("/api/push/subscriptions");
        list.setData(cur);
        const now = cur.subscriptions.find((x) => x.id === d.id);
        if (!now || now.last_success_at !== d.last_success_at || now.last_error !== d.last_error) return;
      } catch {
        /* tried again below */
      }
      if (Date.now() < deadline) follow(d, deadline);
    }, 2000);
  };

  return (
    <>
      <section class="set-card" aria-label="This device">
        <h3>This device</h3>
        <p class="muted">
          A notification when an agent asks for a permission while no tab shows its session (with Allow and Deny on the notification), and when a long turn ends.
        </p>
        {unsupported ? (
          <p class="notice error" role="alert">
            {unsupported}
          </p>
        ) : myId ? (
          <p class="ok" role="status">
            Notifications are on for this device.
          </p>
        ) : (
          <>
            {perm === "denied" && (
              <p class="notice error" role="alert">
                {DENIED}
              </p>
            )}
            <form
              class="set-form set-row"
              onSubmit={(e) => {
                e.preventDefault();
                enable();
              }}
            >
              <label for="push-name">Device name</label>
              <input id="push-name" type="text" maxLength={80} value={name} onInput={(e) => (setName(e.currentTarget.value), setNameErr(null))} {...invalid("push-name-err", nameErr)} />
              <button type="submit" class="primary" disabled={busy}>
                {busy ? "Enabling…" : "Enable notifications"}
              </button>
            </form>
            <FieldError id="push-name-err" msg={nameErr} />
          </>
        )}
        {msg && <Note msg={msg} />}
      </section>
      <section class="set-card" aria-label="Devices">
        <h3>Devices</h3>
        {tested && tested.id === null && <Note msg={tested} />}
        {list.error ? (
          <p class="notice error" role="alert">
            The devices could not be read: {list.error}
          </p>
        ) : !list.data ? (
          <p class="muted">Loading…</p>
        ) : devices.length === 0 ? (
          <p class="muted">No device gets notifications yet.</p>
        ) : (
          <ul class="push-devices" aria-label="Devices that get notifications">
            {devices.map((d) => (
              <li key={d.id} aria-label={d.name}>
                <div class="push-dev-main">
                  <strong>{d.name}</strong>
                  {d.id === myId && <span class="set-badge ok">this device</span>}
                  <div class="muted push-dev-meta">
                    <span>via {d.endpoint_origin}</span> · <span>added {when(d.created_at)}</span>
                  </div>
                  <div class="muted push-dev-meta">Last delivered: {when(d.last_success_at)}</div>
                  {d.last_error && <div class="field-error">Last error: {d.last_error}</div>}
                </div>
                <div class="set-row push-dev-actions">
                  <button type="button" onClick={() => test(d)} disabled={testing.has(d.id)} aria-label={`Send a test to ${d.name}`}>
                    {testing.has(d.id) ? "Sending…" : "Send a test"}
                  </button>
                  <button type="button" class="danger" onClick={() => remove(d)} aria-label={`Remove ${d.name}`}>
                    Remove
                  </button>
                </div>
                {tested?.id === d.id && <Note msg={tested} />}
              </li>
            ))}
          </ul>
        )}
      </section>
    </>
  );
}

interface AppConfig {
  config: Record<string, unknown>;
  keys: { key: string; default: unknown; description: string }[];
}

/** The app config's push_turn_seconds, when the server has that key. */
function TurnThreshold() {
  const { data, setData } = useGet<AppConfig>("/api/app/config");
  const [v, setV] = useState<string | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const [saved, setSaved] = useState(false);
  const info = data?.keys.find((k) => k.key === "push_turn_seconds");
  if (!data || !info) return null;
  const cur = data.config.push_turn_seconds ?? info.default;
  const shown = v ?? String(cur ?? "");
  return (
    <form
      class="set-card set-form"
      aria-label="Turn notifications"
      onSubmit={async (e) => {
        e.preventDefault();
        try {
          const r = await put<AppConfig>("/api/app/config", { push_turn_seconds: shown.trim() === "" ? null : Number(shown) });
          setData(r);
          setV(null);
          setErr(null);
          setSaved(true);
        } catch (x) {
          setSaved(false);
          setErr(errText(x));
        }
      }}
    >
      <h3>Turn notifications</h3>
      <label for="push-turn">Notify when a turn ran longer than (seconds; 0: never)</label>
      <div class="set-row">
        <input id="push-turn" type="number" min={0} value={shown} onInput={(e) => (setV(e.currentTarget.value), setSaved(false))} {...invalid("push-turn-err", err)} />
        <button type="submit" disabled={v === null}>
          Save
        </button>
        {saved && (
          <span class="ok" role="status">
            Saved
          </span>
        )}
      </div>
      <FieldError id="push-turn-err" msg={err} />
      <p class="muted set-desc">{info.description}</p>
    </form>
  );
}
