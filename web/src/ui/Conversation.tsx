// The session view: header with the controls (permission mode, provider and
// lock, agent status, connection), the conversation (pages of blocks, the
// last few rendered, earlier ones on demand), the prompt queue and outbox,
// the pending permission cards, and the composer.

import { useComputed, useSignal, useSignalEffect } from "@preact/signals";
import { memo } from "preact/compat";
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import { del, patch, post, put, q } from "../lib/api";
import { baseName, fmtCost } from "../lib/format";
import { PERMISSION_MODES, type PermissionMode, type Session } from "../protocol/types";
import { applySession, isArchived, navigate, providers, removeSession, route, setArchived } from "../state/app";
import { LiveSession } from "../state/live";
import type { Page } from "../state/session";
import { stopText } from "../state/session";
import type { ConnState } from "../state/socket";
import { BlockView, type BlockActions } from "./Blocks";
import { Composer, type ExecResult } from "./Composer";
import { journalEdits } from "../lib/journal";
import { TurnJournal } from "./TurnChips";
import { PermissionCard, permDomId } from "./Permission";
import { AwayWatch } from "../state/away";
import { AwaySummaryView } from "./AwaySummary";
import { ContinuedFrom, providerLockReason } from "./ContinuedFrom";

/** Pages (of 50 blocks) rendered at first; earlier ones come on demand. */
const FIRST_PAGES = 2;

export function SessionView({ id, visible = true }: { id: string; visible?: boolean }) {
  const live = useMemo(() => new LiveSession(id), [id]);
  useEffect(() => {
    live.open();
    return () => live.close();
  }, [live]);
  useEffect(() => {
    live.shown.value = visible;
  }, [live, visible]);
  return <Conversation live={live} />;
}

function Conversation({ live }: { live: LiveSession }) {
  const s = live.store;
  const [notice, setNotice] = useState<string | null>(null);
  const title = live.session.value?.title || "Untitled session";

  useEffect(() => {
    document.title = `${title} · svc-code`;
  }, [title]);

  const stop = async () => {
    if (!live.send({ type: "stop" })) {
      try {
        const r = await post<{ outcome: string }>(`/api/session/${q(live.id)}/stop`);
        s.apply({ type: "stopped", outcome: r.outcome as any });
      } catch (e) {
        setNotice("Stop failed: " + (e as Error).message);
      }
    }
  };

  const fork = async (line?: number) => {
    try {
      const body = line ? { line } : undefined;
      const r = await post<Session>(`/api/session/${q(live.id)}/fork`, body);
      applySession(r);
      navigate(`/s/${r.session_id}`);
    } catch (e) {
      setNotice("Fork failed: " + (e as Error).message);
    }
  };

  // The turn chips: read once the log is in, again when a turn ends (the
  // result frame ends agent_running) or the journal is edited elsewhere.
  const turns = useMemo(() => new TurnJournal(live.id), [live]);
  const wasRunning = useRef(false);
  useSignalEffect(() => {
    const running = s.agentRunning.value;
    if (live.loading.value) return;
    if (wasRunning.current && !running) turns.turnEnded();
    wasRunning.current = running;
  });
  useSignalEffect(() => {
    journalEdits.value;
    if (!live.loading.value) turns.refresh();
  });
  useEffect(() => () => turns.cancel(), [turns]);

  // The turns that ended while this browser did not show the session.
  const away = useMemo(() => new AwayWatch(live.id, s, live.loading), [live]);
  useEffect(() => away.start(), [away]);

  const actions: BlockActions = useMemo(
    () => ({
      turns,
      fork: (line: number) => fork(line),
      favourite: async (line: number) => {
        try {
          await put(`/api/favorites/prompts/${q(`${live.id}:${line}`)}`, { favorite: true });
          setNotice(`Prompt of line ${line} is a favourite.`);
        } catch (e) {
          setNotice("Favourite failed: " + (e as Error).message);
        }
      },
    }),
    [live],
  );

  if (live.loadError.value) {
    return (
      <div class="empty">
        <p role="alert">{live.loadError.value}</p>
        <button type="button" onClick={() => navigate("/")}>
          Back
        </button>
      </div>
    );
  }

  return (
    <div class="convo">
      <SessionHeader live={live} onFork={() => fork()} onNotice={setNotice} />
      {notice && (
        <div class="banner" role="status">
          {notice}
          <button type="button" class="mini" onClick={() => setNotice(null)} aria-label="Dismiss">
            ×
          </button>
        </div>
      )}
      <ContinuedFrom session={live.session.value} />
      <AwaySummaryView watch={away} sessionId={live.id} />
      <Transcript live={live} actions={actions} />
      <div class="dock">
        <Heartbeat live={live} />
        <StorageStatus live={live} />
        <Pending live={live} />
        <QueueView live={live} />
        <Composer live={live} onStop={stop} onExec={(r: ExecResult) => s.addExec(r)} />
      </div>
    </div>
  );
}

