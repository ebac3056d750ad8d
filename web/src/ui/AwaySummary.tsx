// The summary at the top of a session of the turns that ended while the user
// was away (state/away.ts): how many, files changed, cost, duration; a link
// to the Changes pane; dismissable.

import { fmtCost, fmtDuration } from "../lib/format";
import type { AwayWatch } from "../state/away";
import { navigate } from "../state/app";

const SHOWN_FILES = 8;

export function AwaySummaryView({ watch, sessionId }: { watch: AwayWatch; sessionId: string }) {
  const s = watch.summary.value;
  if (!s) return null;
  const last = s.turnNumbers[s.turnNumbers.length - 1];
  const head = `${s.turns} ${s.turns === 1 ? "turn" : "turns"} ended`;
  return (
    <section class="away" role="region" aria-label="While you were away">
      <div class="awayhead">
        <strong>While you were away</strong>
        <button type="button" class="mini awayclose" onClick={() => watch.dismiss()}>
          Dismiss
        </button>
      </div>
      <p class="awayfacts">
        <span>{head}</span>
        {s.errors > 0 && <span class="awayerr">{s.errors === s.turns ? "with an error" : `${s.errors} with an error`}</span>}
        <span>
          {s.files.length === 0 ? (
            "no file changed"
          ) : (
            <>
              {s.files.length} {s.files.length === 1 ? "file" : "files"} changed <span class="plus">+{s.additions}</span> <span class="minus">−{s.deletions}</span>
            </>
          )}
        </span>
        {s.cost !== null && <span title="the cost of these turns">{fmtCost(s.cost)}</span>}
        {s.durationMs !== null && <span title="the time the agent worked">{fmtDuration(s.durationMs)}</span>}
      </p>
      {s.files.length > 0 && (
        <ul class="plain awayfiles" aria-label="Files changed">
          {s.files.slice(0, SHOWN_FILES).map((f) => (
            <li key={f.path}>
              <span class="path">{f.path}</span> <span class="plus">+{f.additions}</span> <span class="minus">−{f.deletions}</span>
            </li>
          ))}
          {s.files.length > SHOWN_FILES && <li class="muted">and {s.files.length - SHOWN_FILES} more</li>}
        </ul>
      )}
      {last !== undefined && s.files.length > 0 && (
        <button type="button" class="mini" onClick={() => navigate(`/s/${sessionId}/changes?turn=${last}`)}>
          Open the changes
        </button>
      )}
    </section>
  );
}
