// The conversation's turn chips: what each turn changed on disk, read from
// the shadow journal (/api/sessions/{id}/changes: the agent's edits and
// whatever its commands changed), shown under the turn's prompt as a button
// "Changes of turn N" that opens the turn in the Changes pane. The journal is
// read when the conversation opens and again when a turn ends (shadow
// commits the turn a moment after the result, so a few spaced retries follow
// until the turn shows up); never on a timer otherwise. No diff code here:
// the pane loads it.

import { signal } from "@preact/signals";
import { ApiError, get, q } from "../lib/api";
import { chipText, promptLine, undoneSet, type SessionChanges } from "../lib/journal";
import { navigate } from "../state/app";

export interface Chip {
  turn: number;
  text: string;
  undone: boolean;
}

/** Waits between the reads that follow a turn's end (ms). */
const RETRIES = [300, 700, 1500, 3000, 6000, 12000];

export class TurnJournal {
  /** Chips by the prompt's log line. */
  readonly byLine = signal<Map<number, Chip>>(new Map());
  private timer: ReturnType<typeof setTimeout> | null = null;
  private seq = 0;

  constructor(readonly sessionId: string) {}

  /** Reads the journal once; resolves to the prompt lines it knows. */
  async refresh(): Promise<Set<number>> {
    const seq = ++this.seq;
    let r: SessionChanges;
    try {
      r = await get<SessionChanges>(`/api/sessions/${q(this.sessionId)}/changes`);
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) r = { session_id: this.sessionId, project: null as any, turns: [] };
      else return new Set(this.byLine.peek().keys());
    }
    const undone = undoneSet(r.turns);
    const m = new Map<number, Chip>();
    for (const t of r.turns) {
      const line = promptLine(t);
      if (t.kind !== "turn" || !line || !t.turn_number) continue;
      m.set(line, { turn: t.turn_number, text: chipText(t.diffs), undone: undone.has(t.commit) });
    }
    if (seq === this.seq) this.byLine.value = m;
    return new Set(m.keys());
  }

  /**
   * A turn ended (its result came): read the journal, and again a few times,
   * spaced out, until it holds a turn it did not hold before, or the retries
   * run out (a turn that changed nothing makes no commit).
   */
  turnEnded() {
    this.cancel();
    const before = new Set(this.byLine.peek().keys());
    let i = 0;
    const step = async () => {
      const lines = await this.refresh();
      if ([...lines].some((l) => !before.has(l)) || i >= RETRIES.length) return;
      this.timer = setTimeout(step, RETRIES[i++]);
    };
    this.timer = setTimeout(step, 150);
  }

  cancel() {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}

/** The chip of the turn of the prompt at line, if the journal has one. */
export function TurnChip({ journal, line }: { journal: TurnJournal; line: number }) {
  const c = journal.byLine.value.get(line);
  if (!c) return null;
  const href = `/s/${journal.sessionId}/changes?turn=${c.turn}`;
  return (
    <button
      type="button"
      class={`turnchip${c.undone ? " undone" : ""}`}
      aria-label={`Changes of turn ${c.turn}`}
      title={c.undone ? "Undone. Open this turn's changes" : "Open this turn's changes"}
      onClick={() => navigate(href)}
    >
      <span class="tc-turn">Turn {c.turn}</span> <span class="tc-text">{c.text}</span>
      {c.undone && <span class="tc-undone"> · undone</span>}
    </button>
  );
}
