// The journal beyond one session: a file's history across sessions (a
// scrubber over its versions, each linked to the prompt that made it), the
// branches, and a full-text search of every commit.

import { useEffect, useState } from "preact/hooks";
import { get, q } from "../../lib/api";
import { promptLine, type JournalCommit, type JournalFileDiff } from "../../lib/journal";
import { navigate } from "../../state/app";
import { FileDiff } from "../../ui/DiffView";
import { commitDiff } from "./journal-api";

interface Version extends JournalCommit {
  status: string;
  blob?: string;
  size: number;
}

function when(iso: string): string {
  const d = new Date(iso);
  return isNaN(d.getTime()) ? iso : d.toLocaleString();
}

const short = (s?: string) => (s ? s.slice(0, 8) : "");

function describe(c: JournalCommit): string {
  if (c.kind === "turn") return `turn ${c.turn_number}`;
  if (c.kind === "undo") return `undo of turn ${c.turn_number ?? "?"}`;
  return c.kind ?? "commit";
}

/** The subject of c where it says more than its kind (a turn's prompt). */
function subjectOf(c: JournalCommit): string {
  if (c.kind === "turn") return c.subject.replace(/^turn \d+: /, "");
  return c.subject.toLowerCase().startsWith(c.kind ?? "\0") ? "" : c.subject;
}

/** Who made version c, in words, with a link to the prompt of a turn. */
function MadeBy({ c }: { c: JournalCommit }) {
  switch (c.kind) {
    case "turn":
      return (
        <>
          Made by <PromptLink c={c} />
        </>
      );
    case "baseline":
      return <>Changed outside the agent, found when turn {c.turn_number ?? "?"} of session {short(c.session_id)} began</>;
    case "undo":
      return <>Put back by an undo of turn {c.turn_number ?? "?"} (session {short(c.session_id)})</>;
    case "restore":
      return <>Put back by a restore{c.session_id ? ` (session ${short(c.session_id)})` : ""}</>;
    case "snapshot":
      return <>Saved as it was before a forced undo or restore</>;
  }
  return <>{c.subject}</>;
}

/** A link to the prompt that made turn commit c (its session's log line). */
function PromptLink({ c }: { c: JournalCommit }) {
  const line = promptLine(c);
  if (c.kind !== "turn" || !c.session_id || !line) return null;
  const href = `/s/${c.session_id}?line=${line}`;
  return (
    <a
      href={href}
      onClick={(e) => {
        e.preventDefault();
        navigate(href);
      }}
    >
      the prompt (session {short(c.session_id)}, line {line})
    </a>
  );
}

/** Where commit c opens in the Changes pane: its session's pane, at that commit. */
function CommitLink({ c, children }: { c: JournalCommit; children: preact.ComponentChildren }) {
  if (!c.session_id) return <>{children}</>;
  const href = `/s/${c.session_id}/changes?commit=${c.commit.slice(0, 12)}`;
  return (
    <a
      href={href}
      onClick={(e) => {
        e.preventDefault();
        navigate(href);
      }}
    >
      {children}
    </a>
  );
}

