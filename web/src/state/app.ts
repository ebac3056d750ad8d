// App-wide state: the session list and the inbox (from the events socket,
// or from /api/welcome while it is not there), the open session, providers,
// theme and settings.

import { computed, effect, signal } from "@preact/signals";
import { get, patch, wsURL } from "../lib/api";
import type { EventFrame, PendingPermission, Provider, Session, SessionSummary } from "../protocol/types";
import type { PatchSessionRequest, SessionList } from "../protocol/types.gen";
import { fileSession } from "./sidebar";
import { ReconnectingSocket } from "./socket";

export const sessions = signal<SessionSummary[]>([]);
export const sessionsError = signal<string | null>(null);
export const pendingAll = signal<PendingPermission[]>([]);
/** Whether the events socket serves the list (else /api/welcome is polled). */
export const eventsLive = signal(false);
export const providers = signal<Provider[]>([]);
export const favourites = signal<Set<string>>(new Set());
/** The archived sessions, read while the sidebar shows them ("Show archived"). */
export const archivedSessions = signal<SessionSummary[]>([]);
export const showArchived = signal(false);
export const archivedError = signal<string | null>(null);

/** The panes of the app: five belong to a session, three to none. */
export type PaneName = "chat" | "terminal" | "files" | "changes" | "git" | "costs" | "sql" | "settings";
export const SESSION_PANES: PaneName[] = ["chat", "terminal", "files", "changes", "git"];
export const GLOBAL_PANES: PaneName[] = ["costs", "sql", "settings"];
export const PANE_LABELS: Record<PaneName, string> = {
  chat: "Chat",
  terminal: "Terminal",
  files: "Files",
  changes: "Changes",
  git: "Git",
  costs: "Costs",
  sql: "SQL",
  settings: "Settings",
};

/** A session started in a terminal (Claude Code or Codex), read-only at /cli/{provider}/{id}. */
export interface CliRef {
  provider: "claude" | "codex";
  id: string;
}

export interface Route {
  /** The open session (session panes), or null. */
  session: string | null;
  /** "cli": the list of terminal sessions (/cli), or one of them (cli set). */
  view: "session" | "new" | "home" | "pane" | "cli";
  /** The pane shown: a session's pane when view is "session", a global one when "pane". */
  pane: PaneName;
  /** The query string ("" or "?a=b"): a pane's deep link (a file and line, a turn, a section). */
  search: string;
  /** With view "cli": the terminal session shown, or undefined for the list. */
  cli?: CliRef;
}

export const route = signal<Route>(parseRoute(location.pathname, location.search));
/** The session the session panes open when no session is in the path (the last one seen). */
export const lastSession = signal<string | null>(route.peek().session);

export function parseRoute(path: string, search = ""): Route {
  let m = /^\/s\/([A-Z2-7]{10,40})(?:\/(terminal|files|changes|git))?\/?$/.exec(path);
  if (m) return { session: m[1], view: "session", pane: (m[2] as PaneName) ?? "chat", search };
  m = /^\/(costs|sql|settings)\/?$/.exec(path);
  if (m) return { session: null, view: "pane", pane: m[1] as PaneName, search };
  m = /^\/cli(?:\/(claude|codex)\/([A-Za-z0-9_-][A-Za-z0-9._-]{0,199}))?\/?$/.exec(path);
  if (m) return { session: null, view: "cli", pane: "chat", search, ...(m[1] ? { cli: { provider: m[1] as CliRef["provider"], id: m[2] } } : {}) };
  if (path === "/new") return { session: null, view: "new", pane: "chat", search };
  return { session: null, view: "home", pane: "chat", search };
}

/** The session the session panes open from a global pane: the last one seen, else the most recent. */
export function paneSession(): string | null {
  return route.value.session ?? lastSession.value ?? sessions.value[0]?.session_id ?? null;
}

/** The path of a pane: a session pane of session (or of the last or most recent one), or a global pane. */
export function panePath(pane: PaneName, session: string | null = paneSession()): string | null {
  if (GLOBAL_PANES.includes(pane)) return "/" + pane;
  if (!session) return null;
  return pane === "chat" ? `/s/${session}` : `/s/${session}/${pane}`;
}