function SessionHeader({ live, onFork, onNotice }: { live: LiveSession; onFork: () => void; onNotice: (s: string) => void }) {
  const s = live.store;
  const sess = live.session.value;
  const [renaming, setRenaming] = useState(false);
  const [menu, setMenu] = useState(false);
  const [modeMsg, setModeMsg] = useState<string | null>(null);
  const pendingMode = useSignal<PermissionMode | null>(null);

  // permission_mode_changed says how a change applied (ours or another tab's).
  useSignalEffect(() => {
    const a = s.modeApplied.value;
    const m = s.mode.value;
    if (a) setModeMsg(`${m}: ${a === "live" ? "applied live" : "applies next turn"}`);
  });

  const setMode = async (mode: PermissionMode) => {
    pendingMode.value = mode;
    setModeMsg(`${mode}: changing…`);
    try {
      const r = await put<{ mode: PermissionMode; applied: "live" | "next_turn" }>(`/api/session/${q(live.id)}/permission-mode`, { mode });
      s.mode.value = r.mode;
      s.modeApplied.value = r.applied;
      setModeMsg(`${r.mode}: ${r.applied === "live" ? "applied live" : "applies next turn"}`);
    } catch (e) {
      setModeMsg(`Mode not changed: ${(e as Error).message}`);
    } finally {
      pendingMode.value = null;
    }
  };

  const provs = providers.value;
  const locked = s.providerLocked.value;
  const provName = provs.find((p) => p.name === s.provider.value)?.display_name ?? s.providerName.value ?? s.provider.value;

  const setProvider = async (name: string) => {
    try {
      const r = await put<Session>(`/api/session/${q(live.id)}/provider`, { provider: name });
      live.session.value = r;
      s.provider.value = r.provider;
      onNotice(`Provider: ${provs.find((p) => p.name === r.provider)?.display_name ?? r.provider}. It applies from the first prompt.`);
      live.socket.reconnect("provider changed");
    } catch (e) {
      onNotice("Provider not changed: " + (e as Error).message);
    }
  };

  const rename = async (t: string) => {
    try {
      const r = await patch<Session>(`/api/session/${q(live.id)}`, { title: t });
      live.session.value = r;
      applySession(r);
      setRenaming(false);
    } catch (e) {
      onNotice("Rename failed: " + (e as Error).message);
    }
  };

  const archived = isArchived(live.id, sess?.archived ?? false);
  const toggleArchived = async () => {
    try {
      const r = await setArchived(live.id, !archived);
      live.session.value = r;
      onNotice(r.archived ? "Archived: hidden from the sidebar (Show archived lists it); the agent is not stopped." : "Unarchived: back in the sidebar.");
    } catch (e) {
      onNotice((archived ? "Unarchive" : "Archive") + " failed: " + (e as Error).message);
    }
  };

  const clear = () => {
    if (!confirm("Clear this session? Its conversation moves to an archived copy, and the next prompt starts afresh.")) return;
    if (!live.send({ type: "clear_session" })) onNotice("Not connected: try again when the connection is back.");
    setMenu(false);
  };

  const remove = async () => {
    if (!confirm("Delete this session and its whole log? This cannot be undone.")) return;
    try {
      await del(`/api/session/${q(live.id)}`);
      removeSession(live.id);
      navigate("/");
    } catch (e) {
      onNotice("Delete failed: " + (e as Error).message);
    }
  };

  return (
    <header class="sesshead">
      <div class="titlerow">
        {renaming ? (
          <form
            class="rename"
            onSubmit={(e) => {
              e.preventDefault();
              rename((e.currentTarget.elements.namedItem("title") as HTMLInputElement).value);
            }}
          >
            <label class="sr-only" for="rename-title">
              Session title
            </label>
            <input id="rename-title" name="title" defaultValue={sess?.title ?? ""} autoFocus maxLength={500} />
            <button type="submit">Save</button>
            <button type="button" onClick={() => setRenaming(false)}>
              Cancel
            </button>
          </form>
        ) : (
          <h1 class="sesstitle" title={sess?.cwd}>
            {sess?.title || "Untitled session"}
            {archived && <span class="tag archtag">archived</span>}
          </h1>
        )}
        <span class="muted cwd" title={s.cwd.value}>
          {baseName(s.cwd.value)}
        </span>
        <div class="menuwrap">
          <button type="button" class="mini" aria-haspopup="menu" aria-expanded={menu} onClick={() => setMenu(!menu)}>
            Session actions
          </button>
          {menu && (
            <div class="menu" role="menu" onClick={() => setMenu(false)}>
              <button role="menuitem" type="button" onClick={() => setRenaming(true)}>
                Rename
              </button>
              <button role="menuitem" type="button" onClick={onFork}>
                Fork session
              </button>
              <button role="menuitem" type="button" onClick={toggleArchived}>
                {archived ? "Unarchive" : "Archive"}
              </button>
              <button role="menuitem" type="button" onClick={clear}>
                Clear session
              </button>
              <button role="menuitem" type="button" class="danger" onClick={remove}>
                Delete session
              </button>
            </div>
          )}
        </div>
      </div>
      <div class="controls">
        <AgentStatus live={live} />
        <ConnectionStatus state={live.socket.state.value} line={s.lastLineSig.value} outbox={live.outbox.items.value.length} onRetry={() => live.socket.retryNow()} />
        <span class="ctl">
          <label for="perm-mode">Permission mode</label>
          <select id="perm-mode" value={pendingMode.value ?? s.mode.value} onChange={(e) => setMode(e.currentTarget.value as PermissionMode)}>
            {PERMISSION_MODES.map((m) => (
              <option key={m} value={m}>
                {m}
              </option>
            ))}
          </select>
          {modeMsg && <span class="modemsg">{modeMsg}</span>}
        </span>
        <span class="ctl">
          {locked || provs.length < 2 ? (
            <span class="provider" title={locked ? providerLockReason(sess) : ""}>
              {provName}
              {locked && <span class="muted"> · locked{sess?.cli_session ? " (resumes a terminal session)" : ""}</span>}
            </span>
          ) : (
            <>
              <label for="sess-provider">Session provider</label>
              <select id="sess-provider" value={s.provider.value} onChange={(e) => setProvider(e.currentTarget.value)}>
                {provs.map((p) => (
                  <option key={p.name} value={p.name}>
                    {p.display_name}
                    {p.available ? "" : " (not installed)"}
                  </option>
                ))}
              </select>
            </>
          )}
        </span>
        {sess && (
          <span class="muted cost">
            {sess.turns} {sess.turns === 1 ? "turn" : "turns"} · {fmtCost(sess.cost_usd)}
          </span>
        )}
      </div>
    </header>
  );
}

