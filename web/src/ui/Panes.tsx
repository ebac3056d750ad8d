// The panes around the conversation: a navigation "Panes" with a link per
// pane, and the host that shows the open one. A pane's code is loaded the
// first time it is opened (the first load stays the conversation's), and a
// pane once opened stays mounted while hidden, so its sockets, terminals and
// scroll positions survive switching: the host keeps the last MAX_KEPT
// (pane, session) instances and drops the least recently shown beyond that.

import type { ComponentType } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { GLOBAL_PANES, navigate, paneSession, PANE_LABELS, panePath, route, SESSION_PANES, type PaneName } from "../state/app";
import { SessionView } from "./Conversation";

/** What every pane gets: its session (session panes; null for the others) and whether it is shown. */
export interface PaneProps {
  sessionId: string | null;
  visible: boolean;
}

type Loader = () => Promise<{ default: ComponentType<PaneProps> }>;

// One dynamic import per pane: Vite makes each a chunk of its own.
const loaders: Record<Exclude<PaneName, "chat">, Loader> = {
  terminal: () => import("../panes/terminal"),
  files: () => import("../panes/files"),
  changes: () => import("../panes/changes"),
  git: () => import("../panes/git"),
  costs: () => import("../panes/costs"),
  sql: () => import("../panes/sql"),
  settings: () => import("../panes/settings"),
};

const loaded = new Map<PaneName, ComponentType<PaneProps>>();
const loading = new Map<PaneName, Promise<ComponentType<PaneProps>>>();

/** Loads pane's code once (the palette and links call it ahead on hover). */
export function loadPane(pane: PaneName): Promise<ComponentType<PaneProps>> {
  if (pane === "chat") return Promise.resolve(ChatPane);
  const have = loaded.get(pane);
  if (have) return Promise.resolve(have);
  let p = loading.get(pane);
  if (!p) {
    p = loaders[pane]().then(
      (m) => {
        loaded.set(pane, m.default);
        return m.default;
      },
      (e) => {
        loading.delete(pane); // a later attempt tries again
        throw e;
      },
    );
    loading.set(pane, p);
  }
  return p;
}

function ChatPane({ sessionId, visible }: PaneProps) {
  return sessionId ? <SessionView id={sessionId} visible={visible} /> : null;
}

/** The navigation between panes: a link per pane, the open one marked current. */
export function PaneNav() {
  const r = route.value;
  const cur = r.view === "session" || r.view === "pane" ? r.pane : null;
  const sess = paneSession();
  const nav = useRef<HTMLElement>(null);
  // On a phone the links scroll sideways: keep the open one in sight.
  useEffect(() => {
    nav.current?.querySelector<HTMLElement>('[aria-current="page"]')?.scrollIntoView({ block: "nearest", inline: "nearest" });
  }, [cur]);
  return (
    <nav class="panenav" aria-label="Panes" ref={nav}>
      {[...SESSION_PANES, ...GLOBAL_PANES].map((p) => {
        const href = panePath(p, sess);
        const label = PANE_LABELS[p];
        if (!href)
          return (
            <a key={p} class="pane-link" aria-disabled="true" title="Open a session first" href="/new" onClick={(e) => (e.preventDefault(), navigate("/new"))}>
              {label}
            </a>
          );
        return (
          <a
            key={p}
            class="pane-link"
            href={href}
            aria-current={cur === p ? "page" : undefined}
            onMouseEnter={() => loadPane(p).catch(() => {})}
            onFocus={() => loadPane(p).catch(() => {})}
            onClick={(e) => {
              if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
              e.preventDefault();
              navigate(href);
            }}
          >
            {label}
          </a>
        );
      })}
    </nav>
  );
}

const MAX_KEPT = 8;

interface Kept {
  key: string;
  pane: PaneName;
  session: string | null;
}

/** Shows the routed pane and keeps the recently shown ones mounted, hidden. */
export function PaneHost() {
  const r = route.value;
  const active: Kept | null =
    r.view === "session" && r.session ? { key: `${r.pane}:${r.session}`, pane: r.pane, session: r.session } : r.view === "pane" ? { key: r.pane, pane: r.pane, session: null } : null;
  const kept = useRef<Kept[]>([]);
  if (active) {
    // Most recent last; the chat of a session is cheap to rebuild, the others are not.
    // A hidden chat holds a socket and a whole log: only the open session's is kept.
    kept.current = [...kept.current.filter((k) => k.key !== active.key && (k.pane !== "chat" || k.session === r.session)), active];
    if (kept.current.length > MAX_KEPT) kept.current = kept.current.slice(kept.current.length - MAX_KEPT);
  }
  return (
    <>
      {kept.current.map((k) => (
        <div key={k.key} class={`panebox pane-${k.pane}`} hidden={k.key !== active?.key}>
          <PaneSlot pane={k.pane} sessionId={k.session} visible={k.key === active?.key} />
        </div>
      ))}
    </>
  );
}

function PaneSlot({ pane, sessionId, visible }: { pane: PaneName; sessionId: string | null; visible: boolean }) {
  const [C, setC] = useState<ComponentType<PaneProps> | null>(() => (pane === "chat" ? ChatPane : (loaded.get(pane) ?? null)));
  const [err, setErr] = useState<string | null>(null);
  const [attempt, setAttempt] = useState(0);
  useEffect(() => {
    if (C) return;
    let live = true;
    loadPane(pane).then(
      (c) => live && setC(() => c),
      (e) => live && setErr(`The ${PANE_LABELS[pane]} pane could not be loaded: ${(e as Error).message}`),
    );
    return () => {
      live = false;
    };
  }, [pane, attempt]);
  if (err)
    return (
      <div class="empty">
        <p role="alert">{err}</p>
        <button type="button" onClick={() => (setErr(null), setAttempt(attempt + 1))}>
          Try again
        </button>
      </div>
    );
  if (!C)
    return (
      <p class="muted pad" role="status">
        Loading {PANE_LABELS[pane]}…
      </p>
    );
  return <C sessionId={sessionId} visible={visible} />;
}