function setRoute(path: string, search: string) {
  const r = parseRoute(path, search);
  route.value = r;
  if (r.session) lastSession.value = r.session;
  if (r.view === "cli") sidebarTab.value = "cli";
}

/** Goes to path (pushState, or replaceState with replace); the query string is kept as given. */
export function navigate(path: string, replace = false) {
  if (location.pathname + location.search + location.hash !== path) {
    if (replace) history.replaceState(null, "", path);
    else history.pushState(null, "", path);
  }
  setRoute(location.pathname, location.search);
  drawerOpen.value = false;
}
addEventListener("popstate", () => setRoute(location.pathname, location.search));

/** The command palette (Ctrl/⌘+K) and the shortcuts sheet (?). */
export const paletteOpen = signal(false);
export const helpOpen = signal(false);

export const drawerOpen = signal(false);
export const inboxOpen = signal(false);

// Settings kept in this browser.
function stored<T>(key: string, def: T) {
  let v = def;
  try {
    const s = localStorage.getItem(key);
    if (s !== null) v = JSON.parse(s);
  } catch {
    /* default */
  }
  const sig = signal<T>(v);
  effect(() => {
    try {
      localStorage.setItem(key, JSON.stringify(sig.value));
    } catch {
      /* private mode */
    }
  });
  return sig;
}
export const theme = stored<"system" | "light" | "dark">("svc-theme", "system");
export const enterSends = stored<boolean>("svc-enter-sends", true);
/** The sidebar's tab: svc-code's sessions, or those run in a terminal. */
export const sidebarTab = stored<"svc" | "cli">("svc-sidebar-tab", "svc");
if (route.peek().view === "cli") sidebarTab.value = "cli";

effect(() => {
  const t = theme.value;
  const root = document.documentElement;
  if (t === "system") root.removeAttribute("data-theme");
  else root.setAttribute("data-theme", t);
  const dark = t === "dark" || (t === "system" && matchMedia("(prefers-color-scheme: dark)").matches);
  document.querySelector('meta[name="theme-color"]')?.setAttribute("content", dark ? "#111418" : "#f6f7f9");
});

export const pendingCount = computed(() => pendingAll.value.length);

export function upsertSession(s: SessionSummary) {
  const list = sessions.peek();
  const i = list.findIndex((x) => x.session_id === s.session_id);
  const merged = i >= 0 ? { ...list[i], ...s } : s;
  const next = i >= 0 ? list.slice() : [merged, ...list];
  if (i >= 0) next[i] = merged;
  next.sort((a, b) => (b.updated_at ?? "").localeCompare(a.updated_at ?? ""));
  sessions.value = next;
}

/**
 * Files a changed session (an event, or a route's answer) into the live or
 * the archived list by its archived flag. Its pending requests stay: an
 * archived session's agent goes on running.
 */
export function applySession(s: SessionSummary) {
  const next = fileSession(sessions.peek(), archivedSessions.peek(), s);
  sessions.value = next.live;
  archivedSessions.value = next.archived;
}

/** Whether session id is archived, as the lists know it (else fallback). */
export function isArchived(id: string, fallback: boolean): boolean {
  if (sessions.value.some((s) => s.session_id === id)) return false;
  if (archivedSessions.value.some((s) => s.session_id === id)) return true;
  return fallback;
}

/** Archives or unarchives session id; the answer updates the lists. */
export async function setArchived(id: string, archived: boolean): Promise<Session> {
  const body: PatchSessionRequest = { archived };
  const r = await patch<Session>(`/api/session/${encodeURIComponent(id)}`, body);
  applySession(r);
  return r;
}

/** Reads the archived sessions (the newest 200). */
export async function loadArchived() {
  try {
    const r = await get<SessionList>("/api/sessions?archived=true&limit=200");
    archivedSessions.value = r.sessions;
    archivedError.value = null;
  } catch (e) {
    archivedError.value = (e as Error).message;
  }
}

