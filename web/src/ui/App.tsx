// The layout: a top bar (sessions menu on phones, the inbox, the theme
// switch), the sidebar (a drawer on phones, hidden not unmounted), and the
// open view.

import { signal } from "@preact/signals";
import { useEffect, useState } from "preact/hooks";
import { signOut } from "../lib/signout";
import { baseName } from "../lib/format";
import { paletteKey } from "../lib/shortcuts";
import { drawerOpen, helpOpen, inboxOpen, navigate, paletteOpen, pendingAll, pendingCount, route, sessions, theme } from "../state/app";
import type { PendingPermission, SessionSummary } from "../protocol/types";
import { answerRemote } from "../state/remote";
import { CliListLazy, CliSessionLazy } from "./CliLazy";
import { NewSession } from "./NewSession";
import { PaneHost, PaneNav } from "./Panes";
import { PermInput } from "./Permission";
import { Sidebar } from "./Sidebar";

export function App() {
  const r = route.value;
  // The drawer takes the focus when it opens and gives it back when it closes.
  useEffect(() => {
    if (drawerOpen.value) document.querySelector<HTMLElement>("#sessions-drawer .newbtn")?.focus();
    else if (document.activeElement?.closest("#sessions-drawer") && matchMedia("(max-width: 800px)").matches) document.querySelector<HTMLElement>(".drawerbtn")?.focus();
  }, [drawerOpen.value]);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape") {
        drawerOpen.value = false;
        inboxOpen.value = false;
      }
      if (paletteKey(e, (e.target as Element | null)?.closest?.(".xterm") != null)) {
        e.preventDefault();
        paletteOpen.value = !paletteOpen.peek();
        return;
      }
      if (e.key === "?" && !e.ctrlKey && !e.metaKey && !e.altKey && !typing(e.target)) {
        e.preventDefault();
        helpOpen.value = true;
      }
    };
    addEventListener("keydown", onKey);
    return () => removeEventListener("keydown", onKey);
  }, []);
  return (
    <div class={`app ${drawerOpen.value ? "drawer-open" : ""}`}>
      <TopBar />
      <div class="body">
        <div class="side" id="sessions-drawer">
          <Sidebar />
        </div>
        {drawerOpen.value && <div class="scrim" onClick={() => (drawerOpen.value = false)} aria-hidden="true" />}
        <main class="main" id="main">
          <PaneNav />
          {r.view === "new" ? <NewSession /> : r.view === "home" ? <Home /> : r.view === "cli" ? r.cli ? <CliSessionLazy cliRef={r.cli} /> : <CliListLazy page /> : null}
          <PaneHost />
        </main>
      </div>
      {inboxOpen.value && <Inbox />}
      {(paletteOpen.value || helpOpen.value) && <Overlays />}
    </div>
  );
}

/** Whether a key event's target takes text (then "?" is a character, not the shortcuts sheet). */
function typing(t: EventTarget | null): boolean {
  const el = t as HTMLElement | null;
  if (!el || !el.closest) return false;
  return !!el.closest("input, textarea, select, [contenteditable=''], [contenteditable='true'], .xterm, .cm-editor");
}

// The palette and the shortcuts sheet: their code loads the first time one opens.
let overlays: Promise<typeof import("./Palette")> | null = null;
function Overlays() {
  const [m, setM] = useState<typeof import("./Palette") | null>(null);
  const [err, setErr] = useState<string | null>(null);
  useEffect(() => {
    overlays ??= import("./Palette");
    overlays.then(setM, (e) => {
      overlays = null;
      setErr((e as Error).message);
    });
  }, []);
  if (err)
    return (
      <p class="toast" role="alert">
        The palette could not be loaded: {err}
      </p>
    );
  if (!m) return null;
  return (
    <>
      {paletteOpen.value && <m.Palette />}
      {helpOpen.value && <m.HelpSheet />}
    </>
  );
}

function TopBar() {
  const n = pendingCount.value;
  return (
    <header class="topbar">
      <button type="button" class="iconbtn drawerbtn" aria-label="Sessions menu" aria-expanded={drawerOpen.value} aria-controls="sessions-drawer" onClick={() => (drawerOpen.value = !drawerOpen.value)}>
        ☰
      </button>
      <a class="brand" href="/" onClick={(e) => (e.preventDefault(), navigate("/"))}>
        svc-code
      </a>
      <span class="spacer" />
      <button type="button" class={`iconbtn inboxbtn ${n ? "has" : ""}`} aria-label="Pending permissions" aria-describedby="pending-count" aria-expanded={inboxOpen.value} onClick={() => (inboxOpen.value = !inboxOpen.value)}>
        <span aria-hidden="true">⚑</span>
        <span id="pending-count" class="badge">
          {n}
          <span class="sr-only"> pending</span>
        </span>
      </button>
      <label class="sr-only" for="theme">
        Theme
      </label>
      <select id="theme" class="themesel" value={theme.value} onChange={(e) => (theme.value = e.currentTarget.value as any)}>
        <option value="system">Auto</option>
        <option value="light">Light</option>
        <option value="dark">Dark</option>
      </select>
      <form method="post" action="/api/logout" class="logout" onSubmit={(e) => (e.preventDefault(), void signOut())}>
        <button type="submit" class="mini">
          Sign out
        </button>
      </form>
    </header>
  );
}

