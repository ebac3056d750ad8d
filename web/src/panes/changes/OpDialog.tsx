// The dialog of an undo or a restore: the preview of exactly what will
// change (files and diffs), "Confirm", then the outcome; a 409 with a list
// of conflicting files shows the list and offers the forced path with its
// consequence spelt out.

import { useEffect, useRef, useState } from "preact/hooks";
import type { JournalFileDiff } from "../../lib/journal";
import { FileDiff } from "../../ui/DiffView";
import { CONFLICT_REASONS, opFailure, type Conflict, type OpFailure, type OpResult } from "./model";

export interface OpSpec {
  /** The dialog's name, e.g. "Undo turn 3". */
  title: string;
  /** What the operation does, in a sentence, above the preview. */
  intro: string;
  /** Computes the preview (files and diffs that will be applied). */
  preview: () => Promise<{ files: JournalFileDiff[]; note?: string; warn?: string }>;
  /** Runs it; force after the user chose the forced path. */
  run: (force: boolean) => Promise<OpResult>;
}

type State =
  | { s: "loading" }
  | { s: "preview"; files: JournalFileDiff[]; note?: string; warn?: string }
  | { s: "running"; files: JournalFileDiff[]; note?: string; warn?: string; force: boolean }
  | { s: "failed"; f: OpFailure; files: JournalFileDiff[]; note?: string }
  | { s: "done"; r: OpResult; forced: boolean }
  | { s: "error"; message: string };

export function OpDialog({ spec, onClose, onDone }: { spec: OpSpec; onClose: () => void; onDone: () => void }) {
  const [st, setSt] = useState<State>({ s: "loading" });
  const box = useRef<HTMLDivElement>(null);
  const head = useRef<HTMLHeadingElement>(null);

  useEffect(() => {
    let live = true;
    spec.preview().then(
      (p) => live && setSt({ s: "preview", files: p.files, note: p.note, warn: p.warn }),
      (e) => live && setSt({ s: "error", message: "The preview could not be computed: " + (e as Error).message }),
    );
    head.current?.focus();
    return () => {
      live = false;
    };
  }, [spec]);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape" && st.s !== "running") onClose();
      // Tab stays in the dialog (it is modal).
      if (e.key === "Tab" && box.current) {
        const all = Array.from(box.current.querySelectorAll<HTMLElement>("button:not([disabled]), a[href], summary, [tabindex]:not([tabindex='-1'])"));
        if (all.length === 0) return;
        const first = all[0];
        const last = all[all.length - 1];
        if (!box.current.contains(document.activeElement)) {
          e.preventDefault();
          first.focus();
        } else if (e.shiftKey && document.activeElement === first) {
          e.preventDefault();
          last.focus();
        } else if (!e.shiftKey && document.activeElement === last) {
          e.preventDefault();
          first.focus();
        }
      }
    };
    addEventListener("keydown", onKey);
    return () => removeEventListener("keydown", onKey);
  }, [st.s]);

  const go = async (force: boolean) => {
    if (st.s !== "preview" && st.s !== "failed") return;
    const { files, note } = st;
    const warn = st.s === "preview" ? st.warn : undefined;
    setSt({ s: "running", files, note, warn, force });
    try {
      const r = await spec.run(force);
      setSt({ s: "done", r, forced: force });
      onDone();
    } catch (e) {
      setSt({ s: "failed", f: opFailure(e), files, note });
    }
  };

  const id = "opdlg-title";
  return (
    <div class="cx-backdrop" onClick={(e) => e.target === e.currentTarget && st.s !== "running" && onClose()}>
      <div class="cx-dialog" role="dialog" aria-modal="true" aria-labelledby={id} ref={box}>
        <h2 id={id} tabIndex={-1} ref={head}>
          {spec.title}
        </h2>
        {st.s === "loading" && <p class="muted" role="status">Working out what will change…</p>}
        {st.s === "error" && <p role="alert">{st.message}</p>}
        {(st.s === "preview" || st.s === "running") && <Preview intro={spec.intro} files={st.files} note={st.note} warn={st.warn} />}
        {st.s === "failed" && st.f.kind === "conflicts" && (
          <>
            <Conflicts list={st.f.conflicts} />
            <Preview intro="What it writes, as previewed (for the files listed above, what is there now is replaced, after the snapshot keeps it):" files={st.files} note={st.note} />
          </>
        )}
        {st.s === "failed" && st.f.kind === "refused" && (
          <p role="alert" class="cx-refused">
            Nothing was changed: {st.f.message}
          </p>
        )}
        {st.s === "done" && <Outcome r={st.r} forced={st.forced} />}
        <div class="cx-actions">
          {st.s === "preview" && (
            <button type="button" class="primary" onClick={() => go(false)} disabled={st.files.length === 0 && !st.note}>
              Confirm
            </button>
          )}
          {st.s === "running" && (
            <button type="button" class="primary" disabled>
              {st.force ? "Saving a snapshot, then writing…" : "Writing…"}
            </button>
          )}
          {st.s === "failed" && st.f.kind === "conflicts" && (
            <button type="button" class="danger" onClick={() => go(true)}>
              Overwrite after a snapshot
            </button>
          )}
          <button type="button" onClick={onClose} disabled={st.s === "running"}>
            {st.s === "done" ? "Close" : "Cancel"}
          </button>
        </div>
      </div>
    </div>
  );
}

