// The repository's status: branch and upstream, the files by group, and the
// diff beside them (the whole work tree's or the index's, or one file's).

import { useEffect, useState } from "preact/hooks";
import type { ApiError } from "../../lib/api";
import { DiffView } from "../../ui/DiffView";
import { codeName, diff, groupStatus, status, type Status, type StatusFile } from "./api";

type Sel = { staged: boolean; path: string | null };

export function StatusView({ cwd, tick }: { cwd: string; tick: number }) {
  const [st, setSt] = useState<Status | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const [sel, setSel] = useState<Sel>({ staged: false, path: null });
  const [patch, setPatch] = useState<{ key: string; text: string } | null>(null);
  const [diffErr, setDiffErr] = useState<string | null>(null);

  useEffect(() => {
    let live = true;
    status(cwd).then(
      (s) => live && (setSt(s), setErr(null)),
      (e) => live && (setSt(null), setErr((e as ApiError).message)),
    );
    return () => {
      live = false;
    };
  }, [cwd, tick]);

  const key = `${sel.staged}:${sel.path ?? ""}:${tick}`;
  useEffect(() => {
    if (!st) return;
    let live = true;
    setDiffErr(null);
    diff(cwd, { staged: sel.staged, path: sel.path ? `${st.root}/${sel.path}` : undefined }).then(
      (d) => live && setPatch({ key, text: d.diff }),
      (e) => live && setDiffErr((e as ApiError).message),
    );
    return () => {
      live = false;
    };
  }, [st, key]);

  if (err)
    return (
      <p class="gerr pad" role="alert">
        {err}
      </p>
    );
  if (!st)
    return (
      <p class="muted pad" role="status">
        Reading the status…
      </p>
    );
  const g = groupStatus(st.files);
  const item = (f: StatusFile, staged: boolean) => {
    const code = f.kind === "untracked" ? "?" : staged ? f.index : f.worktree;
    const on = sel.path === f.path && sel.staged === staged;
    return (
      <li key={f.path}>
        <button type="button" class={`gfile${on ? " on" : ""}`} aria-pressed={on} disabled={f.kind === "untracked"} title={f.kind === "untracked" ? "Untracked: git has no diff of it yet" : undefined} onClick={() => setSel({ staged, path: f.path })}>
          <span class={`gcode c-${code}`} title={codeName(code)} aria-label={codeName(code)}>
            {code}
          </span>
          <span class="gfpath">{f.orig_path ? `${f.orig_path} → ${f.path}` : f.path}</span>
        </button>
      </li>
    );
  };
  const section = (title: string, files: StatusFile[], staged: boolean) =>
    files.length > 0 && (
      <section class="ggroup" aria-label={title}>
        <h3>
          {title} <span class="muted">({files.length})</span>
        </h3>
        <ul>{files.map((f) => item(f, staged))}</ul>
      </section>
    );

  return (
    <div class="gsplit">
      <div class="glist">
        <p class="ghead">
          <span class="gbranch">{st.branch || "(no branch)"}</span>
          {st.head && <code class="muted"> {st.head.slice(0, 10)}</code>}
          {st.upstream && (
            <span class="muted">
              {" "}
              · {st.upstream} ↑{st.ahead} ↓{st.behind}
            </span>
          )}
        </p>
        <div class="gwhole">
          <button type="button" class="mini" aria-pressed={!sel.path && !sel.staged} onClick={() => setSel({ staged: false, path: null })}>
            Work tree diff
          </button>
          <button type="button" class="mini" aria-pressed={!sel.path && sel.staged} onClick={() => setSel({ staged: true, path: null })}>
            Staged diff
          </button>
        </div>
        {st.files.length === 0 && <p class="muted pad">Nothing to commit: the work tree is clean.</p>}
        {section("Unmerged", g.unmerged, false)}
        {section("Staged", g.staged, true)}
        {section("Not staged", g.unstaged, false)}
        {section("Untracked", g.untracked, false)}
      </div>
      <div class="gdiff" role="region" aria-label={sel.path ? `Diff of ${sel.path}` : sel.staged ? "Staged diff" : "Work tree diff"}>
        <h3 class="gdiff-title">{sel.path ? `${sel.path} (${sel.staged ? "staged" : "work tree"})` : sel.staged ? "Staged changes (index against HEAD)" : "Work tree changes (against the index)"}</h3>
        {diffErr ? (
          <p class="gerr pad" role="alert">
            {diffErr}
          </p>
        ) : patch && patch.key === key ? (
          <DiffView patch={patch.text} emptyText={sel.staged ? "Nothing staged." : "No unstaged change."} />
        ) : (
          <p class="muted pad" role="status">
            Reading the diff…
          </p>
        )}
      </div>
    </div>
  );
}
