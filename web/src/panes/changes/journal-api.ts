// The journal routes the Changes pane calls (docs/api.md "Shadow journal"),
// and the previews built from them.

import { createTwoFilesPatch } from "diff";
import { ApiError, get, post, q } from "../../lib/api";
import type { JournalCommit, JournalFileDiff, SessionChanges, TurnChanges } from "../../lib/journal";
import { restoreCandidates, sameVersion, undoPreview, undoPreviewNow, undoTarget, versionDiff, type OpResult, type UndoFileState, type Version } from "./model";

export const sessionChanges = (id: string) => get<SessionChanges>(`/api/sessions/${q(id)}/changes`);

export const journalLog = (cwd: string, limit = 1000) => get<{ commits: JournalCommit[] }>(`/api/shadow/log?cwd=${q(cwd)}&limit=${limit}`);

export const commitDiff = (cwd: string, commit: string) => get<TurnChanges>(`/api/shadow/diff?cwd=${q(cwd)}&commit=${q(commit)}`);

/** A file as the journal holds it at commit. */
export async function journalVersion(cwd: string, commit: string, path: string): Promise<Version> {
  try {
    const r = await get<{ encoding: string; content: string }>(`/api/shadow/file?cwd=${q(cwd)}&commit=${q(commit)}&path=${q(path)}`);
    return r.encoding === "utf-8" ? { kind: "text", text: r.content } : { kind: "opaque", why: "binary" };
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return { kind: "absent" };
    if (e instanceof ApiError && (e.status === 413 || e.status === 400)) return { kind: "opaque", why: e.message };
    throw e;
  }
}

/** A file as it is on disk now (/api/file). */
export async function diskVersion(cwd: string, path: string): Promise<Version> {
  try {
    const r = await get<{ content: string }>(`/api/file?path=${q(cwd.replace(/\/$/, "") + "/" + path)}`);
    return { kind: "text", text: r.content };
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return { kind: "absent" };
    if (e instanceof ApiError && [400, 403, 413, 415].includes(e.status)) return { kind: "opaque", why: e.message };
    throw e;
  }
}

/** Runs f over items, at most n at a time, in order of the answers' slots. */
async function pool<T, R>(items: T[], n: number, f: (x: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await f(items[i]);
      }
    }),
  );
  return out;
}

const makePatch = (path: string, a: string, b: string) => createTwoFilesPatch("a/" + path, "b/" + path, a, b, "", "", { context: 3 });

/** The most files a restore preview compares one by one. */
export const MAX_PREVIEW_FILES = 200;

/**
 * What restoring the whole tree to commit (the state before a turn) writes:
 * for each file the journal saw change since, its version now against the
 * one at commit.
 */
export async function restorePreview(cwd: string, turn: TurnChanges, commit: string, paths?: string[]): Promise<{ files: JournalFileDiff[]; note: string }> {
  let candidates = paths;
  if (!candidates) {
    const log = await journalLog(cwd);
    candidates = restoreCandidates(turn, log.commits);
  }
  const cut = candidates.length > MAX_PREVIEW_FILES;
  const list = candidates.slice(0, MAX_PREVIEW_FILES);
  const diffs = await pool(list, 6, async (p) => versionDiff(p, await diskVersion(cwd, p), await journalVersion(cwd, commit, p), makePatch));
  const files = diffs.filter((d): d is JournalFileDiff => d !== null);
  const note =
    (cut ? `Only the first ${MAX_PREVIEW_FILES} of ${candidates.length} files the journal saw change were compared. ` : "") +
    "Compared: every file the journal saw change since this turn began, as it is on disk now against its version before the turn. " +
    "A file changed outside any turn since the journal's last commit is not in this list: the restore stops and names it before writing anything.";
  return { files, note };
}

/**
 * The undo's preview: the turn's diff turned around, checked against the
 * files on disk (a file changed since the turn shows what the undo would
 * write over it, and is named: the journal refuses until forced).
 */
export async function undoSpecPreview(cwd: string, turn: TurnChanges): Promise<{ files: JournalFileDiff[]; warn?: string }> {
  if (turn.diffs.length > MAX_PREVIEW_FILES || !turn.parents[0]) return { files: undoPreview(turn) };
  const states = new Map<string, UndoFileState>();
  await pool(turn.diffs, 6, async (d) => {
    const [now, after] = await Promise.all([diskVersion(cwd, d.path), journalVersion(cwd, turn.commit, d.path)]);
    const st: UndoFileState = { now, after };
    if (!sameVersion(now, after)) st.before = await journalVersion(cwd, turn.parents[0], d.path);
    states.set(d.path, st);
  });
  const { files, changedSince } = undoPreviewNow(turn, states, makePatch);
  if (changedSince.length === 0) return { files };
  return {
    files,
    warn: `Changed since the turn: ${changedSince.join(", ")}. The journal will stop before writing anything and name ${changedSince.length === 1 ? "it" : "them"}; you can then overwrite after a snapshot.`,
  };
}

/**
 * Undoes the session's last turn, after checking that it is still turn (the
 * journal may have moved since the preview): otherwise nothing is sent.
 */
export async function undoTurn(sessionId: string, cwd: string, turn: TurnChanges, force: boolean): Promise<OpResult> {
  const now = undoTarget((await sessionChanges(sessionId)).turns);
  if (now?.commit !== turn.commit) {
    throw new Error(
      now ? `the journal moved on: an undo would now revert turn ${now.turn_number}, not turn ${turn.turn_number}. Close this and look again.` : "this session has no turn left to undo.",
    );
  }
  return post<OpResult>(`/api/shadow/undo?cwd=${q(cwd)}`, { session_id: sessionId, force });
}

export function restoreTo(cwd: string, commit: string, sessionId: string, force: boolean, path?: string): Promise<OpResult> {
  return post<OpResult>(`/api/shadow/restore?cwd=${q(cwd)}`, { commit, session_id: sessionId, force, ...(path ? { path } : {}) });
}
