import { afterEach, describe, expect, it, vi } from "vitest";
import { sendPromptOnce } from "../state/sendprompt";

// A WebSocket stand-in: records what is sent; the test plays the server.
class FakeWS {
  static last: FakeWS;
  sent: any[] = [];
  closed = false;
  onmessage: ((ev: { data: string }) => void) | null = null;
  onclose: ((ev: { code: number; reason: string }) => void) | null = null;
  onerror: (() => void) | null = null;
  constructor(public url: string) {
    FakeWS.last = this;
  }
  send(s: string) {
    this.sent.push(JSON.parse(s));
  }
  close() {
    this.closed = true;
  }
  frame(f: object) {
    this.onmessage?.({ data: JSON.stringify(f) });
  }
}

function session(last_line: number) {
  vi.stubGlobal(
    "fetch",
    vi.fn(async () => new Response(JSON.stringify({ session_id: "S1", title: "t", last_line }), { status: 200 })),
  );
}

async function opened() {
  await vi.waitFor(() => expect(FakeWS.last).toBeDefined());
  return FakeWS.last;
}

afterEach(() => {
  vi.unstubAllGlobals();
  FakeWS.last = undefined as any;
});

describe("sendPromptOnce", () => {
  it("joins after the last line, sends after connected, and reports the stored line", async () => {
    session(41);
    const p = sendPromptOnce("S1", "again", 5000, FakeWS as any);
    const ws = await opened();
    expect(ws.url).toContain("/chat?session=S1&after_line=41");
    expect(ws.sent).toEqual([]); // not before connected
    ws.frame({ type: "connected", session_id: "S1" });
    ws.frame({ type: "permission_request", request_id: "r", replay: true });
    expect(ws.sent).toEqual([{ type: "user_message", content: "again" }]);
    ws.frame({ type: "message_stored", line: 42 });
    ws.frame({ type: "user_message_stored", promptId: "S1:42", isFavorite: false });
    const r = await p;
    expect(r).toMatchObject({ kind: "stored", promptId: "S1:42", line: 42 });
    expect(ws.closed).toBe(true);
  });

  it("reports a prompt queued behind a running turn", async () => {
    session(3);
    const p = sendPromptOnce("S1", "later", 5000, FakeWS as any);
    const ws = await opened();
    ws.frame({ type: "connected" });
    ws.frame({ type: "user_message_queued", queue_id: "Q1" });
    expect(await p).toMatchObject({ kind: "queued", queueId: "Q1" });
  });

  it("rejects with the server's error frame", async () => {
    session(3);
    const p = sendPromptOnce("S1", "x", 5000, FakeWS as any);
    const ws = await opened();
    ws.frame({ type: "connected" });
    ws.frame({ type: "error", message: "at most 100 prompts wait" });
    await expect(p).rejects.toThrow(/refused the prompt: at most 100 prompts wait/);
  });

  it("says the prompt may be stored when the socket drops after sending, and that nothing was sent before", async () => {
    session(3);
    const p = sendPromptOnce("S1", "x", 5000, FakeWS as any);
    const ws = await opened();
    ws.frame({ type: "connected" });
    ws.onclose?.({ code: 1006, reason: "" });
    await expect(p).rejects.toThrow(/may have been stored/);

    session(3);
    FakeWS.last = undefined as any;
    const q = sendPromptOnce("S1", "x", 5000, FakeWS as any);
    const ws2 = await opened();
    ws2.onclose?.({ code: 4404, reason: "gone" });
    await expect(q).rejects.toThrow(/nothing was sent/);
  });
});
