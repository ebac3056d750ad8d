// The Changes pane's logic, apart from its views (tested in
// src/test/changes.test.ts): which turn an undo reverts, the preview of an
// undo (the turn's diff reversed) and of a restore (the tree at the turn's
// parent against the files as they are now), and the 409 answers.

import { ApiError } from "../../lib/api";
import { undoneSet, type JournalCommit, type JournalFileDiff, type TurnChanges } from "../../lib/journal";

/**
 * The turn an undo of the session reverts now: its newest turn commit that no
 * undo commit names (docs/api.md, POST /api/shadow/undo), or null.
 */
export function undoTarget(turns: TurnChanges[]): TurnChanges | null {
  const undone = undoneSet(turns);
  for (let i = turns.length - 1; i >= 0; i--) {
    const t = turns[i];
    if (t.kind === "turn" && !undone.has(t.commit)) return t;
  }
  return null;
}

const hunkRe = /^@@ -(\d+(?:,\d+)?) \+(\d+(?:,\d+)?) @@(.*)$/;

/**
 * One file's unified diff (git's format) turned around: what writing the old
 * version over the new one changes. Headers swap sides (a created file
 * becomes a deletion), hunk ranges swap, added lines become removed ones and
 * the other way round; in each run of changed lines the removed come first,
 * as git writes them.
 */
export function reverseDiff(diff: string): string {
  const lines = diff.split("\n");
  const out: string[] = [];
  let inHunk = false;
  // The current run of changed lines, turned around: removed (were added), added (were removed).
  let last: string[] | null = null;
  let removed: string[] = [];
  let added: string[] = [];
  const flush = () => {
    out.push(...removed, ...added);
    removed = [];
    added = [];
    last = null;
  };
  let oldName = "";
  for (const line of lines) {
    const h = hunkRe.exec(line);
    if (h) {
      flush();
      inHunk = true;
      out.push(`@@ -${h[2]} +${h[1]} @@${h[3]}`);
      continue;
    }
    if (line.startsWith("diff --git ")) {
      flush();
      inHunk = false;
      const m = /^diff --git (\S+|"[^"]*") (\S+|"[^"]*")$/.exec(line);
      out.push(m ? `diff --git ${m[1]} ${m[2]}` : line);
      continue;
    }
    if (!inHunk) {
      if (line.startsWith("--- ")) {
        oldName = line.slice(4);
        continue;
      }
      if (line.startsWith("+++ ")) {
        const newName = line.slice(4);
        const strip = (p: string) => (p.startsWith("a/") || p.startsWith("b/") ? p.slice(2) : p);
        out.push(`--- ${newName === "/dev/null" ? newName : "a/" + strip(newName)}`);
        out.push(`+++ ${oldName === "/dev/null" ? oldName : "b/" + strip(oldName)}`);
        continue;
      }
      if (line.startsWith("new file mode ")) out.push("deleted file mode " + line.slice(14));
      else if (line.startsWith("deleted file mode ")) out.push("new file mode " + line.slice(18));
      else if (line.startsWith("index ")) {
        const m = /^index ([0-9a-f]+)\.\.([0-9a-f]+)(.*)$/.exec(line);
        out.push(m ? `index ${m[2]}..${m[1]}${m[3]}` : line);
      } else if (line.startsWith("old mode ")) out.push("new mode " + line.slice(9));
      else if (line.startsWith("new mode ")) out.push("old mode " + line.slice(9));
      else out.push(line);
      continue;
    }
    const c = line[0];
    if (c === "+") {
      removed.push("-" + line.slice(1));
      last = removed;
    } else if (c === "-") {
      added.push("+" + line.slice(1));
      last = added;
    } else if (c === "\\") {
      // "\ No newline at end of file" belongs to the line before it.
      if (last) last.push(line);
      else out.push(line);
    } else {
      flush();
      out.push(line);
    }
  }
  flush();
  return out.join("\n");
}

const reverseStatus: Record<string, string> = { A: "D", D: "A" };

/** A journal file diff turned around (what putting its old version back does). */
export function reverseFileDiff(d: JournalFileDiff): JournalFileDiff {
  return {
    ...d,
    status: reverseStatus[d.status] ?? d.status,
    additions: d.deletions,
    deletions: d.additions,
    diff: d.diff ? reverseDiff(d.diff) : d.diff,
  };
}

/** What an undo of turn will do: each file the turn changed, put back (exact: undo writes the parent's version of exactly these files). */
export function undoPreview(turn: TurnChanges): JournalFileDiff[] {
  return turn.diffs.map(reverseFileDiff);
}

/** A file of a turn: now on disk, as the turn left it, as it was before the turn. */
export interface UndoFileState {
  now: Version;
  after: Version;
  before?: Version;
}