function Preview({ intro, files, note, warn }: { intro: string; files: JournalFileDiff[]; note?: string; warn?: string }) {
  return (
    <div class="cx-preview">
      <p>{intro}</p>
      {warn && <p class="cx-warn">{warn}</p>}
      {files.length === 0 ? (
        <p class="muted">No file would change.</p>
      ) : (
        <>
          <p>
            <strong>
              {files.length} {files.length === 1 ? "file" : "files"} will change:
            </strong>
          </p>
          <ul class="cx-files" aria-label="Files that will change">
            {files.map((f) => (
              <li key={f.path}>
                <span class={`dstatus s-${f.status}`}>{f.status}</span> {f.path}{" "}
                <span class="muted">{f.status === "D" ? "(removed)" : f.status === "A" ? "(created)" : ""}</span>
              </li>
            ))}
          </ul>
          <div class="cx-diffs">
            {files.map((f) => (
              <FileDiff key={f.path} path={f.path} status={f.status} diff={f.diff} truncated={f.truncated} binary={f.binary} open={files.length <= 5} />
            ))}
          </div>
        </>
      )}
      {note && <p class="muted">{note}</p>}
    </div>
  );
}

function Conflicts({ list }: { list: Conflict[] }) {
  return (
    <div class="cx-conflicts" role="alert">
      <p>
        <strong>Nothing was changed.</strong> {list.length === 1 ? "This file has" : "These files have"} changed since the journal's version, so
        writing would lose what is there now:
      </p>
      <ul aria-label="Conflicting files">
        {list.map((c) => (
          <li key={c.path}>
            <code>{c.path}</code> <span class="muted">{CONFLICT_REASONS[c.reason] ?? c.reason}</span>
          </li>
        ))}
      </ul>
      <p>
        <strong>Overwrite after a snapshot</strong> first commits the files as they are now to the journal (a snapshot you can restore later), then
        writes over them. Files the journal holds no copy of (over the size cap, ignored, nested repositories) are kept as they are, even then.
      </p>
    </div>
  );
}

function Outcome({ r, forced }: { r: OpResult; forced: boolean }) {
  return (
    <div class="cx-outcome" role="status">
      <p>
        <strong>Done.</strong> {r.changed.length} {r.changed.length === 1 ? "file" : "files"} written
        {r.turn_number ? ` (turn ${r.turn_number} undone)` : ""}.
      </p>
      {r.changed.length > 0 && (
        <ul aria-label="Files written">
          {r.changed.map((c) => (
            <li key={c.path}>
              <span class={`dstatus s-${c.status}`}>{c.status}</span> {c.path}
            </li>
          ))}
        </ul>
      )}
      {r.saved && (
        <p>
          Your previous state was saved first as snapshot <code>{r.saved.slice(0, 12)}</code>.
        </p>
      )}
      {forced && r.overwritten && r.overwritten.length > 0 && <p>Overwritten (their versions are in the snapshot): {r.overwritten.map((c) => c.path).join(", ")}</p>}
      {r.kept && r.kept.length > 0 && <p>Kept as they are (the journal has no copy of them): {r.kept.map((c) => c.path).join(", ")}</p>}
    </div>
  );
}