function AgentStatus({ live }: { live: LiveSession }) {
  const s = live.store;
  const running = s.agentRunning.value;
  const compacting = s.isCompacting.value;
  const stop = s.stopOutcome.value;
  const ended = s.ended.value;
  let text: string;
  let cls = "idle";
  if (running) {
    text = compacting ? "working · compacting" : "working";
    cls = "working";
  } else if (stop) {
    text = `stopped (${stop})`;
    cls = "stopped";
  } else {
    text = ended ? "idle · agent process ended" : "idle";
  }
  return (
    <span class={`agentstatus ${cls}`} role="status" aria-label="Agent status" title={stop ? stopText(stop) : undefined}>
      <span class="dot" aria-hidden="true" />
      {text}
    </span>
  );
}

export function connText(st: ConnState, line: number, now = Date.now()): string {
  switch (st.kind) {
    case "connected":
      return `connected · line ${line}`;
    case "connecting":
      return "connecting";
    case "reconnecting": {
      const secs = Math.max(0, Math.ceil((st.at - now) / 1000));
      return secs > 0 ? `reconnecting in ${secs} s` : "reconnecting";
    }
    case "offline":
      return "offline";
    case "closed":
      return `disconnected: ${st.why}`;
  }
}

export function ConnectionStatus({ state, line, outbox, onRetry }: { state: ConnState; line: number; outbox: number; onRetry: () => void }) {
  const [, tick] = useState(0);
  useEffect(() => {
    if (state.kind !== "reconnecting") return;
    const t = setInterval(() => tick((x) => x + 1), 1000);
    return () => clearInterval(t);
  }, [state]);
  return (
    <span class={`connstatus ${state.kind}`} role="status" aria-label="Connection">
      <span class="dot" aria-hidden="true" />
      {connText(state, line)}
      {outbox > 0 && ` · ${outbox} to send`}
      {state.kind === "reconnecting" && (
        <button type="button" class="mini" onClick={onRetry}>
          Retry now
        </button>
      )}
    </span>
  );
}

