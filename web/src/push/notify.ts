// What the service worker shows for a Web Push payload (docs/api.md "Web
// Push"), and what it says when an answer from a notification fails.
//
// Pure functions without imports: the build (vite.config.ts) transpiles this
// file and puts it at the top of dist/sw.js, and the unit tests import it as
// a module. Keep it free of imports and of browser globals.

export interface PermissionPush {
  kind: "permission";
  session_id: string;
  session_title?: string;
  request_id: string;
  tool_name: string;
  /** The whole input, or a prefix preview string when input_truncated. */
  input: unknown;
  input_truncated?: boolean;
  token: string;
  expires_at?: string;
  pending?: number;
  url?: string;
}
export interface TurnEndedPush {
  kind: "turn_ended";
  session_id: string;
  session_title?: string;
  duration_ms?: number;
  cost_usd?: number;
  status?: string;
  url?: string;
  pending?: number;
}
export interface ResolvedPush {
  kind: "resolved";
  request_id: string;
  pending?: number;
}
export interface TestPush {
  kind: "test";
  pending?: number;
}
export type PushPayload = PermissionPush | TurnEndedPush | ResolvedPush | TestPush;

export interface NotificationAction {
  action: string;
  title: string;
}

/** NotificationOptions as the service worker passes them (actions are not in TypeScript's DOM lib). */
export interface PushNotificationOptions {
  body: string;
  tag: string;
  data: unknown;
  requireInteraction: boolean;
  actions: NotificationAction[];
  icon: string;
  badge: string;
  timestamp?: number;
}

export interface PushNotification {
  title: string;
  options: PushNotificationOptions;
}

const ICON = "/instance-icons/icon-192.png";
/** Notification bodies longer than this are cut by the browsers anyway; the card has the rest. */
export const BODY_MAX = 3000;

/** The session's name as notifications show it. */
function titleOf(t: unknown): string {
  return typeof t === "string" && t.trim() !== "" ? t.trim() : "Untitled session";
}

/** A same-origin path to open: the payload's url when it is a path, else the fallback. */
export function safePath(url: unknown, fallback = "/"): string {
  if (typeof url !== "string" || !url.startsWith("/") || url.startsWith("//") || url.includes("\\")) return fallback;
  return url;
}

/**
 * A tool input as text: the command for Bash, a string as is, an object as
 * one `key: value` line per field (strings unquoted, other values as JSON).
 */
export function inputText(tool: string, input: unknown, truncated = false): string {
  let s: string;
  if (truncated) {
    s = typeof input === "string" ? input : (JSON.stringify(input) ?? "");
    if (!s.endsWith("…")) s += "…";
  } else if (tool === "Bash" && input && typeof input === "object" && typeof (input as any).command === "string") {
    s = (input as any).command;
  } else if (typeof input === "string") {
    s = input;
  } else if (input && typeof input === "object" && !Array.isArray(input)) {
    s = Object.entries(input as Record<string, unknown>)
      .map(([k, v]) => `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`)
      .join("\n");
  } else {
    s = JSON.stringify(input) ?? "";
  }
  return s.length > BODY_MAX ? s.slice(0, BODY_MAX - 1) + "…" : s;
}

/** "42 s", "3 min 5 s", "1 h 2 min". */
export function durationText(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 ? `${m} min ${s % 60} s` : `${m} min`;
  return m % 60 ? `${Math.floor(m / 60)} h ${m % 60} min` : `${Math.floor(m / 60)} h`;
}

/**
 * The notification of a payload, or null when there is none to show (a
 * `resolved` payload only closes the stale one). Anything unreadable gets a
 * plain "open the app" notification: a push must show something.
 */
export function notificationOf(p: unknown): PushNotification | null {
  const base = { icon: ICON, badge: ICON, requireInteraction: false, actions: [] as NotificationAction[] };
  // Read field by field: a payload is checked here, not trusted.
  const x = (p && typeof p === "object" ? p : {}) as Record<string, any>;
  switch (x.kind) {
    case "permission": {
      const tool = typeof x.tool_name === "string" && x.tool_name ? x.tool_name : "A tool";
      const truncated = !!x.input_truncated;
      return {
        title: `${tool} in ${titleOf(x.session_title)}`,
        options: {
          ...base,
          body: inputText(tool, x.input, truncated) + (truncated ? "\n(too long for a notification: open it to see it all)" : ""),
          tag: String(x.request_id ?? "permission"),
          requireInteraction: true,
          // Never approve what could not be shown: a cut input offers Open only.
          actions: truncated || !x.token ? [{ action: "open", title: "Open" }] : [{ action: "allow", title: "Allow" }, { action: "deny", title: "Deny" }],
          data: { ...x, url: safePath(x.url, x.session_id ? `/s/${x.session_id}` : "/") },
        },
      };
    }
    case "turn_ended": {
      const st = turnVerb(x.status);
      const parts = [typeof x.duration_ms === "number" ? `after ${durationText(x.duration_ms)}` : "", typeof x.cost_usd === "number" ? `$${x.cost_usd.toFixed(2)}` : ""].filter(Boolean);
      return {
        title: `Turn ${st} in ${titleOf(x.session_title)}`,
        options: { ...base, body: `The turn ${st}${parts.length ? " " + parts.join(" · ") : ""}.`, tag: `turn:${x.session_id ?? ""}`, data: { ...x, url: safePath(x.url, x.session_id ? `/s/${x.session_id}` : "/") } },
      };
    }
    case "resolved":
      return null;
    case "test":
      return { title: "svc-code", options: { ...base, body: "Test notification: this device gets svc-code's notifications.", tag: "svc-test", data: { kind: "test", url: "/settings?section=notifications" } } };
  }
  return { title: "svc-code", options: { ...base, body: "Something needs your attention.", tag: "svc-other", data: { kind: "other", url: "/" } } };
}

/** How a turn ended, as a verb: "finished", "failed", "interrupted", "ended (…)". */
export function turnVerb(status: unknown): string {
  switch (status) {
    case undefined:
    case "":
    case "success":
      return "finished";
    case "error":
      return "failed";
    case "interrupted":
      return "was interrupted";
    case "process_exited":
      return "ended (the agent's process exited)";
  }
  return `ended (${String(status)})`;
}

/** The count for the app badge a payload carries, or null. */
export function pendingOf(p: unknown): number | null {
  const n = p && typeof p === "object" ? (p as { pending?: unknown }).pending : undefined;
  return typeof n === "number" && Number.isFinite(n) && n >= 0 ? Math.floor(n) : null;
}

/** The short notification shown when an answer sent from a notification did not count, or null when it did. */
export function answerFailure(status: number, body: { error?: string; message?: string } | null, decision: string): { title: string; body: string } | null {
  if (status >= 200 && status < 300) return null;
  const verb = decision === "allow" ? "Allow" : "Deny";
  if (status === 0) return { title: `${verb} not sent`, body: "The server could not be reached. Open svc-code to answer." };
  if (status === 410) return { title: `${verb} not used`, body: "This request was already answered or is no longer pending." };
  if (status === 403) return { title: `${verb} refused`, body: "This notification's answer is no longer valid (expired, used, or answered elsewhere). Open svc-code to see the request." };
  return { title: `${verb} not used`, body: `The server answered ${status}${body?.message ? ": " + body.message : ""}.` };
}
