// "While you were away": the turns of a session that ended while this
// browser did not show it (the tab hidden, or closed, when the result came),
// summed up when the user is back: files changed (the shadow journal), cost
// and duration (the turn's result, or its analytics row when there is one).
//
// What the user has seen is the last log line applied while the page was
// visible, kept per session in localStorage, so a tab closed mid-turn knows
// at its next open which results came after. A session never opened in this
// browser has no mark: no summary (its whole history is not "news").

import { signal, type Signal } from "@preact/signals";
import { get, q } from "../lib/api";
import { promptLine, type SessionChanges, type TurnChanges } from "../lib/journal";
import type { Block, SessionStore } from "./session";

const KEY = "svc-seen-lines";
/** Sessions remembered (the least recently seen are forgotten). */
const MAX_SEEN = 300;

type SeenMap = Record<string, [line: number, at: number]>;

function readAll(): SeenMap {
  try {
    const v = JSON.parse(localStorage.getItem(KEY) ?? "{}");
    return v && typeof v === "object" ? v : {};
  } catch {
    return {};
  }
}

/** The last line of session id seen in this browser, or null if never opened here. */
export function readSeen(id: string): number | null {
  const e = readAll()[id];
  return Array.isArray(e) && typeof e[0] === "number" ? e[0] : null;
}

/** Marks line as seen (never going back). */
export function writeSeen(id: string, line: number, now = Date.now()) {
  const all = readAll();
  const old = all[id]?.[0] ?? 0;
  if (old >= line && all[id]) return;
  all[id] = [Math.max(old, line), now];
  const ids = Object.keys(all);
  if (ids.length > MAX_SEEN) {
    ids.sort((a, b) => all[a][1] - all[b][1]);
    for (const k of ids.slice(0, ids.length - MAX_SEEN)) delete all[k];
  }
  try {
    localStorage.setItem(KEY, JSON.stringify(all));
  } catch {
    /* private mode: no summaries */
  }
}

/** A turn that ended after the seen line. */
export interface AwayTurn {
  promptLine: number;
  resultLine: number;
  cost?: number;
  durationMs?: number;
  isError: boolean;
}

/** The turns whose result came after line seen, in order, from the conversation's blocks. */
export function turnsAfter(blocks: Block[], seen: number): AwayTurn[] {
  const out: AwayTurn[] = [];
  let prompt = 0;
  for (const b of blocks) {
    if (b.kind === "user") prompt = b.line;
    else if (b.kind === "result" && b.line > seen) out.push({ promptLine: prompt, resultLine: b.line, cost: b.cost, durationMs: b.durationMs, isError: b.isError });
  }
  return out;
}

/** A turn's row of GET /api/turns (the fields used here). */
export interface TurnRow {
  id: string;
  turn_number?: number | null;
  cost?: number;
  duration_ms?: number | null;
  is_error?: boolean;
}

export interface AwayFile {
  path: string;
  status: string;
  additions: number;
  deletions: number;
}

export interface AwaySummary {
  turns: number;
  errors: number;
  /** Summed; null when no turn reported one. */
  cost: number | null;
  durationMs: number | null;
  files: AwayFile[];
  additions: number;
  deletions: number;
  /** The journal's turn numbers of these turns (for the Changes pane). */
  turnNumbers: number[];
}

/**
 * Sums the away turns up: the journal's files of their prompts (one entry per
 * path, the counts added over the turns, the last status), and the cost and
 * duration of each turn from analytics when it has the turn, else from its
 * result.
 */