/** Whether two versions are known to be the same (an opaque one counts as the same: it cannot be told). */
export function sameVersion(a: Version, b: Version): boolean {
  if (a.kind === "opaque" || b.kind === "opaque") return true;
  if (a.kind === "absent" || b.kind === "absent") return a.kind === b.kind;
  return a.text === b.text;
}

/**
 * The undo's preview against the files as they are now: a file still as the
 * turn left it shows the turn's diff turned around; one changed since (listed
 * in changedSince: the journal will refuse until forced) shows what writing
 * its version from before the turn over what is there now changes.
 */
export function undoPreviewNow(
  turn: TurnChanges,
  states: Map<string, UndoFileState>,
  make: (path: string, a: string, b: string) => string,
): { files: JournalFileDiff[]; changedSince: string[] } {
  const files: JournalFileDiff[] = [];
  const changedSince: string[] = [];
  for (const d of turn.diffs) {
    const st = states.get(d.path);
    if (!st || sameVersion(st.now, st.after) || !st.before) {
      files.push(reverseFileDiff(d));
      continue;
    }
    changedSince.push(d.path);
    const vd = versionDiff(d.path, st.now, st.before, make);
    if (vd) files.push(vd);
  }
  return { files, changedSince };
}

/**
 * The paths a whole-tree restore to the state before turn may change, as far
 * as the journal knows: every file any commit made at or after the turn
 * changed (log: the commits of every branch, with their files). Files
 * changed outside the journal since its last commit are not in it: the
 * restore's conflict check lists them.
 */
export function restoreCandidates(turn: JournalCommit, log: JournalCommit[]): string[] {
  const since = Date.parse(turn.time);
  const paths = new Set<string>();
  for (const c of log) {
    if (c.commit !== turn.commit && !(Date.parse(c.time) >= since)) continue;
    for (const f of c.files ?? []) paths.add(f.path);
  }
  for (const d of (turn as TurnChanges).diffs ?? []) paths.add(d.path);
  return [...paths].sort();
}

/** A version of a file: its text, absent, or present but not shown as text (binary, too large). */
export type Version = { kind: "text"; text: string } | { kind: "absent" } | { kind: "opaque"; why: string };

/**
 * The diff of one file from now (cur) to what a restore writes (want), as a
 * journal file diff, or null when the restore leaves it as it is. make
 * builds the unified text (the diff library's createTwoFilesPatch).
 */
export function versionDiff(
  path: string,
  cur: Version,
  want: Version,
  make: (path: string, a: string, b: string) => string,
): JournalFileDiff | null {
  if (cur.kind === "absent" && want.kind === "absent") return null;
  if (cur.kind === "text" && want.kind === "text" && cur.text === want.text) return null;
  const status = cur.kind === "absent" ? "A" : want.kind === "absent" ? "D" : "M";
  if (cur.kind === "opaque" || want.kind === "opaque") {
    // Not comparable as text (binary, too large): listed, as it may change.
    return { path, status, additions: 0, deletions: 0, binary: true, diff: "" };
  }
  const a = cur.kind === "text" ? cur.text : "";
  const b = want.kind === "text" ? want.text : "";
  const diff = make(path, a, b);
  let additions = 0;
  let deletions = 0;
  for (const l of diff.split("\n")) {
    if (l.startsWith("+++") || l.startsWith("---")) continue;
    if (l.startsWith("+")) additions++;
    else if (l.startsWith("-")) deletions++;
  }
  return { path, status, additions, deletions, diff };
}

export interface Conflict {
  path: string;
  reason: string;
}

/** What an undo or restore answered. */
export interface OpResult {
  commit?: string;
  saved?: string;
  changed: { status: string; path: string }[];
  overwritten?: Conflict[];
  kept?: Conflict[];
  undone?: string;
  turn_number?: number;
}

/** How a failed undo or restore reads: a conflict list (the forced path may follow), or a plain refusal. */
export type OpFailure = { kind: "conflicts"; conflicts: Conflict[]; message: string } | { kind: "refused"; message: string };

export function opFailure(e: unknown): OpFailure {
  if (e instanceof ApiError && e.status === 409 && Array.isArray(e.body?.conflicts) && e.body.conflicts.length > 0) {
    return { kind: "conflicts", conflicts: e.body.conflicts as Conflict[], message: e.message };
  }
  return { kind: "refused", message: (e as Error).message || String(e) };
}

/** What each reason of a conflict means, in words. */
export const CONFLICT_REASONS: Record<string, string> = {
  modified: "changed since the journal's version",
  created: "created since the journal last looked",
  deleted: "deleted since the journal's version",
  private: "one of svc-code's private files: never written",
};

/** The turn commit of a session's changes with that turn number (the newest such). */
export function turnByNumber(turns: TurnChanges[], n: number): TurnChanges | null {
  for (let i = turns.length - 1; i >= 0; i--) if (turns[i].kind === "turn" && turns[i].turn_number === n) return turns[i];
  return null;
}
