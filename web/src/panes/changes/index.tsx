// The Changes pane (issue 18, item 4): the session's turns from the shadow
// journal, each with its files and diffs, "Undo turn" on the turn an undo
// reverts now and "Restore to before this turn" on every turn, each after a
// preview and a "Confirm"; a file's history across sessions, the journal's
// branches and a full-text search of it (Explore.tsx).

import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { ApiError } from "../../lib/api";
import { chipText, journalEdits, undoneSet, type SessionChanges, type TurnChanges } from "../../lib/journal";
import { navigate, route, sessionInfo } from "../../state/app";
import { FileDiff } from "../../ui/DiffView";
import type { PaneProps } from "../../ui/Panes";
import "./changes.css";
import { Branches, FileHistory, JournalSearch } from "./Explore";
import { commitDiff, restorePreview, restoreTo, sessionChanges, undoSpecPreview, undoTurn } from "./journal-api";
import { undoTarget } from "./model";
import { OpDialog, type OpSpec } from "./OpDialog";

type Tab = "turns" | "history" | "branches" | "search";
const TABS: [Tab, string][] = [
  ["turns", "Turns"],
  ["history", "File history"],
  ["branches", "Branches"],
  ["search", "Search"],
];

export default function ChangesPane({ sessionId, visible }: PaneProps) {
  const [data, setData] = useState<SessionChanges | null>(null);
  const [cwd, setCwd] = useState<string>("");
  const [err, setErr] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);
  const [tab, setTab] = useState<Tab>("turns");
  const [historyPath, setHistoryPath] = useState<string>("");
  const [focus, setFocus] = useState<{ turn?: number; commit?: string } | null>(null);
  const seq = useRef(0);

  const load = async () => {
    if (!sessionId) return;
    const n = ++seq.current;
    setLoading(true);
    try {
      const r = await sessionChanges(sessionId);
      if (n !== seq.current) return;
      setData(r);
      setCwd(r.project.path);
      setErr(null);
    } catch (e) {
      if (n !== seq.current) return;
      if (e instanceof ApiError && e.status === 404) {
        setData({ session_id: sessionId, project: null as any, turns: [] });
        setErr(null);
        sessionInfo(sessionId).then((s) => n === seq.current && setCwd((c) => c || s.cwd || ""), () => {});
      } else setErr((e as Error).message);
    } finally {
      if (n === seq.current) setLoading(false);
    }
  };

  // Read when shown, and again after an undo or restore anywhere in the app.
  const edits = journalEdits.value;
  useEffect(() => {
    if (visible) load();
  }, [visible, sessionId, edits]);

  // Deep links: ?turn=N (from a chip), ?commit=sha, ?path= (a file's history).
  // Reading the route subscribes this pane to navigations within it.
  void route.value;
  useEffect(() => {
    if (!visible) return;
    const p = new URLSearchParams(location.search);
    const turn = Number(p.get("turn")) || undefined;
    const commit = p.get("commit") || undefined;
    const path = p.get("path");
    if (path) {
      setHistoryPath(path);
      setTab("history");
    } else if (turn || commit) {
      setTab("turns");
      setFocus({ turn, commit });
    }
  }, [visible, location.search]);

  if (!sessionId) return <p class="muted pad">Open a session to see what its turns changed.</p>;

  return (
    <div class="cx">
      <header class="cx-head">
        <h1>Changes</h1>
        <span class="muted cx-project" title={cwd}>
          {cwd || "…"}
        </span>
        <button type="button" class="mini" onClick={load} disabled={loading}>
          {loading ? "Reading…" : "Refresh"}
        </button>
      </header>
      <div class="cx-tabs" role="tablist" aria-label="Journal views">
        {TABS.map(([t, label]) => (
          <button key={t} type="button" role="tab" aria-selected={tab === t} class={tab === t ? "on" : ""} onClick={() => setTab(t)}>
            {label}
          </button>
        ))}
      </div>
      {err && (
        <p role="alert" class="pad">
          The journal could not be read: {err}
        </p>
      )}
      <div class="cx-body" role="tabpanel" aria-label="Turns" hidden={tab !== "turns"}>
        {data && cwd && focus?.commit && !data.turns.some((t) => t.commit.startsWith(focus.commit!)) && <OtherCommit cwd={cwd} commit={focus.commit} />}
        {data && <Turns data={data} sessionId={sessionId} cwd={cwd} focus={focus} onHistory={(p) => (setHistoryPath(p), setTab("history"))} />}
      </div>
      {cwd && tab === "history" && (
        <div class="cx-body" role="tabpanel" aria-label="File history">
          <FileHistory cwd={cwd} path={historyPath} setPath={setHistoryPath} known={knownPaths(data)} sessionId={sessionId} />
        </div>
      )}
      {cwd && tab === "branches" && (
        <div class="cx-body" role="tabpanel" aria-label="Branches">
          <Branches cwd={cwd} sessionId={sessionId} />
        </div>
      )}
      {cwd && tab === "search" && (
        <div class="cx-body" role="tabpanel" aria-label="Search">
          <JournalSearch cwd={cwd} sessionId={sessionId} />
        </div>
      )}
    </div>
  );
}

