import { afterEach, describe, expect, it, vi } from "vitest";
import { TurnJournal } from "../ui/TurnChips";

// /api/sessions/S/changes answers from a list the test changes; counts calls.
function serve(answers: (() => { status: number; body: any })[]) {
  let i = 0;
  const calls: string[] = [];
  vi.stubGlobal(
    "fetch",
    vi.fn(async (url: string) => {
      calls.push(url);
      const a = answers[Math.min(i++, answers.length - 1)]();
      return new Response(JSON.stringify(a.body), { status: a.status });
    }),
  );
  return calls;
}

const diff = (path: string, a: number, d: number) => ({ path, status: "M", additions: a, deletions: d, diff: "" });
const turn = (n: number, line: number, diffs: any[], over: any = {}) => ({ commit: "c" + n, parents: ["p"], time: "", subject: "", kind: "turn", session_id: "S", turn_number: n, turn_id: `S:${line}`, diffs, ...over });
const none = () => ({ status: 404, body: { error: "not_found" } });

afterEach(() => {
  vi.unstubAllGlobals();
  vi.useRealTimers();
});

describe("TurnJournal", () => {
  it("maps each turn commit to its prompt's line, with its numbers and undone mark", async () => {
    serve([
      () => ({
        status: 200,
        body: { session_id: "S", project: {}, turns: [turn(1, 3, [diff("a", 1, 0), diff("b", 2, 1), diff("c", 0, 2)]), turn(2, 9, [diff("a", 1, 1)]), { ...turn(2, 0, []), commit: "u", kind: "undo", undoes: "c2", turn_id: undefined }] },
      }),
    ]);
    const j = new TurnJournal("S");
    await j.refresh();
    expect([...j.byLine.value.entries()]).toEqual([
      [3, { turn: 1, text: "+3 −3 in 3 files", undone: false }],
      [9, { turn: 2, text: "+1 −1 in 1 file", undone: true }],
    ]);
  });

  it("a session the journal does not know has no chips", async () => {
    serve([none]);
    const j = new TurnJournal("S");
    await j.refresh();
    expect(j.byLine.value.size).toBe(0);
  });

  it("after a turn ends, reads again until the new turn shows up, then stops", async () => {
    vi.useFakeTimers();
    const one = { status: 200, body: { session_id: "S", project: {}, turns: [turn(1, 3, [diff("a", 1, 0)])] } };
    const two = { status: 200, body: { session_id: "S", project: {}, turns: [turn(1, 3, [diff("a", 1, 0)]), turn(2, 9, [diff("b", 1, 0)])] } };
    const calls = serve([() => one, () => one, () => one, () => two]);
    const j = new TurnJournal("S");
    await j.refresh(); // 1 call
    j.turnEnded();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(j.byLine.value.has(9)).toBe(true);
    expect(calls.length).toBe(4); // no read after the turn showed up
  });

  it("a turn that changed nothing: a bounded number of reads, then none", async () => {
    vi.useFakeTimers();
    const calls = serve([none]);
    const j = new TurnJournal("S");
    j.turnEnded();
    await vi.advanceTimersByTimeAsync(120_000);
    const n = calls.length;
    expect(n).toBeGreaterThan(1);
    expect(n).toBeLessThanOrEqual(7);
    await vi.advanceTimersByTimeAsync(120_000);
    expect(calls.length).toBe(n);
  });
});
