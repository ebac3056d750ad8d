import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { backoff, ReconnectingSocket } from "../state/socket";
import { SessionStore } from "../state/session";
import { FakeWS } from "./fakews";

const ID = "K7QZ3XH2M4A5B6C7D2E3F4G5H6";
const last = () => FakeWS.all[FakeWS.all.length - 1];

describe("ReconnectingSocket", () => {
  beforeEach(() => {
    vi.useFakeTimers();
    FakeWS.all = [];
  });
  afterEach(() => vi.useRealTimers());

  it("backs off 1 s, 2 s, 4 s … up to 30 s", () => {
    const mid = () => 0.5;
    expect([1, 2, 3, 4, 5, 6, 7, 10].map((a) => backoff(a, mid))).toEqual([1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
    expect(backoff(1, () => 0)).toBe(800);
    expect(backoff(1, () => 1)).toBe(1200);
  });

  it("resumes from the last line applied and never shows a line twice", () => {
    const store = new SessionStore(ID);
    const sock = new ReconnectingSocket({
      url: () => `/chat?session=${ID}&after_line=${store.lastLine}`,
      onFrame: (f) => store.apply(f),
      WS: FakeWS as any,
      random: () => 0.5,
    });
    sock.start();
    expect(last().url).toContain("after_line=0");
    last().open();
    expect(sock.state.value.kind).toBe("connected");
    last().frame({ type: "message_stored", message: { role: "user", content: "hi" }, line: 1 });
    last().frame({ type: "agent_message", line: 2, data: { type: "assistant", message: { content: [{ type: "text", text: "one" }] } } });
    last().drop();
    const st = sock.state.value;
    expect(st.kind).toBe("reconnecting");
    if (st.kind === "reconnecting") expect(st.attempt).toBe(1);
    vi.advanceTimersByTime(999);
    expect(FakeWS.all).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(FakeWS.all).toHaveLength(2);
    expect(last().url).toContain("after_line=2");
    last().open();
    // A server that replays from an older line (or a relay that doubles a frame):
    last().frame({ type: "agent_message", line: 2, data: { type: "assistant", message: { content: [{ type: "text", text: "one" }] } } });
    last().frame({ type: "agent_message", line: 3, data: { type: "assistant", message: { content: [{ type: "text", text: "two" }] } } });
    const texts = store.allBlocks().map((b) => (b.kind === "text" ? b.text.value : b.kind));
    expect(texts).toEqual(["user", "one", "two"]);
    sock.stop();
  });

  it("grows the delay while the server stays away and resets it after a connect", () => {
    const sock = new ReconnectingSocket({ url: () => "/x", onFrame: () => {}, WS: FakeWS as any, random: () => 0.5 });
    sock.start();
    last().drop();
    vi.advanceTimersByTime(1000);
    last().drop();
    const st = sock.state.value;
    expect(st.kind === "reconnecting" && st.attempt).toBe(2);
    vi.advanceTimersByTime(2000);
    last().open();
    last().drop();
    const st2 = sock.state.value;
    expect(st2.kind === "reconnecting" && st2.attempt).toBe(1);
    sock.stop();
  });

  it("reconnects at once when asked to (a slow-client 4001 still retries)", () => {
    const sock = new ReconnectingSocket({ url: () => "/x", onFrame: () => {}, WS: FakeWS as any, random: () => 0.5 });
    sock.start();
    last().open();
    last().drop(4001);
    expect(sock.state.value.kind).toBe("reconnecting");
    sock.retryNow();
    expect(FakeWS.all).toHaveLength(2);
    sock.stop();
  });

  it("stops retrying on a fatal close", () => {
    const sock = new ReconnectingSocket({ url: () => "/x", onFrame: () => {}, WS: FakeWS as any, fatal: (e) => (e.code === 4404 ? "gone" : null) });
    sock.start();
    last().open();
    last().drop(4404);
    expect(sock.state.value).toEqual({ kind: "closed", why: "gone" });
    vi.advanceTimersByTime(60000);
    expect(FakeWS.all).toHaveLength(1);
  });

  it("pings, and replaces a socket that went silent (a suspended tab)", () => {
    let now = 0;
    const sock = new ReconnectingSocket({ url: () => "/x", onFrame: () => {}, WS: FakeWS as any, now: () => now, pingMs: 1000, idleMs: 3000 });
    sock.start();
    last().open();
    now = 1000;
    vi.advanceTimersByTime(1000);
    expect(last().sent).toContain('{"type":"ping"}');
    now = 4000;
    vi.advanceTimersByTime(1000);
    now = 5000;
    vi.advanceTimersByTime(1000);
    expect(FakeWS.all.length).toBe(2);
    sock.stop();
  });

  it("says offline when the browser is offline, and comes back on wake", () => {
    const spy = vi.spyOn(navigator, "onLine", "get").mockReturnValue(false);
    const sock = new ReconnectingSocket({ url: () => "/x", onFrame: () => {}, WS: FakeWS as any });
    sock.start();
    expect(sock.state.value.kind).toBe("offline");
    expect(FakeWS.all).toHaveLength(0);
    spy.mockReturnValue(true);
    sock.wake();
    expect(FakeWS.all).toHaveLength(1);
    spy.mockRestore();
    sock.stop();
  });
});

describe("ReconnectingSocket before start", () => {
  it("does not open on a wake or a retry before start (the log is still loading)", () => {
    FakeWS.all = [];
    const sock = new ReconnectingSocket({ url: () => "/x", onFrame: () => {}, WS: FakeWS as any });
    sock.wake();
    sock.retryNow();
    sock.reconnect("focus");
    expect(FakeWS.all).toHaveLength(0);
    sock.start();
    expect(FakeWS.all).toHaveLength(1);
    sock.stop();
  });
});
