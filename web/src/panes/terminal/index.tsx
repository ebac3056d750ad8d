// The terminal pane (issue 18 item 1): the session's terminals as tabs (the
// first is the session's own, `<session_id>`, further ones `<session_id>:2`...),
// listed from /api/terminals, each an xterm.js screen on /ws/terminal; close
// one (DELETE /api/terminal/{id}, confirmed), find in it, and on a phone a key
// bar. A region "Terminal" (issue 18 item 9).

import "@xterm/xterm/css/xterm.css";
import "./terminal.css";
import { signal } from "@preact/signals";
import { useEffect, useRef, useState } from "preact/hooks";
import { del, get } from "../../lib/api";
import { sessionInfo } from "../../state/app";
import type { PaneProps } from "../../ui/Panes";
import { nextTerminalId, sessionTerminals, terminalNumber, type TerminalInfo } from "./ids";
import { KeyBar } from "./KeyBar";
import { FindBox } from "./FindBox";
import { TermView, type TermHandle } from "./TermView";

const LIST_POLL_MS = 15000;

export default function TerminalPane({ sessionId, visible }: PaneProps) {
  if (!sessionId) return <p class="muted pad">Open a session to use its terminal.</p>;
  return <Terminals sid={sessionId} visible={visible} />;
}

function Terminals({ sid, visible }: { sid: string; visible: boolean }) {
  const [cwd, setCwd] = useState<string | undefined>(undefined);
  const [ready, setReady] = useState(false);
  const [open, setOpen] = useState<string[]>([]);
  const [active, setActive] = useState<string>(sid);
  const [listErr, setListErr] = useState<string | null>(null);
  const [closing, setClosing] = useState<string | null>(null);
  const [findOpen, setFindOpen] = useState(false);
  const [ctrl] = useState(() => signal(false));
  const handles = useRef(new Map<string, TermHandle>());
  const [, setHandleTick] = useState(0);
  const cwdRef = useRef<string | undefined>(undefined);
  cwdRef.current = cwd;

  // The session's directory (where its first shell starts), then its terminals.
  useEffect(() => {
    let live = true;
    sessionInfo(sid)
      .then((s) => live && setCwd(s.cwd))
      .catch(() => {})
      .finally(() => live && setReady(true));
    return () => {
      live = false;
    };
  }, [sid]);

  const refresh = async (first = false) => {
    try {
      const r = await get<{ terminals: TerminalInfo[] }>("/api/terminals");
      setListErr(null);
      setOpen((cur) => {
        const ids = sessionTerminals(sid, r.terminals ?? [], cur);
        // Opening the pane attaches the session's own terminal (starting its shell if need be).
        return first && !ids.includes(sid) ? sessionTerminals(sid, [], [sid, ...ids]) : ids;
      });
    } catch (e) {
      setListErr((e as Error).message);
      if (first) setOpen((cur) => (cur.length ? cur : [sid]));
    }
  };

  useEffect(() => {
    if (ready) refresh(true);
  }, [ready]);

  useEffect(() => {
    if (!visible || !ready) return;
    refresh();
    const t = setInterval(() => refresh(), LIST_POLL_MS);
    return () => clearInterval(t);
  }, [visible, ready]);

  const shown = open.includes(active) ? active : (open[0] ?? null);

  const addTerminal = () => {
    const id = nextTerminalId(sid, open);
    setOpen(sessionTerminals(sid, [], [...open, id]));
    setActive(id);
  };

  const closeTerminal = async (id: string) => {
    setClosing(null);
    try {
      await del(`/api/terminal/${encodeURIComponent(id)}`);
    } catch (e) {
      // 404: no shell (it exited meanwhile): the tab goes all the same.
      if ((e as { status?: number }).status !== 404) {
        setListErr(`Closing ${label(sid, id)}: ${(e as Error).message}`);
        return;
      }
    }
    setOpen((cur) => cur.filter((x) => x !== id));
  };

  const onHandle = (id: string, h: TermHandle | null) => {
    if (h) handles.current.set(id, h);
    else handles.current.delete(id);
    setHandleTick((n) => n + 1);
  };
  const cur = shown ? (handles.current.get(shown) ?? null) : null;

  return (
    <section class="term-pane" role="region" aria-label="Terminal">
      <div class="term-bar">
        <div class="term-tabs" role="tablist" aria-label="Terminals">
          {open.map((id) => (
            <span key={id} class="term-tab" aria-current={id === shown ? "true" : undefined}>
              <button type="button" role="tab" aria-selected={id === shown} onClick={() => setActive(id)} title={id}>
                {label(sid, id)}
              </button>
              <button type="button" class="term-tab-close" aria-label={`Close ${label(sid, id)}`} onClick={() => setClosing(id)}>
                ×
              </button>
            </span>
          ))}
        </div>
        <button type="button" class="term-btn" onClick={addTerminal} aria-label="New terminal" title="New terminal">
          +
        </button>
        <button type="button" class="term-btn" aria-pressed={findOpen} onClick={() => setFindOpen(!findOpen)} title="Find in the terminal">
          Find
        </button>
      </div>
      {listErr && (
        <p class="term-notice" role="alert">
          {listErr}
        </p>
      )}
      {findOpen && cur?.search && <FindBox search={cur.search} onClose={() => (setFindOpen(false), cur.focus())} />}
      <div class="term-stack">
        {ready &&
          open.map((id) => (
            <TermView key={id} id={id} label={label(sid, id)} cwd={() => cwdRef.current} active={visible && id === shown} ctrl={ctrl} onHandle={onHandle} />
          ))}
        {ready && open.length === 0 && (
          <div class="empty">
            <p>No terminal is open for this session.</p>
            <button type="button" onClick={addTerminal}>
              New terminal
            </button>
          </div>
        )}
      </div>
      {cur && <KeyBar term={cur} ctrl={ctrl} />}
      {closing && <ConfirmClose name={label(sid, closing)} onConfirm={() => closeTerminal(closing)} onCancel={() => setClosing(null)} />}
    </section>
  );
}

function label(sid: string, id: string) {
  return `Terminal ${terminalNumber(sid, id)}`;
}

function ConfirmClose({ name, onConfirm, onCancel }: { name: string; onConfirm: () => void; onCancel: () => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current!;
    if (!d.open) d.showModal?.();
    return () => d.open && d.close();
  }, []);
  return (
    <dialog ref={ref} class="term-confirm" aria-label={`Close ${name}?`} onCancel={(e) => (e.preventDefault(), onCancel())}>
      <p>
        Close {name}? Its shell and every process started in it are ended (hung up); its output is gone.
      </p>
      <div class="term-confirm-actions">
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
        <button type="button" class="danger" onClick={onConfirm}>
          Confirm
        </button>
      </div>
    </dialog>
  );
}
