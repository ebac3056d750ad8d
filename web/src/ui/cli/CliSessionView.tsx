// One terminal session, read-only: its records rendered with the live
// session's blocks, the newest first, earlier ones loaded as the user scrolls
// up, lines the CLI appends shown as they come; and "Continue here", which
// starts an svc-code session resuming it. No composer: the file belongs to
// the CLI that writes it.

import { useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import { baseName, fmtAgo, fmtBytes } from "../../lib/format";
import { navigate, sidebarTab, type CliRef } from "../../state/app";
import { CliView, cliProviderLabel, type FollowState } from "../../state/cli";
import type { SessionStore } from "../../state/session";
import { BlockView, type BlockActions } from "../Blocks";

const NO_ACTIONS: BlockActions = {};

export function CliSessionView({ cliRef }: { cliRef: CliRef }) {
  const view = useMemo(() => new CliView(cliRef), [cliRef.provider, cliRef.id]);
  useEffect(() => {
    view.open();
    return () => view.close();
  }, [view]);
  const info = view.info.value;
  const title = info?.title || "(no prompt yet)";
  useEffect(() => {
    document.title = `${title} · terminal session · svc-code`;
  }, [title]);

  if (view.error.value)
    return (
      <div class="empty">
        <p role="alert">{view.error.value}</p>
        <button type="button" onClick={() => navigate("/cli")}>
          All terminal sessions
        </button>
      </div>
    );

  return (
    <div class="convo clisession">
      <header class="sesshead">
        <div class="titlerow">
          <h1 class="sesstitle" title={info?.title}>
            {title}
          </h1>
          <span class="tag readonly">read-only</span>
        </div>
        <div class="controls climetaline">
          <span class={`provtag prov-${cliRef.provider}`}>{cliProviderLabel(cliRef.provider)}</span>
          {info && (
            <>
              <span class="cliproj" title={info.project}>
                {info.project || "(no directory)"}
              </span>
              <span class="muted">
                last activity <time dateTime={info.last_activity}>{fmtAgo(info.last_activity)}</time>
              </span>
              <span class="muted">{fmtBytes(Math.max(info.size, view.size.value))}</span>
              {info.file && (
                <span class="muted clifile" title={info.file}>
                  {info.file}
                </span>
              )}
            </>
          )}
          <FollowStatus state={view.follow.value} error={view.followError.value} />
          <label class="ctl metatoggle">
            <input type="checkbox" checked={view.showMeta.value} onChange={(e) => view.setShowMeta(e.currentTarget.checked)} />
            Show bookkeeping records
          </label>
        </div>
      </header>
      {view.reloaded.value && (
        <div class="banner" role="status">
          {view.reloaded.value}
          <button type="button" class="mini" aria-label="Dismiss" onClick={() => (view.reloaded.value = null)}>
            ×
          </button>
        </div>
      )}
      <CliTranscript view={view} />
      <div class="dock clidock">
        <div class="readonlynote">
          <p>
            <strong>Read-only.</strong> {cliProviderLabel(cliRef.provider)} wrote this session in a terminal{info?.project ? ` in ${baseName(info.project)}` : ""}; svc-code only reads its file, so there is no composer here. Continue here starts an svc-code
            session in the same directory that resumes it.
          </p>
          <ContinueButton view={view} />
        </div>
      </div>
    </div>
  );
}

function FollowStatus({ state, error }: { state: FollowState; error: string | null }) {
  const text = state === "following" ? "following the file" : state === "paused" ? "paused while the tab is hidden" : state === "retrying" ? `reconnecting${error ? `: ${error}` : ""}` : error ?? "stopped";
  return (
    <span class={`connstatus ${state === "following" ? "connected" : state === "stopped" ? "closed" : "reconnecting"}`} role="status" aria-label="Following">
      <span class="dot" aria-hidden="true" />
      {text}
    </span>
  );
}

function ContinueButton({ view }: { view: CliView }) {
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState<string | null>(null);
  const info = view.info.value;
  const go = async () => {
    setBusy(true);
    setErr(null);
    try {
      const s = await view.continueHere();
      // The new session's log starts empty: its page links back to this
      // transcript (from the session's cli_session).
      sidebarTab.value = "svc";
      navigate(`/s/${s.session_id}`);
    } catch (e) {
      setErr((e as Error).message);
      setBusy(false);
    }
  };
  return (
    <div class="continue">
      <button type="button" class="primary big" disabled={busy || !info} onClick={go}>
        {busy ? "Starting…" : "Continue here"}
      </button>
      {info?.svc_session_id && (
        <a class="button big" href={`/s/${info.svc_session_id}`} onClick={(e) => (e.preventDefault(), navigate(`/s/${info.svc_session_id}`))}>
          Open its svc-code session
        </a>
      )}
      {err && (
        <p class="error" role="alert">
          Not continued: {err}
        </p>
      )}
    </div>
  );
}

function CliTranscript({ view }: { view: CliView }) {
  const store = view.store.value;
  const scroller = useRef<HTMLDivElement>(null);
  const inner = useRef<HTMLDivElement>(null);
  const top = useRef<HTMLDivElement>(null);
  const atBottom = useRef(true);
  // Records followed while the user reads further up: a button brings the view down.
  const [newBelow, setNewBelow] = useState(0);
  const seenCount = useRef(0);
  const seenStore = useRef(store);
  const count = store.count.value;
  useEffect(() => {
    // A new store (earlier records put in front) is not news below.
    if (seenStore.current !== store || view.loading.peek() || atBottom.current) {
      seenStore.current = store;
      seenCount.current = count;
      setNewBelow(0);
    } else if (count > seenCount.current) setNewBelow(count - seenCount.current);
  }, [count, store]);
  const toBottom = () => {
    const el = scroller.current;
    if (!el) return;
    atBottom.current = true;
    el.scrollTop = el.scrollHeight;
    seenCount.current = store.count.peek();
    setNewBelow(0);
  };
  // The distance from the bottom before earlier records went in front: kept after.
  const anchor = useRef<number | null>(null);

  useLayoutEffect(() => {
    const el = scroller.current;
    const body = inner.current;
    if (!el || !body) return;
    const onScroll = () => {
      atBottom.current = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
      if (atBottom.current) setNewBelow(0);
    };
    el.addEventListener("scroll", onScroll, { passive: true });
    const ro = new ResizeObserver(() => {
      if (anchor.current !== null) return;
      if (atBottom.current) el.scrollTop = el.scrollHeight;
    });
    ro.observe(body);
    ro.observe(el);
    return () => {
      el.removeEventListener("scroll", onScroll);
      ro.disconnect();
    };
  }, []);

  // A new store (the first page, or earlier records put in front): keep the view where it was.
  useLayoutEffect(() => {
    const el = scroller.current;
    if (!el) return;
    if (anchor.current !== null) {
      el.scrollTop = el.scrollHeight - anchor.current;
      anchor.current = null;
    } else if (atBottom.current) el.scrollTop = el.scrollHeight;
  }, [store]);

  const older = () => {
    const el = scroller.current;
    if (!el || view.olderLoading.peek() || !view.hasMoreBefore.peek()) return;
    anchor.current = el.scrollHeight - el.scrollTop;
    view.loadOlder().finally(() => {
      // Nothing put in front (an error): let the view follow again.
      requestAnimationFrame(() => (anchor.current = null));
    });
  };

  // Scrolling up to the top reads the page before.
  useEffect(() => {
    const el = scroller.current;
    const t = top.current;
    if (!el || !t) return;
    const io = new IntersectionObserver((es) => es.some((e) => e.isIntersecting) && !view.loading.peek() && older(), { root: el, rootMargin: "400px 0px 0px 0px" });
    io.observe(t);
    return () => io.disconnect();
  }, [view]);

  return (
    <div class="transcript" ref={scroller} tabIndex={0} aria-label="Terminal session transcript">
      <div ref={inner} class="transcript-inner">
        <div ref={top} class="clitop">
          {view.hasMoreBefore.value ? (
            <button type="button" class="earlier" disabled={view.olderLoading.value} onClick={older}>
              {view.olderLoading.value ? "Reading earlier records…" : "Load earlier records"}
            </button>
          ) : (
            !view.loading.value && <p class="muted center">Start of the file</p>
          )}
          {view.olderError.value && (
            <p class="error center" role="alert">
              Earlier records: {view.olderError.value}
            </p>
          )}
        </div>
        {view.loading.value && <p class="muted center">Reading the file…</p>}
        <Blocks store={store} />
        {!view.loading.value && store.count.value === 0 && <p class="muted center">The file holds no records yet.</p>}
      </div>
      {newBelow > 0 && (
        <button type="button" class="primary newbelow" onClick={toBottom}>
          {newBelow} new {newBelow === 1 ? "record" : "records"} below ↓
        </button>
      )}
    </div>
  );
}

function Blocks({ store }: { store: SessionStore }) {
  const pages = store.pages.value;
  return (
    <>
      {pages.map((p) => (
        <section class="clipg" key={p.key}>
          {p.blocks.value.map((b) => (
            <BlockView key={b.key} b={b} actions={NO_ACTIONS} />
          ))}
        </section>
      ))}
    </>
  );
}
