// The log, 50 commits at a time, and the commit chosen in it (git show: its
// message header and its patch in the shared diff view).

import { useEffect, useState } from "preact/hooks";
import type { ApiError } from "../../lib/api";
import { DiffView } from "../../ui/DiffView";
import { log, refList, show, type Commit } from "./api";

const PAGE = 50;

export function Log({ cwd, tick }: { cwd: string; tick: number }) {
  const [commits, setCommits] = useState<Commit[]>([]);
  const [more, setMore] = useState(false);
  const [err, setErr] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [open, setOpen] = useState<string | null>(null);
  const [shown, setShown] = useState<{ rev: string; commit: Commit; diff: string } | null>(null);
  const [showErr, setShowErr] = useState<string | null>(null);

  const page = async (skip: number) => {
    setLoading(true);
    try {
      const r = await log(cwd, skip, PAGE);
      setCommits((c) => (skip ? [...c, ...r.commits] : r.commits));
      setMore(r.commits.length === PAGE);
      setErr(null);
    } catch (e) {
      setErr((e as ApiError).message);
    } finally {
      setLoading(false);
    }
  };
  useEffect(() => void page(0), [cwd, tick]);

  useEffect(() => {
    if (!open) return;
    let live = true;
    setShowErr(null);
    show(cwd, open).then(
      (r) => live && setShown({ rev: open, ...r }),
      (e) => live && setShowErr((e as ApiError).message),
    );
    return () => {
      live = false;
    };
  }, [open, cwd]);

  if (err)
    return (
      <p class="gerr pad" role="alert">
        {err}
      </p>
    );
  return (
    <div class="gsplit">
      <div class="glist">
        <ol class="glog" aria-label="Commits">
          {commits.map((c) => (
            <li key={c.commit}>
              <button type="button" class={`gcommit${open === c.commit ? " on" : ""}`} aria-pressed={open === c.commit} onClick={() => setOpen(c.commit)}>
                <span class="gsubject">{c.subject}</span>
                <span class="gmeta muted">
                  <code>{c.commit.slice(0, 8)}</code> · {c.author_name} · {new Date(c.time).toLocaleString()}
                  {refList(c.refs).map((r) => (
                    <span key={r} class="gref">
                      {r}
                    </span>
                  ))}
                </span>
              </button>
            </li>
          ))}
        </ol>
        {loading && (
          <p class="muted pad" role="status">
            Reading the log…
          </p>
        )}
        {!loading && commits.length === 0 && <p class="muted pad">No commits yet.</p>}
        {more && !loading && (
          <button type="button" class="mini gmore" onClick={() => page(commits.length)}>
            Older commits
          </button>
        )}
      </div>
      <div class="gdiff" role="region" aria-label="Commit">
        {!open && <p class="muted pad">Choose a commit to see its changes.</p>}
        {showErr && (
          <p class="gerr pad" role="alert">
            {showErr}
          </p>
        )}
        {open && !showErr && shown?.rev !== open && (
          <p class="muted pad" role="status">
            Reading the commit…
          </p>
        )}
        {shown && shown.rev === open && (
          <>
            <div class="gshow-head">
              <h3>{shown.commit.subject}</h3>
              <p class="muted">
                <code>{shown.commit.commit}</code> · {shown.commit.author_name} &lt;{shown.commit.author_email}&gt; · {new Date(shown.commit.time).toLocaleString()}
              </p>
            </div>
            <DiffView patch={shown.diff} emptyText="This commit changes no file." />
          </>
        )}
      </div>
    </div>
  );
}
