import { describe, expect, it } from "vitest";
import type { ChatFrame, ConnectedFrame } from "../protocol/types";

const connected = (f: Partial<ConnectedFrame>): ChatFrame => ({ type: "connected", session_id: "S", cwd: "/", home: "/", workspace: "/", is_reconnect: false, agent_running: false, is_compacting: false, provider: "agent-sdk", provider_display_name: "Claude Code", provider_caps: { live_controls: true, images: true, resume: true }, provider_locked: false, permission_mode: "default", queue: [], ...f }) as ChatFrame;
import { frameOf, SessionStore } from "../state/session";

const ID = "K7QZ3XH2M4A5B6C7D2E3F4G5H6";
const prompt = (line: number, content: string) => ({ type: "message_stored" as const, message: { role: "user" as const, content }, line });
const assistant = (line: number, content: any[]) => ({ type: "agent_message" as const, line, data: { type: "assistant", message: { content } } });

describe("SessionStore: the frame reducer", () => {
  it("turns a turn's frames into blocks and pairs a tool call with its result", () => {
    const s = new SessionStore(ID);
    s.apply(connected({ session_id: ID, cwd: "/p", is_reconnect: false, agent_running: false, is_compacting: false, provider: "agent-sdk", provider_locked: false, permission_mode: "default" }));
    s.apply(prompt(1, "list files"));
    expect(s.agentRunning.value).toBe(true);
    s.apply({ type: "agent_message", line: 2, data: { type: "system", subtype: "init" } });
    s.apply(assistant(3, [{ type: "thinking", thinking: "hmm" }, { type: "text", text: "Let me look." }, { type: "tool_use", id: "tu1", name: "Bash", input: { command: "ls" } }]));
    s.apply({ type: "agent_message", line: 4, data: { type: "user", message: { content: [{ type: "tool_result", tool_use_id: "tu1", content: "a\nb", is_error: false }] } } });
    s.apply({ type: "agent_message", line: 5, data: { type: "result", subtype: "success", duration_ms: 1200, total_cost_usd: 0.01, usage: { input_tokens: 10, output_tokens: 5 } } });
    const kinds = s.allBlocks().map((b) => b.kind);
    expect(kinds).toEqual(["user", "thinking", "text", "tool", "result"]);
    const tool = s.allBlocks()[3];
    if (tool.kind !== "tool") throw new Error("not a tool");
    expect(tool.result.value).toEqual({ content: "a\nb", is_error: false, line: 4 });
    expect(s.agentRunning.value).toBe(false);
    expect(s.lastLine).toBe(5);
    const res = s.allBlocks()[4];
    expect(res.kind === "result" && res.durationMs).toBe(1200);
  });

  it("shows a storage outage as a status line until the server says storage is back", () => {
    const s = new SessionStore(ID);
    s.apply({ type: "storage", available: false, code: "storage_unavailable", message: "storage unavailable, retrying" });
    expect(s.storageDown.value).toBe("storage unavailable, retrying");
    s.apply({ type: "storage", available: true, message: "storage available again" });
    expect(s.storageDown.value).toBe(null);
    expect(s.allBlocks()).toHaveLength(0);
  });

  it("shows a gap notice (lines the log lost) as a warning", () => {
    const s = new SessionStore(ID);
    s.apply({ type: "message_stored", line: 12, message: { role: "notice", level: "warning", content: "lines 7 to 11 were lost", gap: { from_line: 7, to_line: 11 } } });
    const b = s.allBlocks()[0];
    expect(b.kind === "notice" && [b.tone, b.label, b.text]).toEqual(["warn", "gap", "lines 7 to 11 were lost"]);
  });

  it("drops a frame whose sid it has seen (replay after a reconnect)", () => {
    const s = new SessionStore(ID);
    expect(s.apply(prompt(1, "a"))).toBe(true);
    expect(s.apply(assistant(2, [{ type: "text", text: "b" }]))).toBe(true);
    // The same lines again, as a reconnect with an old after_line would give them.
    expect(s.apply(prompt(1, "a"))).toBe(false);
    expect(s.apply(assistant(2, [{ type: "text", text: "b" }]))).toBe(false);
    expect(s.allBlocks()).toHaveLength(2);
    expect(s.count.value).toBe(2);
  });

  it("shows a gap in the lines instead of hiding it", () => {
    const s = new SessionStore(ID);
    s.apply(prompt(1, "a"));
    s.apply(assistant(4, [{ type: "text", text: "after the gap" }]));
    const gap = s.allBlocks()[1];
    expect(gap.kind).toBe("gap");
    if (gap.kind === "gap") expect([gap.from, gap.to]).toEqual([2, 3]);
    // A late line inside the gap is still shown once.
    expect(s.apply(assistant(2, [{ type: "text", text: "late" }]))).toBe(true);
    expect(s.apply(assistant(2, [{ type: "text", text: "late" }]))).toBe(false);
  });

  it("does not call the start of a cleared session's log a gap", () => {
    const s = new SessionStore(ID);
    s.loadMessages([{ sid: `${ID}:40`, line: 40, kind: "user_prompt", payload: { role: "user", content: "after clear" } }]);
    expect(s.allBlocks().map((b) => b.kind)).toEqual(["user"]);
  });

  it("reads stored messages as the frames they were broadcast as", () => {
    expect(frameOf({ sid: "x:1", line: 1, kind: "user_prompt", payload: { role: "user", content: "hi" } })).toEqual({ type: "message_stored", message: { role: "user", content: "hi" }, line: 1 });
    expect(frameOf({ sid: "x:2", line: 2, kind: "agent", payload: { type: "result" } })).toEqual({ type: "agent_message", data: { type: "result" }, line: 2 });
    expect(frameOf({ sid: "x:3", line: 3, kind: "user_prompt", payload: { message: "old shape" } })).toMatchObject({ message: { role: "user", content: "old shape" } });
  });

  it("keeps unknown agent messages as JSON with their raw record", () => {
    const s = new SessionStore(ID);
    s.apply({ type: "agent_message", line: 1, data: { type: "brand_new_kind", x: 1 } });
    const b = s.allBlocks()[0];
    expect(b.kind).toBe("json");
    expect(b.raw).toEqual({ type: "brand_new_kind", x: 1 });
  });

  it("shows raw_output, stderr, errors and session_ended for what they are", () => {
    const s = new SessionStore(ID);
    s.apply({ type: "raw_output", line: "not json" });
    s.apply({ type: "stderr", line: "warning: x" });
    s.apply({ type: "error", message: "bad" });
    s.apply({ type: "session_ended", reason: "the agent exited", cause: "crashed", exit_code: 3 });
    const b = s.allBlocks();
    expect(b.map((x) => x.kind)).toEqual(["raw_output", "stderr", "notice", "notice"]);
    expect(b[3].kind === "notice" && b[3].tone).toBe("error");
    expect(s.ended.value).toBe("the agent exited");
  });

  it("says stopped after a stop, idle once a new prompt ran, and the heartbeat while silent", () => {
    const s = new SessionStore(ID);
    s.apply(prompt(1, "SLOW"));
    expect(s.agentState).toBe("working");
    s.apply({ type: "compact_progress", heartbeat: true, is_compacting: true, elapsed_ms: 50000, silent_ms: 42000 });
    expect(s.heartbeat.value).toBe("silent 42 s · compacting");
    s.apply({ type: "stopped", outcome: "acknowledged" });
    s.apply({ type: "agent_message", line: 2, data: { type: "result", subtype: "error_during_execution", is_error: true } });
    expect(s.agentState).toBe("stopped");
    s.apply(prompt(3, "again"));
    expect(s.agentState).toBe("working");
    s.apply({ type: "agent_message", line: 4, data: { type: "result", subtype: "success" } });
    expect(s.agentState).toBe("idle");
  });

  it("appends a block to the last page only (fine-grained rendering)", () => {
    const s = new SessionStore(ID);
    for (let i = 1; i <= 120; i++) s.apply(prompt(i, "p" + i));
    const pages = s.pages.value;
    expect(pages.map((p) => p.blocks.value.length)).toEqual([50, 50, 20]);
    const first = pages[0].blocks.value;
    s.apply(prompt(121, "p121"));
    expect(s.pages.value[0].blocks.value).toBe(first); // untouched
    expect(s.pages.value).toBe(pages); // no new page needed
  });

  it("grows one text block from stream deltas and keeps the final message once", () => {
    const s = new SessionStore(ID);
    const delta = (line: number, t: string) => ({ type: "agent_message" as const, line, data: { type: "stream_event", event: { type: "content_block_delta", delta: { type: "text_delta", text: t } } } });
    s.apply(delta(1, "Hel"));
    s.apply(delta(2, "lo"));
    const b = s.allBlocks()[0];
    if (b.kind !== "text") throw new Error("not text");
    expect(b.text.value).toBe("Hello");
    expect(b.open.value).toBe(true);
    s.apply(assistant(3, [{ type: "text", text: "Hello!" }]));
    expect(s.allBlocks()).toHaveLength(1);
    expect(b.text.value).toBe("Hello!");
    expect(b.open.value).toBe(false);
  });

  it("empties the view on session_cleared but keeps de-duplicating its lines", () => {
    const s = new SessionStore(ID);
    s.apply(prompt(1, "a"));
    s.apply({ type: "session_cleared", session_id: ID, archived_session_id: "OTHER" });
    expect(s.allBlocks()).toHaveLength(0);
    expect(s.apply(prompt(1, "a"))).toBe(false);
    expect(s.apply(prompt(2, "b"))).toBe(true);
  });

  it("takes the prompt queue from connected and queue frames", () => {
    const s = new SessionStore(ID);
    s.apply(connected({ session_id: ID, cwd: "/p", is_reconnect: true, agent_running: true, is_compacting: false, provider: "agent-sdk", provider_locked: true, permission_mode: "plan", queue: [{ queue_id: "q1", content: "next", created_at: "2026-11-27T00:00:00Z" }] }));
    expect(s.queue.value.map((q) => q.queue_id)).toEqual(["q1"]);
    expect(s.mode.value).toBe("plan");
    s.apply({ type: "queue", items: [] });
    expect(s.queue.value).toEqual([]);
  });
});