function Heartbeat({ live }: { live: LiveSession }) {
  const hb = live.store.heartbeat.value;
  if (!hb || !live.store.agentRunning.value) return null;
  return <div class="heartbeat">{hb}</div>;
}

function StorageStatus({ live }: { live: LiveSession }) {
  const down = live.store.storageDown.value;
  if (!down) return null;
  return (
    <div class="storage-status" role="status">
      {down}
    </div>
  );
}

function Pending({ live }: { live: LiveSession }) {
  const items = live.store.perms.items.value;
  // Pending cards, and answered ones until dismissed (they say who answered).
  const [dismissed, setDismissed] = useState<Set<string>>(new Set());
  // A link to one request (?perm={request_id}, from a push notification or
  // the inbox): once its card is there, it is scrolled into view, focused and
  // marked; once the replay is over without it, a note says it is gone.
  const r = route.value;
  const target = r.session === live.id && r.pane === "chat" ? new URLSearchParams(r.search).get("perm") : null;
  const synced = live.store.perms.synced.value;
  const [marked, setMarked] = useState<string | null>(null);
  const [gone, setGone] = useState(false);
  useEffect(() => {
    if (!target) return;
    const found = items.some((p) => p.req.request_id === target);
    if (!found && !synced) return;
    if (found) {
      setDismissed((d) => (d.has(target) ? new Set([...d].filter((x) => x !== target)) : d));
      setMarked(target);
    }
    setGone(!found);
    // The link did its job: a reload does not jump again.
    navigate(location.pathname, true);
  }, [target, items, synced]);
  useEffect(() => {
    if (!marked) return;
    const el = document.getElementById(permDomId(marked));
    el?.scrollIntoView({ block: "nearest" });
    el?.focus({ preventScroll: true });
  }, [marked]);
  // An answered card says who answered for a while, then goes; an expired
  // one stays until dismissed (the user's answer was not used).
  const answered = items.filter((p) => p.status === "answered" || p.status === "retired").map((p) => p.req.request_id).join(",");
  useEffect(() => {
    if (!answered) return;
    const ids = answered.split(",");
    const t = setTimeout(() => setDismissed((d) => new Set([...d, ...ids])), 12000);
    return () => clearTimeout(t);
  }, [answered]);
  const shown = items.filter((p) => !dismissed.has(p.req.request_id));
  if (shown.length === 0 && !gone) return null;
  return (
    <div class="perms">
      {gone && (
        <p class="banner" role="status">
          The permission request you opened is no longer pending (answered, expired or retired).
          <button type="button" class="mini" onClick={() => setGone(false)} aria-label="Dismiss">
            ×
          </button>
        </p>
      )}
      {shown.map((p) => (
        <div key={p.req.request_id} class={`permwrap${marked === p.req.request_id ? " perm-target" : ""}`}>
          <PermissionCard
            p={p}
            h={{
              allow: (updated, suggestion_index) => live.answer(p.req.request_id, { behavior: "allow", ...(updated !== undefined ? { updated_input: updated as Record<string, unknown> } : {}), ...(suggestion_index !== undefined ? { suggestion_index } : {}) }),
              deny: (reason) => live.answer(p.req.request_id, { behavior: "deny", ...(reason.trim() ? { message: reason.trim() } : {}) }),
              answers: (a) => live.toolAnswer(p.req.request_id, a),
            }}
          />
          {p.status !== "pending" && p.status !== "sending" && (
            <button type="button" class="mini dismiss" onClick={() => setDismissed(new Set([...dismissed, p.req.request_id]))}>
              Dismiss
            </button>
          )}
        </div>
      ))}
    </div>
  );
}