export function summarize(sessionId: string, turns: AwayTurn[], journal: TurnChanges[], rows: TurnRow[]): AwaySummary {
  const lines = new Set(turns.map((t) => t.promptLine));
  const byId = new Map(rows.map((r) => [r.id, r]));
  let cost: number | null = null;
  let dur: number | null = null;
  let errors = 0;
  const numbers = new Set<number>();
  for (const t of turns) {
    const r = byId.get(`${sessionId}:${t.promptLine}`);
    const c = typeof r?.cost === "number" && r.cost > 0 ? r.cost : t.cost;
    const d = typeof r?.duration_ms === "number" ? r.duration_ms : t.durationMs;
    if (typeof c === "number") cost = (cost ?? 0) + c;
    if (typeof d === "number") dur = (dur ?? 0) + d;
    if (t.isError || r?.is_error) errors++;
    if (typeof r?.turn_number === "number") numbers.add(r.turn_number);
  }
  const files = new Map<string, AwayFile>();
  for (const c of journal) {
    if (c.kind !== "turn" || !lines.has(promptLine(c))) continue;
    if (c.turn_number) numbers.add(c.turn_number);
    for (const d of c.diffs ?? []) {
      const f = files.get(d.path) ?? { path: d.path, status: d.status, additions: 0, deletions: 0 };
      f.additions += d.additions;
      f.deletions += d.deletions;
      f.status = d.status;
      files.set(d.path, f);
    }
  }
  const list = [...files.values()].sort((a, b) => a.path.localeCompare(b.path));
  return {
    turns: turns.length,
    errors,
    cost,
    durationMs: dur,
    files: list,
    additions: list.reduce((n, f) => n + f.additions, 0),
    deletions: list.reduce((n, f) => n + f.deletions, 0),
    turnNumbers: [...numbers].sort((a, b) => a - b),
  };
}

/**
 * Watches one open session: marks what the user sees while the page is
 * visible, and sets summary when turns ended unseen (found at the first load,
 * or on coming back to the tab).
 */
export class AwayWatch {
  readonly summary = signal<AwaySummary | null>(null);
  private disposers: (() => void)[] = [];
  private seq = 0;
  /** The seen line of the summary shown (until dismissed): a later check sums from there. */
  private since: number | null = null;

  constructor(
    private readonly id: string,
    private readonly store: SessionStore,
    private readonly loading: Signal<boolean>,
  ) {}

  start() {
    const atOpen = readSeen(this.id);
    let opened = false;
    const visible = () => document.visibilityState === "visible";
    this.disposers.push(
      this.loading.subscribe((l) => {
        if (l || opened) return;
        opened = true;
        if (atOpen !== null) this.check(atOpen);
        if (visible()) writeSeen(this.id, this.store.lastLine);
      }),
    );
    this.disposers.push(
      this.store.lastLineSig.subscribe((line) => {
        if (opened && visible()) writeSeen(this.id, line);
      }),
    );
    const onVis = () => {
      if (!opened || !visible()) return;
      const seen = readSeen(this.id);
      if (seen !== null) this.check(seen);
      writeSeen(this.id, this.store.lastLine);
    };
    document.addEventListener("visibilitychange", onVis);
    this.disposers.push(() => document.removeEventListener("visibilitychange", onVis));
    return () => this.stop();
  }

  stop() {
    this.seq++;
    for (const d of this.disposers) d();
    this.disposers = [];
  }

  dismiss() {
    this.seq++;
    this.since = null;
    this.summary.value = null;
  }

  /** Sums up the turns that ended after line seen, if any (with the journal and analytics). */
  private async check(seen: number) {
    // Turns already summed up and not dismissed stay in the one summary.
    const from = Math.min(seen, this.since ?? seen);
    const turns = turnsAfter(this.store.allBlocks(), from);
    if (turns.length === 0) return;
    this.since = from;
    const seq = ++this.seq;
    const show = async () => {
      const [journal, rows] = await Promise.all([
        get<SessionChanges>(`/api/sessions/${q(this.id)}/changes`).then((r) => r.turns ?? [], () => [] as TurnChanges[]),
        get<{ turns: TurnRow[] }>(`/api/turns?session=${q(this.id)}&limit=${Math.min(500, turns.length + 5)}`).then((r) => r.turns ?? [], () => [] as TurnRow[]),
      ]);
      if (seq !== this.seq) return null;
      const s = summarize(this.id, turns, journal, rows);
      this.summary.value = s;
      return s;
    };
    const s = await show();
    // The journal commits a turn a moment after its result: read once more if it lacks one.
    if (s && s.turnNumbers.length < turns.length) setTimeout(() => seq === this.seq && show(), 1500);
  }
}
