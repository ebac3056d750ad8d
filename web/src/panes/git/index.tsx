// The git pane (issue 18 item 5): the project's own repository, read only.
// Status (staged, unstaged, untracked, unmerged), the work-tree and staged
// diffs (whole, or one file's), the log and each commit's show, all in the
// shared diff view. A directory outside any work tree shows the server's
// message as it is. The pane reads again each time it is shown.

import { useEffect, useState } from "preact/hooks";
import type { ApiError } from "../../lib/api";
import { sessionInfo } from "../../state/app";
import type { PaneProps } from "../../ui/Panes";
import { Log } from "./Log";
import { StatusView } from "./Status";
import "./git.css";

export default function GitPane({ sessionId, visible }: PaneProps) {
  const [cwd, setCwd] = useState<string | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const [tab, setTab] = useState<"status" | "log">("status");
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (!sessionId) return;
    sessionInfo(sessionId).then(
      (s) => setCwd(s.cwd),
      (e) => setErr((e as ApiError).message),
    );
  }, [sessionId]);
  // Shown again: read again (the agent or a shell may have changed the repository meanwhile).
  useEffect(() => {
    if (visible) setTick((t) => t + 1);
  }, [visible]);
  if (!sessionId) return <p class="muted pad">Open a session first: the git pane shows its project's repository.</p>;
  if (err)
    return (
      <p class="gerr pad" role="alert">
        {err}
      </p>
    );
  if (!cwd)
    return (
      <p class="muted pad" role="status">
        Loading the session…
      </p>
    );
  return (
    <div class="git" role="region" aria-label="Git">
      <div class="gbar">
        <div class="gtabs" role="tablist" aria-label="Git views">
          <button type="button" role="tab" aria-selected={tab === "status"} class="gtab" onClick={() => setTab("status")}>
            Status
          </button>
          <button type="button" role="tab" aria-selected={tab === "log"} class="gtab" onClick={() => setTab("log")}>
            Log
          </button>
        </div>
        <button type="button" class="mini" onClick={() => setTick(tick + 1)}>
          Refresh
        </button>
      </div>
      <div class="gbody" role="tabpanel" aria-label={tab === "status" ? "Status" : "Log"}>
        {tab === "status" ? <StatusView cwd={cwd} tick={tick} /> : <Log cwd={cwd} tick={tick} />}
      </div>
    </div>
  );
}