// What the last answer from the inbox did (its card leaves the list at once).
const inboxNote = signal<string | null>(null);

function Inbox() {
  const items = pendingAll.value;
  const byId = new Map(sessions.value.map((s) => [s.session_id, s]));
  return (
    <div class="inbox" role="dialog" aria-label="Pending permission requests">
      <div class="panelhead">
        <strong>Pending permissions ({items.length})</strong>
        <button type="button" class="mini" onClick={() => (inboxOpen.value = false)}>
          Close
        </button>
      </div>
      <div class="inboxbody">
        {inboxNote.value && (
          <p class="pad" role="status">
            {inboxNote.value}
          </p>
        )}
        {items.length === 0 && <p class="muted pad">Nothing waiting for you.</p>}
        <ul class="plain">
          {items.map((p) => (
            <InboxItem key={p.session_id + p.request_id} p={p} s={byId.get(p.session_id)} />
          ))}
        </ul>
      </div>
    </div>
  );
}

function InboxItem({ p, s }: { p: PendingPermission; s?: SessionSummary }) {
  const [busy, setBusy] = useState(false);
  const [msg, setMsg] = useState<string | null>(null);
  const here = route.value.session === p.session_id && route.value.pane === "chat";
  const open = () => {
    inboxOpen.value = false;
    navigate(`/s/${p.session_id}?perm=${encodeURIComponent(p.request_id)}`);
  };
  const answer = async (behavior: "allow" | "deny") => {
    setBusy(true);
    const r = await answerRemote(p.session_id, s?.last_line ?? 0, { type: "permission_response", request_id: p.request_id, behavior });
    setBusy(false);
    const what = `${p.tool_name} in ${s?.title || "Untitled session"}`;
    inboxNote.value = r.ok ? `${behavior === "allow" ? "Allowed" : "Denied"}: ${what}` : null;
    setMsg(r.ok ? (behavior === "allow" ? "Allowed" : "Denied") : `Not answered: ${r.reason}`);
  };
  return (
    <li class="inboxitem">
      <div>
        <strong>{p.tool_name}</strong> in <span>{s?.title || "Untitled session"}</span> <span class="muted">({baseName(s?.cwd ?? "")})</span>
      </div>
      <PermInput tool={p.tool_name} input={p.input} />
      {msg && <p role="status">{msg}</p>}
      <div class="row">
        {here ? (
          <button type="button" onClick={() => (inboxOpen.value = false)}>
            Answer on its card
          </button>
        ) : (
          <>
            <button type="button" class="primary" disabled={busy} onClick={() => answer("allow")}>
              Allow here
            </button>
            <button type="button" class="danger" disabled={busy} onClick={() => answer("deny")}>
              Deny here
            </button>
            <a class="button" href={`/s/${p.session_id}?perm=${encodeURIComponent(p.request_id)}`} onClick={(e) => (e.preventDefault(), open())}>
              Open to edit or answer
            </a>
          </>
        )}
      </div>
    </li>
  );
}

function Home() {
  const list = sessions.value;
  return (
    <div class="home">
      <h1>svc-code</h1>
      <p>Run, watch, steer and approve coding agents.</p>
      <div class="row homeactions">
        <button type="button" class="primary big" onClick={() => navigate("/new")}>
          Create a session
        </button>
        <a class="button big" href="/cli" onClick={(e) => (e.preventDefault(), navigate("/cli"))}>
          Sessions run in a terminal
        </a>
      </div>
      {list.length > 0 && (
        <>
          <h2>Recent</h2>
          <ul class="plain recent">
            {list.slice(0, 8).map((s) => (
              <li key={s.session_id}>
                <a href={`/s/${s.session_id}`} onClick={(e) => (e.preventDefault(), navigate(`/s/${s.session_id}`))}>
                  {s.title || "Untitled session"}
                </a>{" "}
                <span class="muted">{baseName(s.cwd)}</span>
              </li>
            ))}
          </ul>
        </>
      )}
    </div>
  );
}
