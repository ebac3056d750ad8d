// The link from a session made by "Continue here" back to the terminal
// session it continues, from the session object's cli_session (stored by the
// server, so it survives a reload or a link shared without ?from=).

import { useState } from "preact/hooks";
import type { Session } from "../protocol/types";
import { navigate } from "../state/app";

const CLI_NAMES: Record<string, string> = { claude: "Claude Code", codex: "Codex" };

/** Where the transcript of the session's CLI session is, or null. */
export function transcriptHref(sess: Session | null | undefined): string | null {
  const c = sess?.cli_session;
  if (!c || (c.provider !== "claude" && c.provider !== "codex") || !c.id) return null;
  return `/cli/${c.provider}/${encodeURIComponent(c.id)}`;
}

/** Why the session's provider cannot change, for the header's tooltip and line. */
export function providerLockReason(sess: Session | null | undefined): string {
  const c = sess?.cli_session;
  if (c) return `Continues the ${CLI_NAMES[c.provider] ?? c.provider} session ${c.id} from a terminal: another provider could not resume it`;
  return "The provider is locked after the first turn";
}

/** The banner above a continued session's own lines. */
export function ContinuedFrom({ session }: { session: Session | null | undefined }) {
  const [hidden, setHidden] = useState(false);
  const href = transcriptHref(session);
  if (!href || hidden) return null;
  return (
    <div class="banner" role="status">
      <span>
        {session && session.turns > 0
          ? "Continues a session run in a terminal: its history before this session is in "
          : "Continues a session run in a terminal: its first prompt here resumes it, and its history stays in "}
        <a href={href} onClick={(e) => (e.preventDefault(), navigate(href))}>
          the terminal session's transcript
        </a>
        .
      </span>
      <button type="button" class="mini" aria-label="Dismiss" onClick={() => setHidden(true)}>
        ×
      </button>
    </div>
  );
}
