// The shadow journal's answers (docs/api.md "Shadow journal") and what the
// conversation's turn chips need of them. Small on purpose: the chat path
// imports it; the diff views and the Changes pane load on demand.

import { signal } from "@preact/signals";

/** Bumped after an undo or restore, so every view of the journal reads it again. */
export const journalEdits = signal(0);

export interface JournalChange {
  status: string;
  path: string;
}

/** A journal commit as the read routes answer it. */
export interface JournalCommit {
  commit: string;
  parents: string[];
  time: string;
  subject: string;
  kind?: "baseline" | "turn" | "undo" | "restore" | "snapshot" | string;
  session_id?: string;
  turn_number?: number;
  /** `<session_id>:<line of the prompt>`. */
  turn_id?: string;
  /** On an undo: the turn commit it reverted. */
  undoes?: string;
  files?: JournalChange[];
}

export interface JournalFileDiff {
  path: string;
  status: string;
  additions: number;
  deletions: number;
  binary?: boolean;
  diff: string;
  truncated?: boolean;
  private?: boolean;
}

export interface TurnChanges extends JournalCommit {
  diffs: JournalFileDiff[];
}

export interface JournalProject {
  path: string;
  hash: string;
  name: string;
  journal: string;
}

/** GET /api/sessions/{id}/changes. */
export interface SessionChanges {
  session_id: string;
  project: JournalProject;
  turns: TurnChanges[];
}

/** "+12 −3 in 4 files" of a commit's diffs. */
export function chipText(diffs: JournalFileDiff[]): string {
  let add = 0;
  let del = 0;
  for (const d of diffs) {
    add += d.additions;
    del += d.deletions;
  }
  const n = diffs.length;
  return `+${add} −${del} in ${n} ${n === 1 ? "file" : "files"}`;
}

/** The prompt line of a commit (from its turn_id), or 0. */
export function promptLine(c: JournalCommit): number {
  const id = c.turn_id ?? "";
  const i = id.lastIndexOf(":");
  const n = i >= 0 ? Number(id.slice(i + 1)) : NaN;
  return Number.isInteger(n) && n > 0 ? n : 0;
}

/** The turn commits an undo commit of the list reverted. */
export function undoneSet(turns: JournalCommit[]): Set<string> {
  return new Set(turns.filter((t) => t.kind === "undo" && t.undoes).map((t) => t.undoes!));
}
