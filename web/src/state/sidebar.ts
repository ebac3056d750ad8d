// The sidebar's list, kept apart from the app state so it can be tested: the
// live sessions (from the events socket or /api/welcome) and, when the user
// asks for them, the archived ones (from GET /api/sessions?archived=true).

import type { SessionSummary } from "../protocol/types";

const newestFirst = (a: SessionSummary, b: SessionSummary) => (b.updated_at ?? "").localeCompare(a.updated_at ?? "");

/**
 * The sessions the sidebar shows: the live ones, plus the archived ones
 * when showArchived is set (a session in both lists counts as what the live
 * list says), newest first.
 */
export function sidebarSessions(live: SessionSummary[], archived: SessionSummary[], showArchived: boolean): SessionSummary[] {
  const out = live.filter((s) => !s.archived);
  if (showArchived) {
    const seen = new Set(out.map((s) => s.session_id));
    for (const s of archived) if (!seen.has(s.session_id)) out.push({ ...s, archived: true });
  }
  return out.sort(newestFirst);
}

/** The sessions grouped by working directory; favourites first in each. */
export function groupByProject(list: SessionSummary[], favs: Set<string>): Map<string, SessionSummary[]> {
  const fav = (s: SessionSummary) => Number(favs.has(s.session_id) || !!s.is_favorite);
  const groups = new Map<string, SessionSummary[]>();
  for (const s of [...list].sort((a, b) => fav(b) - fav(a))) {
    const k = s.cwd || "";
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k)!.push(s);
  }
  return groups;
}

/**
 * Files a changed session into the list its archived flag says: an archived
 * one leaves the live list and joins the archived list, an unarchived one the
 * other way round; fields the change lacks (live counts) are kept.
 */
export function fileSession(live: SessionSummary[], archived: SessionSummary[], s: SessionSummary): { live: SessionSummary[]; archived: SessionSummary[] } {
  const old = live.find((x) => x.session_id === s.session_id) ?? archived.find((x) => x.session_id === s.session_id);
  const merged = { ...old, ...s };
  const liveRest = live.filter((x) => x.session_id !== s.session_id);
  const archivedRest = archived.filter((x) => x.session_id !== s.session_id);
  if (s.archived) return { live: liveRest, archived: [merged, ...archivedRest].sort(newestFirst) };
  return { live: [merged, ...liveRest].sort(newestFirst), archived: archivedRest };
}
