// Terminal ids of a session: the first terminal is the session id itself (as
// the API expects: `session=<session_id>`), further ones `<session_id>:2`,
// `<session_id>:3`... (docs/api.md: letters, digits, `.`, `_`, `:`, `-`, up to
// 128 characters).

export interface TerminalInfo {
  session: string;
  pid?: number;
  cwd?: string;
  started?: string;
  clients?: number;
  host?: string;
}

/** The number of terminal id within session sid (1 for the session's own), or 0 when it is not one of its terminals. */
export function terminalNumber(sid: string, id: string): number {
  if (id === sid) return 1;
  if (!id.startsWith(sid + ":")) return 0;
  const rest = id.slice(sid.length + 1);
  if (!/^[1-9][0-9]{0,5}$/.test(rest)) return 0;
  const n = Number(rest);
  return n >= 2 ? n : 0;
}

/** The id of terminal n of session sid. */
export function terminalId(sid: string, n: number): string {
  return n === 1 ? sid : `${sid}:${n}`;
}

/** The ids of session sid among the listed terminals and those open here, in order of their number. */
export function sessionTerminals(sid: string, listed: TerminalInfo[], open: string[]): string[] {
  const ids = new Set<string>();
  for (const t of listed) if (terminalNumber(sid, t.session) > 0) ids.add(t.session);
  for (const id of open) if (terminalNumber(sid, id) > 0) ids.add(id);
  return [...ids].sort((a, b) => terminalNumber(sid, a) - terminalNumber(sid, b));
}

/** The id of a new terminal of session sid: the smallest free number from 2 (1 when the session's own is free). */
export function nextTerminalId(sid: string, taken: string[]): string {
  const used = new Set(taken.map((id) => terminalNumber(sid, id)));
  let n = 1;
  while (used.has(n)) n++;
  return terminalId(sid, n);
}
