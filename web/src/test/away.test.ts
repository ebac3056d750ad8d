import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { signal } from "@preact/signals";
import { AwayWatch, readSeen, summarize, turnsAfter, writeSeen } from "../state/away";
import { SessionStore } from "../state/session";

const ID = "K7QZ3XH2M4A5B6C7D2E3F4G5H6";
const prompt = (line: number) => ({ type: "message_stored" as const, message: { role: "user" as const, content: `p${line}` }, line });
const result = (line: number, over: any = {}) => ({ type: "agent_message" as const, line, data: { type: "result", subtype: "success", duration_ms: 1000, total_cost_usd: 0.1 * line, usage: {}, ...over } });
const diff = (path: string, a: number, d: number, status = "M") => ({ path, status, additions: a, deletions: d, diff: "" });
const commit = (n: number, line: number, diffs: any[]) => ({ commit: "c" + n, parents: [], time: "", subject: "", kind: "turn", session_id: ID, turn_number: n, turn_id: `${ID}:${line}`, diffs });

function twoTurns() {
  const s = new SessionStore(ID);
  s.apply(prompt(1));
  s.apply(result(2, { total_cost_usd: 0.01 }));
  s.apply(prompt(3));
  s.apply(result(4, { total_cost_usd: 0.03, duration_ms: 2500 }));
  s.apply(prompt(5));
  s.apply(result(6, { is_error: true, subtype: "error_during_execution", total_cost_usd: 0.04, duration_ms: 500 }));
  return s;
}

beforeEach(() => localStorage.clear());
afterEach(() => {
  vi.unstubAllGlobals();
  vi.useRealTimers();
});

describe("the away summary", () => {
  it("finds the turns whose result came after the seen line", () => {
    const s = twoTurns();
    const t = turnsAfter(s.allBlocks(), 3);
    expect(t.map((x) => [x.promptLine, x.resultLine, x.isError])).toEqual([
      [3, 4, false],
      [5, 6, true],
    ]);
    expect(t[0].cost).toBeCloseTo(0.02);
    expect(turnsAfter(s.allBlocks(), 6)).toEqual([]);
  });
  it("sums files from the journal, cost and duration from analytics or the results", () => {
    const s = twoTurns();
    const turns = turnsAfter(s.allBlocks(), 2);
    const journal = [commit(1, 1, [diff("a.go", 9, 9)]), commit(2, 3, [diff("a.go", 2, 1), diff("b.go", 5, 0, "A")]), commit(3, 5, [diff("a.go", 1, 1, "D")])] as any;
    const rows = [{ id: `${ID}:3`, turn_number: 2, cost: 0.5, duration_ms: 3000 }];
    const sum = summarize(ID, turns, journal, rows);
    expect(sum.turns).toBe(2);
    expect(sum.errors).toBe(1);
    expect(sum.files).toEqual([
      { path: "a.go", status: "D", additions: 3, deletions: 2 },
      { path: "b.go", status: "A", additions: 5, deletions: 0 },
    ]);
    expect([sum.additions, sum.deletions]).toEqual([8, 2]);
    // Turn 2 from analytics (0.5, 3 s), turn 3 from its result (0.01, 0.5 s).
    expect(sum.cost).toBeCloseTo(0.51);
    expect(sum.durationMs).toBe(3500);
    expect(sum.turnNumbers).toEqual([2, 3]);
  });
  it("says nothing of cost or duration no turn reported", () => {
    const sum = summarize(ID, [{ promptLine: 1, resultLine: 2, isError: false }], [], []);
    expect([sum.cost, sum.durationMs, sum.files.length]).toEqual([null, null, 0]);
  });
  it("keeps the seen line per session, never going back, and forgets the oldest", () => {
    expect(readSeen("a")).toBeNull();
    writeSeen("a", 5, 1);
    writeSeen("a", 3, 2);
    expect(readSeen("a")).toBe(5);
    for (let i = 0; i < 310; i++) writeSeen(`s${i}`, 1, 10 + i);
    expect(readSeen("a")).toBeNull();
    expect(readSeen("s309")).toBe(1);
  });

  it("shows turns that ended while the tab was hidden when it is visible again, and is dismissable", async () => {
    const calls: string[] = [];
    vi.stubGlobal(
      "fetch",
      vi.fn(async (url: string) => {
        calls.push(url);
        if (url.includes("/changes")) return new Response(JSON.stringify({ session_id: ID, turns: [commit(2, 3, [diff("x.txt", 1, 0, "A")])] }));
        return new Response(JSON.stringify({ turns: [] }));
      }),
    );
    let vis: DocumentVisibilityState = "visible";
    Object.defineProperty(document, "visibilityState", { configurable: true, get: () => vis });
    writeSeen(ID, 2); // opened here before, up to line 2
    const s = new SessionStore(ID);
    s.apply(prompt(1));
    s.apply(result(2));
    const loading = signal(true);
    const w = new AwayWatch(ID, s, loading);
    const stop = w.start();
    loading.value = false;
    expect(w.summary.value).toBeNull(); // nothing new since line 2
    s.apply(prompt(3));
    expect(readSeen(ID)).toBe(3); // seen while visible
    vis = "hidden";
    document.dispatchEvent(new Event("visibilitychange"));
    s.apply(result(4, { duration_ms: 4200 }));
    expect(readSeen(ID)).toBe(3); // not seen: hidden
    vis = "visible";
    document.dispatchEvent(new Event("visibilitychange"));
    await vi.waitFor(() => expect(w.summary.value).not.toBeNull());
    expect(w.summary.value!.turns).toBe(1);
    expect(w.summary.value!.files.map((f) => f.path)).toEqual(["x.txt"]);
    expect(w.summary.value!.durationMs).toBe(4200);
    expect(readSeen(ID)).toBe(4);
    expect(calls.some((c) => c.includes(`/api/turns?session=${ID}`))).toBe(true);
    w.dismiss();
    expect(w.summary.value).toBeNull();
    stop();
    delete (document as any).visibilityState;
  });
  it("shows turns that ended after the tab was closed at the next open; none for a session never opened here", async () => {
    vi.stubGlobal("fetch", vi.fn(async () => new Response(JSON.stringify({ turns: [] }))));
    const s = twoTurns();
    const fresh = new AwayWatch(ID, s, signal(false));
    fresh.start()();
    await Promise.resolve();
    expect(fresh.summary.value).toBeNull();
    expect(readSeen(ID)).toBe(6);
    localStorage.clear();
    writeSeen(ID, 3); // closed after the second prompt
    const w = new AwayWatch(ID, s, signal(true));
    const loading = (w as any).loading;
    w.start();
    loading.value = false;
    await vi.waitFor(() => expect(w.summary.value?.turns).toBe(2));
  });
});