describe("SessionStore: one element per line", () => {
  it("gives each line's sid to one block, in line order, tool results and inits included", () => {
    const s = new SessionStore(ID);
    s.apply(prompt(1, "go"));
    s.apply({ type: "agent_message", line: 2, data: { type: "system", subtype: "init" } });
    s.apply(assistant(3, [{ type: "text", text: "two tools" }, { type: "tool_use", id: "a", name: "Read", input: {} }]));
    s.apply(assistant(4, [{ type: "tool_use", id: "b", name: "Read", input: {} }]));
    s.apply({ type: "agent_message", line: 5, data: { type: "user", message: { content: [{ type: "tool_result", tool_use_id: "a", content: "A" }] } } });
    s.apply({ type: "agent_message", line: 6, data: { type: "user", message: { content: [{ type: "tool_result", tool_use_id: "b", content: "B" }] } } });
    s.apply({ type: "agent_message", line: 7, data: { type: "result", subtype: "success" } });
    // The page's order of [data-sid]: each block's own sid, then its extras.
    const order = s.allBlocks().flatMap((b) => [...(b.sid ? [b.sid] : []), ...(b.extra?.peek() ?? [])]);
    expect(order).toEqual([1, 2, 3, 4, 5, 6, 7].map((l) => `${ID}:${l}`));
    // Line 3 made two blocks; only the first carries its sid.
    expect(s.allBlocks().filter((b) => b.line === 3).map((b) => b.sid)).toEqual([`${ID}:3`, undefined]);
  });

  it("keeps a sid for a line that comes before any block", () => {
    const s = new SessionStore(ID);
    s.apply({ type: "agent_message", line: 1, data: { type: "system", subtype: "init" } });
    const b = s.allBlocks();
    expect(b).toHaveLength(1);
    expect(b[0].kind).toBe("meta");
    expect(b[0].extra?.peek()).toEqual([`${ID}:1`]);
  });
});

describe("SessionStore: per-turn cost", () => {
  it("takes each turn's cost from the step of the running total", () => {
    const s = new SessionStore(ID);
    const res = (line: number, total: number) => s.apply({ type: "agent_message", line, data: { type: "result", subtype: "success", total_cost_usd: total, usage: {} } });
    res(1, 0.01);
    res(2, 0.03);
    res(3, 0.005); // a new process: its total starts again
    const costs = s.allBlocks().map((b) => (b.kind === "result" ? [b.cost, b.totalCost] : null));
    expect(costs[0]).toEqual([0.01, 0.01]);
    expect(costs[1]![0]).toBeCloseTo(0.02);
    expect(costs[2]).toEqual([0.005, 0.005]);
  });
});