function QueueView({ live }: { live: LiveSession }) {
  const queue = live.store.queue.value;
  const out = live.outbox.items.value;
  if (queue.length === 0 && out.length === 0) return null;
  return (
    <div class="queue">
      {out.length > 0 && (
        <ul class="plain" aria-label="Waiting to send">
          {out.map((it) => (
            <li class="qitem" key={it.id}>
              <span class="tag">{it.state === "waiting" ? "waiting for the connection" : "sent, not yet confirmed"}</span>
              <span class="qtext">{it.content}</span>
              {it.state === "waiting" && (
                <button type="button" class="mini" onClick={() => live.outbox.remove(it.id)}>
                  Cancel
                </button>
              )}
            </li>
          ))}
        </ul>
      )}
      {queue.length > 0 && (
        <ul class="plain" aria-label="Queued prompts">
          {queue.map((it, i) => (
            <li class="qitem" key={it.queue_id}>
              <span class="tag">queued {i + 1}</span>
              <span class="qtext" title={it.content}>
                {it.content}
              </span>
              <button type="button" class="mini" onClick={() => live.send({ type: "cancel_queued", queue_id: it.queue_id })}>
                Cancel
              </button>
              <button type="button" class="mini" title="Stop the running turn and send this prompt now" onClick={() => live.send({ type: "send_now", queue_id: it.queue_id })}>
                Send now
              </button>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

const PageView = memo(function PageView({ page, actions }: { page: Page; actions: BlockActions }) {
  const blocks = page.blocks.value;
  return (
    <section class="page">
      {blocks.map((b) => (
        <BlockView key={b.key} b={b} actions={actions} />
      ))}
    </section>
  );
});

function Transcript({ live, actions }: { live: LiveSession; actions: BlockActions }) {
  const s = live.store;
  const pages = s.pages.value;
  const [shown, setShown] = useState(FIRST_PAGES);
  const scroller = useRef<HTMLDivElement>(null);
  const inner = useRef<HTMLDivElement>(null);
  const atBottom = useRef(true);
  const first = Math.max(0, pages.length - shown);
  const hidden = useComputed(() => s.pages.value.slice(0, Math.max(0, s.pages.value.length - shown)).reduce((n, p) => n + p.blocks.value.length, 0));

  // Stick to the bottom while new content arrives, unless the user scrolled up.
  useLayoutEffect(() => {
    const el = scroller.current;
    const body = inner.current;
    if (!el || !body) return;
    // Only the user unsticks the view (wheel, touch, keys, scrollbar): layout
    // shifts of content-visibility and of late highlighting do not.
    let intent = 0;
    const mark = () => (intent = Date.now());
    const onScroll = () => {
      if (Date.now() - intent < 1000) atBottom.current = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
    };
    el.addEventListener("scroll", onScroll, { passive: true });
    for (const ev of ["wheel", "touchmove", "keydown", "pointerdown"]) el.addEventListener(ev, mark, { passive: true });
    const ro = new ResizeObserver(() => {
      if (atBottom.current) el.scrollTop = el.scrollHeight;
    });
    ro.observe(body);
    ro.observe(el); // the dock growing (a card, the palette) shrinks the view
    el.scrollTop = el.scrollHeight;
    return () => {
      el.removeEventListener("scroll", onScroll);
      for (const ev of ["wheel", "touchmove", "keydown", "pointerdown"]) el.removeEventListener(ev, mark);
      ro.disconnect();
    };
  }, []);

  // ?line=N (a link from the journal to the prompt of a turn): show that line.
  const loaded = !live.loading.value;
  useEffect(() => {
    const line = Number(new URLSearchParams(location.search).get("line"));
    if (!loaded || !line) return;
    setShown(Number.MAX_SAFE_INTEGER);
    requestAnimationFrame(() => {
      const el = scroller.current?.querySelector<HTMLElement>(`[data-sid="${live.id}:${line}"]`);
      if (!el) return;
      atBottom.current = false;
      el.scrollIntoView({ block: "center" });
      el.focus({ preventScroll: true });
    });
  }, [loaded, location.search]);

  const showEarlier = () => {
    const el = scroller.current;
    const before = el ? el.scrollHeight - el.scrollTop : 0;
    setShown((n) => n + FIRST_PAGES);
    requestAnimationFrame(() => {
      if (el) el.scrollTop = el.scrollHeight - before;
    });
  };

  return (
    <div class="transcript" ref={scroller} tabIndex={0} aria-label="Conversation">
      <div ref={inner} class="transcript-inner">
        {live.loading.value && <p class="muted center">Loading the conversation…</p>}
        {first > 0 && (
          <button type="button" class="earlier" onClick={showEarlier}>
            Show earlier messages ({hidden.value} more)
          </button>
        )}
        {!live.loading.value && pages.length === 0 && <p class="muted center">No messages yet. Write the first prompt below.</p>}
        {pages.slice(first).map((p) => (
          <PageView key={p.key} page={p} actions={actions} />
        ))}
      </div>
    </div>
  );
}