export function FileHistory({ cwd, path, setPath, known, sessionId }: { cwd: string; path: string; setPath: (p: string) => void; known: string[]; sessionId: string }) {
  const [input, setInput] = useState(path);
  const [versions, setVersions] = useState<Version[] | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const [idx, setIdx] = useState(0);
  const [diff, setDiff] = useState<JournalFileDiff | null>(null);
  void sessionId;

  useEffect(() => setInput(path), [path]);
  useEffect(() => {
    if (!path) return;
    let live = true;
    setVersions(null);
    setErr(null);
    get<{ versions: Version[] }>(`/api/shadow/timeline?cwd=${q(cwd)}&path=${q(path)}&limit=500`).then(
      (r) => {
        if (!live) return;
        const oldestFirst = [...r.versions].reverse();
        setVersions(oldestFirst);
        setIdx(Math.max(0, oldestFirst.length - 1));
      },
      (e) => live && setErr((e as Error).message),
    );
    return () => {
      live = false;
    };
  }, [cwd, path]);

  const v = versions?.[idx];
  useEffect(() => {
    if (!v) return;
    let live = true;
    setDiff(null);
    commitDiff(cwd, v.commit).then(
      (r) => live && setDiff(r.diffs.find((d) => d.path === path) ?? null),
      () => {},
    );
    return () => {
      live = false;
    };
  }, [v?.commit]);

  return (
    <section class="cx-history" aria-label="File history">
      <form
        class="cx-form"
        onSubmit={(e) => {
          e.preventDefault();
          setPath(input.trim());
        }}
      >
        <label for="cx-hpath">File path</label>
        <input id="cx-hpath" list="cx-known" value={input} onInput={(e) => setInput(e.currentTarget.value)} placeholder="src/main.go" />
        <datalist id="cx-known">
          {known.map((p) => (
            <option key={p} value={p} />
          ))}
        </datalist>
        <button type="submit">Show history</button>
      </form>
      {!path && known.length > 0 && (
        <p class="cx-picks">
          Files this session changed:{" "}
          {known.slice(0, 30).map((p) => (
            <button key={p} type="button" class="mini" onClick={() => setPath(p)}>
              {p}
            </button>
          ))}
        </p>
      )}
      {err && <p role="alert">{err}</p>}
      {versions && versions.length === 0 && <p class="muted">The journal has no version of {path}.</p>}
      {versions && versions.length > 0 && v && (
        <>
          <div class="cx-scrub">
            <label for="cx-version">
              Version {idx + 1} of {versions.length}
            </label>
            <input id="cx-version" type="range" min={0} max={versions.length - 1} step={1} value={idx} aria-label="Version" aria-valuetext={`${describe(v)}, ${when(v.time)}`} onInput={(e) => setIdx(Number(e.currentTarget.value))} />
            <span class="muted">oldest ← → newest</span>
          </div>
          <div class="cx-version">
            <p>
              <strong>{describe(v)}</strong> · {v.status === "D" ? "deleted" : v.status === "A" ? "created" : "changed"} · {when(v.time)}
              {v.blob ? ` · ${v.size} bytes` : ""}
              <br />
              <MadeBy c={v} /> · <CommitLink c={v}>open the commit</CommitLink>
            </p>
            {diff && <FileDiff path={diff.path} status={diff.status} diff={diff.diff} truncated={diff.truncated} binary={diff.binary} />}
          </div>
          <ol class="cx-versions" aria-label="Versions" reversed>
            {[...versions].reverse().map((x, ri) => {
              const i = versions.length - 1 - ri;
              return (
                <li key={x.commit} class={i === idx ? "on" : ""}>
                  <button type="button" class="linklike" aria-current={i === idx ? "true" : undefined} onClick={() => setIdx(i)}>
                    {describe(x)} · {x.status}
                  </button>{" "}
                  <span class="muted">
                    {when(x.time)} · session {short(x.session_id) || "—"}
                  </span>{" "}
                  <PromptLink c={x} />
                </li>
              );
            })}
          </ol>
        </>
      )}
    </section>
  );
}

interface Branch {
  name: string;
  session_id?: string;
  head: string;
  time: string;
  subject: string;
  commits: number;
  session_commits: number;
}

