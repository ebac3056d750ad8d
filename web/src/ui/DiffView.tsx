// The diff view shared by the journal's turns and the project's git: a file
// per section (its path, +/− counts, collapsible), hunks with old and new
// line numbers. Long files show their first lines and a button for the rest,
// so a huge diff never blocks the page.

import { useMemo, useState } from "preact/hooks";
import { parsePatch, type DiffFile } from "../lib/patch";

const FIRST_LINES = 400;

/** A whole patch (one or more files; a --stat preamble is shown above them). */
export function DiffView({ patch, emptyText = "No changes." }: { patch: string; emptyText?: string }) {
  const parsed = useMemo(() => parsePatch(patch), [patch]);
  if (!parsed.files.length && !parsed.preamble) return <p class="muted pad">{emptyText}</p>;
  return (
    <div class="diffview">
      {parsed.preamble && <pre class="diffpre">{parsed.preamble}</pre>}
      {parsed.files.map((f, i) => (
        <FileDiffView key={f.path + i} file={f} />
      ))}
    </div>
  );
}

/** One file's diff text as a route gives it (the journal's diffs[].diff), with its summary. */
export function FileDiff({ path, status, diff, truncated, binary, open = true }: { path: string; status?: string; diff: string; truncated?: boolean; binary?: boolean; open?: boolean }) {
  const parsed = useMemo(() => parsePatch(diff), [diff]);
  const f: DiffFile = parsed.files[0] ?? { path, meta: [], hunks: [], additions: 0, deletions: 0, binary: !!binary };
  return <FileDiffView file={{ ...f, path: path || f.path, binary: f.binary || !!binary }} status={status} truncated={truncated} open={open} />;
}

function FileDiffView({ file, status, truncated, open = true }: { file: DiffFile; status?: string; truncated?: boolean; open?: boolean }) {
  const [all, setAll] = useState(false);
  const total = file.hunks.reduce((n, h) => n + h.lines.length + 1, 0);
  let budget = all ? Infinity : FIRST_LINES;
  return (
    <details class="difffile" open={open}>
      <summary>
        {status && <span class={`dstatus s-${status}`}>{status}</span>}
        <span class="dpath">{file.oldPath ? `${file.oldPath} → ${file.path}` : file.path}</span>
        <span class="dcount">
          <span class="add">+{file.additions}</span> <span class="del">−{file.deletions}</span>
        </span>
      </summary>
      {file.binary && <p class="muted pad">Binary file: no text diff.</p>}
      {!file.binary && !file.hunks.length && <p class="muted pad">{file.meta.join(" · ") || "No textual change (mode or empty file)."}</p>}
      {file.hunks.length > 0 && (
        <div class="dlines" role="table" aria-label={`Diff of ${file.path}`}>
          {file.hunks.map((h, hi) => {
            if (budget <= 0) return null;
            budget--;
            const lines = h.lines.slice(0, Math.max(0, budget));
            budget -= lines.length;
            return (
              <div key={hi} role="rowgroup">
                <div class="dl hunk" role="row">
                  <span role="cell" class="dn" />
                  <span role="cell" class="dn" />
                  <span role="cell" class="dt">
                    {h.header}
                  </span>
                </div>
                {lines.map((l, li) => (
                  <div key={li} class={`dl ${l.kind}`} role="row">
                    <span role="cell" class="dn">
                      {l.old ?? ""}
                    </span>
                    <span role="cell" class="dn">
                      {l.new ?? ""}
                    </span>
                    <span role="cell" class="dt">
                      <span class="dsign" aria-hidden="true">
                        {l.kind === "add" ? "+" : l.kind === "del" ? "−" : " "}
                      </span>
                      {l.text}
                    </span>
                  </div>
                ))}
              </div>
            );
          })}
        </div>
      )}
      {!all && total > FIRST_LINES && (
        <button type="button" class="mini" onClick={() => setAll(true)}>
          Show all {total} lines
        </button>
      )}
      {truncated && <p class="muted pad">The server cut this diff at 256 KiB.</p>}
    </details>
  );
}