function knownPaths(d: SessionChanges | null): string[] {
  const s = new Set<string>();
  for (const t of d?.turns ?? []) for (const f of t.diffs) s.add(f.path);
  return [...s].sort();
}

function Turns({
  data,
  sessionId,
  cwd,
  focus,
  onHistory,
}: {
  data: SessionChanges;
  sessionId: string;
  cwd: string;
  focus: { turn?: number; commit?: string } | null;
  onHistory: (path: string) => void;
}) {
  const [op, setOp] = useState<OpSpec | null>(null);
  const target = useMemo(() => undoTarget(data.turns), [data]);
  const undone = useMemo(() => undoneSet(data.turns), [data]);
  const list = [...data.turns].reverse(); // newest first

  const undo = (t: TurnChanges) =>
    setOp({
      title: `Undo turn ${t.turn_number}`,
      intro: `Puts back every file turn ${t.turn_number} changed as it was before the turn (files it created are removed). This is what will be written:`,
      preview: () => undoSpecPreview(cwd, t),
      run: (force) => undoTurn(sessionId, cwd, t, force),
    });
  const restore = (t: TurnChanges) =>
    setOp({
      title: `Restore to before turn ${t.turn_number}`,
      intro: `Puts the whole project back as it was just before turn ${t.turn_number} began: this turn's changes and everything after it are reverted, across sessions. This is what will be written:`,
      preview: () => restorePreview(cwd, t, t.parents[0]),
      run: (force) => restoreTo(cwd, t.parents[0], sessionId, force),
    });

  if (data.turns.length === 0)
    return <p class="muted pad">Nothing of this session is in the journal yet: turns that change files appear here when they end.</p>;

  return (
    <>
      <p class="muted cx-hint">
        {target
          ? `"Undo turn" reverts the session's last turn not undone yet: turn ${target.turn_number}. To go back further, restore to before an older turn.`
          : "Every turn of this session is undone. Restore can still put the project back to before any turn."}
      </p>
      <ol class="cx-turns" aria-label="Turns">
        {list.map((t) => (
          <TurnCard
            key={t.commit}
            t={t}
            isTarget={target?.commit === t.commit}
            undone={undone.has(t.commit)}
            focused={(focus?.turn !== undefined && t.kind === "turn" && t.turn_number === focus.turn) || (!!focus?.commit && t.commit.startsWith(focus.commit))}
            onUndo={() => undo(t)}
            onRestore={() => restore(t)}
            onHistory={onHistory}
          />
        ))}
      </ol>
      {op && (
        <OpDialog
          spec={op}
          onClose={() => setOp(null)}
          onDone={() => {
            journalEdits.value++;
          }}
        />
      )}
    </>
  );
}

function when(iso: string): string {
  const d = new Date(iso);
  return isNaN(d.getTime()) ? iso : d.toLocaleString();
}

