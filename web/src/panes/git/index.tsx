// The git pane (issue 18 item 5): the project's own repository, read only.
// Status (staged, unstaged, untracked, unmerged), the work-tree and staged
// diffs (whole, or one file's), the log and each commit's show, all in the
// shared diff view. A directory outside any work tree shows the server's
// message as it is. The pane reads again each time it is shown.

import { useEffect, useState } from "preact/hooks";
import type { PaneProps } from "../../ui/Panes";
import { SessionCwd } from "../../ui/SessionCwd";
import { Log } from "./Log";
import { StatusView } from "./Status";
import "./git.css";

export default function GitPane({ sessionId, visible }: PaneProps) {
  return (
    <SessionCwd sessionId={sessionId} none="Open a session first: the git pane shows its project's repository." errClass="gerr">
      {(cwd) => <Git cwd={cwd} visible={visible} />}
    </SessionCwd>
  );
}

function Git({ cwd, visible }: { cwd: string; visible: boolean }) {
  const [tab, setTab] = useState<"status" | "log">("status");
  const [tick, setTick] = useState(0);
  // Shown again: read again (the agent or a shell may have changed the repository meanwhile).
  useEffect(() => {
    if (visible) setTick((t) => t + 1);
  }, [visible]);
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