export function Branches({ cwd, sessionId }: { cwd: string; sessionId: string }) {
  const [list, setList] = useState<Branch[] | null>(null);
  const [err, setErr] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    get<{ branches: Branch[] }>(`/api/shadow/branches?cwd=${q(cwd)}`).then(
      (r) => live && setList(r.branches),
      (e) => live && setErr((e as Error).message),
    );
    return () => {
      live = false;
    };
  }, [cwd]);
  if (err) return <p role="alert">{err}</p>;
  if (!list) return <p class="muted">Reading the branches…</p>;
  return (
    <div class="cx-tablewrap">
      <table class="cx-table" aria-label="Branches">
        <thead>
          <tr>
            <th>Branch</th>
            <th>Last commit</th>
            <th>When</th>
            <th title="commits made for this session / reachable from the branch">Commits</th>
          </tr>
        </thead>
        <tbody>
          {list.map((b) => (
            <tr key={b.name} class={b.session_id === sessionId ? "on" : ""}>
              <td>
                {b.session_id ? (
                  <a
                    href={`/s/${b.session_id}/changes`}
                    onClick={(e) => {
                      e.preventDefault();
                      navigate(`/s/${b.session_id}/changes`);
                    }}
                  >
                    {b.name}
                  </a>
                ) : (
                  b.name
                )}
                {b.session_id === sessionId && <span class="tag">this session</span>}
              </td>
              <td class="cx-subjectcell">{b.subject}</td>
              <td class="muted">{when(b.time)}</td>
              <td>
                {b.session_commits} / {b.commits}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

interface Hit extends JournalCommit {
  matches: { path: string; side: string; line: string }[];
  truncated?: boolean;
}

export function JournalSearch({ cwd, sessionId }: { cwd: string; sessionId: string }) {
  const [text, setText] = useState("");
  const [regex, setRegex] = useState(false);
  const [matchCase, setMatchCase] = useState(false);
  const [onlyThis, setOnlyThis] = useState(false);
  const [hits, setHits] = useState<Hit[] | null>(null);
  const [limited, setLimited] = useState(false);
  const [err, setErr] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const run = async () => {
    if (!text.trim()) return;
    setBusy(true);
    setErr(null);
    try {
      const r = await get<{ hits: Hit[]; limited: boolean }>(
        `/api/shadow/search?cwd=${q(cwd)}&q=${q(text)}&regex=${regex}&case=${matchCase}&limit=50${onlyThis ? `&session=${q(sessionId)}` : ""}`,
      );
      setHits(r.hits);
      setLimited(r.limited);
    } catch (e) {
      setErr((e as Error).message);
      setHits(null);
    } finally {
      setBusy(false);
    }
  };

  return (
    <section class="cx-search" aria-label="Journal search">
      <form
        class="cx-form"
        onSubmit={(e) => {
          e.preventDefault();
          run();
        }}
      >
        <label for="cx-q" class="sr-only">
          Search the journal
        </label>
        <input id="cx-q" type="search" value={text} onInput={(e) => setText(e.currentTarget.value)} placeholder="Text that entered or left a file" />
        <button type="submit" disabled={busy}>
          {busy ? "Searching…" : "Search"}
        </button>
        <label class="cx-check">
          <input type="checkbox" checked={regex} onChange={(e) => setRegex(e.currentTarget.checked)} /> Regular expression
        </label>
        <label class="cx-check">
          <input type="checkbox" checked={matchCase} onChange={(e) => setMatchCase(e.currentTarget.checked)} /> Match case
        </label>
        <label class="cx-check">
          <input type="checkbox" checked={onlyThis} onChange={(e) => setOnlyThis(e.currentTarget.checked)} /> This session only
        </label>
      </form>
      <p class="muted small">Finds the commits, in every session, whose changes added or removed a line with this text.</p>
      {err && <p role="alert">{err}</p>}
      {hits && hits.length === 0 && <p class="muted">No commit added or removed such a line.</p>}
      {hits && hits.length > 0 && (
        <ol class="cx-hits" aria-label="Search results">
          {hits.map((h) => (
            <li key={h.commit}>
              <p>
                <CommitLink c={h}>
                  <strong>{describe(h)}</strong> {subjectOf(h)}
                </CommitLink>{" "}
                <span class="muted">
                  {when(h.time)} · session {short(h.session_id) || "—"}
                </span>{" "}
                <PromptLink c={h} />
              </p>
              <ul class="cx-matches">
                {h.matches.map((m, i) => (
                  <li key={i} class={m.side === "+" ? "add" : "del"}>
                    <code>{m.path}</code> <span class="dsign">{m.side === "+" ? "+" : "−"}</span>
                    <span class="cx-mline">{m.line}</span>
                  </li>
                ))}
                {h.truncated && <li class="muted">more lines matched</li>}
              </ul>
            </li>
          ))}
        </ol>
      )}
      {limited && <p class="muted">The first 50 commits are shown.</p>}
    </section>
  );
}