function TurnCard({
  t,
  isTarget,
  undone,
  focused,
  onUndo,
  onRestore,
  onHistory,
}: {
  t: TurnChanges;
  isTarget: boolean;
  undone: boolean;
  focused: boolean;
  onUndo: () => void;
  onRestore: () => void;
  onHistory: (path: string) => void;
}) {
  const [open, setOpen] = useState(focused);
  const ref = useRef<HTMLLIElement>(null);
  useEffect(() => {
    if (!focused) return;
    setOpen(true);
    requestAnimationFrame(() => ref.current?.scrollIntoView({ block: "start" }));
  }, [focused]);
  const isTurn = t.kind === "turn";
  const label = isTurn ? `Turn ${t.turn_number}` : t.kind === "undo" ? `Undo of turn ${t.turn_number ?? "?"}` : t.kind === "restore" ? "Restore" : t.kind ?? "commit";
  const line = t.turn_id ? Number(t.turn_id.slice(t.turn_id.lastIndexOf(":") + 1)) : 0;
  return (
    <li ref={ref} class={`cx-turn k-${t.kind}${undone ? " undone" : ""}${focused ? " focused" : ""}`} aria-label={label}>
      <div class="cx-turnhead">
        <button type="button" class="cx-toggle" aria-expanded={open} onClick={() => setOpen(!open)}>
          <span class="cx-label">{label}</span>
          <span class="cx-chip">{chipText(t.diffs)}</span>
          {undone && <span class="tag">undone</span>}
        </button>
        <span class="cx-subject" title={t.subject}>
          {t.subject.replace(/^turn \d+: /, "")}
        </span>
        <span class="muted cx-time">{when(t.time)}</span>
      </div>
      {(isTurn || (line > 0 && t.session_id)) && (
      <div class="cx-turnactions">
        {isTurn && isTarget && (
          <button type="button" onClick={onUndo}>
            Undo turn
          </button>
        )}
        {isTurn && t.parents.length > 0 && (
          <button type="button" onClick={onRestore}>
            Restore to before this turn
          </button>
        )}
        {isTurn && !isTarget && !undone && <span class="muted small">An undo reverts a later turn first: use restore for this one.</span>}
        {isTurn && t.parents.length === 0 && <span class="muted small">The journal's first commit: there is no state before it to go back to.</span>}
        {line > 0 && t.session_id && (
          <a
            class="mini"
            href={`/s/${t.session_id}?line=${line}`}
            onClick={(e) => {
              e.preventDefault();
              navigate(`/s/${t.session_id}?line=${line}`);
            }}
          >
            Show the prompt
          </a>
        )}
      </div>
      )}
      {open && (
        <div class="cx-diffs">
          {t.diffs.length === 0 && <p class="muted">No files.</p>}
          {t.diffs.map((d) => (
            <div key={d.path} class="cx-file">
              <FileDiff path={d.path} status={d.status} diff={d.diff} truncated={d.truncated} binary={d.binary} open={t.diffs.length <= 8} />
              <button type="button" class="linklike cx-hist" onClick={() => onHistory(d.path)}>
                History of {d.path}
              </button>
            </div>
          ))}
        </div>
      )}
    </li>
  );
}

/** A commit of the journal that is not one of this session's turns (a baseline, a snapshot, another session's), opened by a link. */
function OtherCommit({ cwd, commit }: { cwd: string; commit: string }) {
  const [c, setC] = useState<TurnChanges | null>(null);
  const [err, setErr] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    setC(null);
    setErr(null);
    commitDiff(cwd, commit).then(
      (r) => live && setC(r),
      (e) => live && setErr((e as Error).message),
    );
    return () => {
      live = false;
    };
  }, [cwd, commit]);
  if (err) return <p role="alert">Commit {commit}: {err}</p>;
  if (!c) return <p class="muted">Reading commit {commit}…</p>;
  return (
    <section class="cx-turn focused cx-other" aria-label={`Commit ${commit}`}>
      <div class="cx-turnhead">
        <span class="cx-label">{c.kind ?? "commit"}</span>
        <span class="cx-chip">{chipText(c.diffs)}</span>
        <span class="cx-subject" title={c.subject}>
          {c.subject}
        </span>
        <span class="muted cx-time">{when(c.time)}</span>
      </div>
      <div class="cx-diffs">
        {c.diffs.map((d) => (
          <FileDiff key={d.path} path={d.path} status={d.status} diff={d.diff} truncated={d.truncated} binary={d.binary} />
        ))}
      </div>
    </section>
  );
}