export function removeSession(id: string) {
  sessions.value = sessions.peek().filter((s) => s.session_id !== id);
  archivedSessions.value = archivedSessions.peek().filter((s) => s.session_id !== id);
  pendingAll.value = pendingAll.peek().filter((p) => p.session_id !== id);
  if (lastSession.peek() === id) lastSession.value = null;
}

/**
 * The session id's record: from the lists when they hold it, else read once
 * from /api/session/{id} (a pane opened by its path before the list came).
 */
export function sessionInfo(id: string): Promise<SessionSummary> {
  const have = sessions.peek().find((s) => s.session_id === id) ?? archivedSessions.peek().find((s) => s.session_id === id);
  if (have) return Promise.resolve(have);
  return get<SessionSummary>(`/api/session/${encodeURIComponent(id)}`);
}

/** Replaces the pending requests of one session (from its /chat socket). */
export function setSessionPending(id: string, list: PendingPermission[]) {
  if (eventsLive.peek()) return; // the events socket is the source of truth
  pendingAll.value = [...pendingAll.peek().filter((p) => p.session_id !== id), ...list];
}

export async function loadProviders() {
  try {
    const r = await get<{ providers: Provider[] }>("/api/providers");
    providers.value = r.providers;
  } catch {
    /* the form shows the error when it needs them */
  }
}

export async function loadFavourites() {
  try {
    const r = await get<{ sessions: { session_id: string }[] }>("/api/favorites");
    favourites.value = new Set(r.sessions.map((s) => s.session_id));
  } catch {
    /* not fatal */
  }
}

/** The sidebar's list over HTTP (used until the events socket answers). */
export async function loadWelcome() {
  try {
    const r = await get<{ sessions: any[] }>("/api/welcome/sessions?limit=100");
    const list: SessionSummary[] = r.sessions.map((s) => ({ ...s, cwd: s.cwd ?? s.project }));
    if (!eventsLive.peek()) {
      // Keep live fields we already know (agent_running, pending counts).
      const old = new Map(sessions.peek().map((s) => [s.session_id, s]));
      sessions.value = list.map((s) => ({ ...old.get(s.session_id), ...s }));
    }
    sessionsError.value = null;
  } catch (e) {
    sessionsError.value = (e as Error).message;
  }
}

let events: ReconnectingSocket | null = null;
let poll: ReturnType<typeof setInterval> | null = null;

/** Starts the events socket; while it fails, /api/welcome is polled. */
export function startEvents() {
  loadWelcome();
  poll = setInterval(() => {
    if (!eventsLive.peek() && document.visibilityState === "visible") loadWelcome();
  }, 15000);
  events = new ReconnectingSocket({
    url: () => wsURL("/api/events"),
    onFrame: (f: EventFrame) => applyEvent(f),
    onOpen: () => {
      /* the snapshot follows */
    },
  });
  events.state.subscribe((s) => {
    if (s.kind !== "connected") eventsLive.value = false;
  });
  events.start();
  const wake = () => events?.wake();
  document.addEventListener("visibilitychange", () => document.visibilityState === "visible" && wake());
  addEventListener("pageshow", wake);
  addEventListener("focus", wake);
  addEventListener("online", wake);
  return () => {
    events?.stop();
    if (poll) clearInterval(poll);
  };
}

export function applyEvent(f: EventFrame) {
  switch (f.type) {
    case "snapshot":
      eventsLive.value = true;
      sessions.value = [...f.sessions].filter((s) => !s.archived).sort((a, b) => (b.updated_at ?? "").localeCompare(a.updated_at ?? ""));
      pendingAll.value = f.pending ?? [];
      return;
    case "session":
      applySession(f.session);
      return;
    case "session_deleted":
      removeSession(f.session_id);
      return;
    case "permission_request":
      if (!pendingAll.peek().some((p) => p.request_id === f.request_id && p.session_id === f.session_id))
        pendingAll.value = [...pendingAll.peek(), { session_id: f.session_id, request_id: f.request_id, tool_name: f.tool_name, input: f.input, suggestions: f.suggestions }];
      return;
    case "permission_resolved":
      pendingAll.value = pendingAll.peek().filter((p) => !(p.request_id === f.request_id && p.session_id === f.session_id));
      return;
  }
}
