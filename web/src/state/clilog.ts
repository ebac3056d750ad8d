// A terminal session's transcript as this page holds it: the records of one
// contiguous byte range of the file [start, end), read newest page first
// (GET /api/cli-sessions/{provider}/{id}/messages), earlier pages put in
// front as the user scrolls up, and lines the CLI appends read after `end`
// (long poll ?after=). Pure: the network and the rendering are elsewhere.

import type { StoredMessage } from "../protocol/types";

/** One answer of the messages route (libs/protocol CLIMessages; docs/api.md "CLI sessions"). */
export interface CliPage {
  messages: StoredMessage[];
  /** Byte offset of the first record returned (of `after` when none). */
  start: number;
  /** Byte offset after the last record returned. */
  end: number;
  /** The file's size when read. */
  size: number;
  has_more_before?: boolean;
}

export interface CliLog {
  /** Records in file order (by line), each line once. */
  messages: StoredMessage[];
  start: number;
  end: number;
  size: number;
  hasMoreBefore: boolean;
}

/** The log of the first (newest) page. */
export function firstPage(p: CliPage): CliLog {
  return { messages: byLine(p.messages), start: p.start, end: p.end, size: p.size, hasMoreBefore: !!p.has_more_before && p.start > 0 };
}

/**
 * Puts an earlier page (asked with before = log.start) in front. A page that
 * overlaps what is held gives only the lines not held; one that does not
 * reach log.start (the file changed under us) is refused: null, reload.
 */
export function prependPage(log: CliLog, p: CliPage): CliLog | null {
  if (p.end < log.start || p.start > log.start) return null;
  const first = log.messages[0]?.line ?? Infinity;
  const older = p.messages.filter((m) => m.line < first);
  return {
    messages: byLine([...older, ...log.messages]),
    start: Math.min(p.start, log.start),
    end: log.end,
    size: Math.max(log.size, p.size),
    hasMoreBefore: !!p.has_more_before && p.start > 0,
  };
}

/**
 * Adds the records a follow answer (asked with after = log.end) gave: the
 * log and the records that are new (to apply to the view as they come).
 * Records already held (a retried poll) are dropped. An answer that does not
 * start where the log ends is refused: null, reload.
 */
export function appendFollow(log: CliLog, p: CliPage): { log: CliLog; added: StoredMessage[] } | null {
  if (p.messages.length > 0 && p.start !== log.end) return null;
  const last = log.messages[log.messages.length - 1]?.line ?? 0;
  const added = byLine(p.messages.filter((m) => m.line > last));
  if (added.length === 0 && p.end <= log.end) return { log: { ...log, size: Math.max(log.size, p.size) }, added };
  return {
    log: { ...log, messages: [...log.messages, ...added], end: Math.max(log.end, p.end), size: Math.max(log.size, p.size, p.end) },
    added,
  };
}

/** The messages sorted by line, each line once (the first one given wins). */
export function byLine(msgs: StoredMessage[]): StoredMessage[] {
  const seen = new Set<number>();
  const out: StoredMessage[] = [];
  for (const m of msgs) {
    if (seen.has(m.line)) continue;
    seen.add(m.line);
    out.push(m);
  }
  return out.sort((a, b) => a.line - b.line);
}

/** How long to wait before polling again after the n-th failure in a row (ms). */
export function followBackoff(n: number): number {
  return Math.min(30000, 1000 * 2 ** Math.max(0, n - 1));
}
