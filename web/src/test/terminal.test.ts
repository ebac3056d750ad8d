import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ACK_BYTES, TermClient, terminalURL, type Sink } from "../panes/terminal/client";
import { FakeWS } from "./fakews";

/** The acks a terminal socket sent. */
const acks = (ws: FakeWS): number[] => ws.messages().filter((m) => m.type === "ack").map((m) => m.offset);

/** A screen that records what it is given and draws when the test says so (write callbacks held). */
class FakeSink implements Sink {
  log: string[] = [];
  held: { data: Uint8Array; done: () => void }[] = [];
  auto = true;
  write(data: Uint8Array, done: () => void) {
    this.log.push("w:" + new TextDecoder().decode(data));
    if (this.auto) done();
    else this.held.push({ data, done });
  }
  reset(rows?: number, cols?: number) {
    this.log.push(rows ? `reset:${rows}x${cols}` : "reset");
  }
  /** Draws the next n held writes (default: until none is held, those written meanwhile included). */
  draw(n = Infinity) {
    while (n-- > 0 && this.held.length) this.held.shift()!.done();
  }
}

const ID = "K7QZ3XH2M4A5B6C7D2E3F4G5H6";
const last = () => FakeWS.all[FakeWS.all.length - 1];
const connected = (over: Record<string, unknown> = {}) => ({
  type: "connected",
  session: ID,
  cwd: "/p",
  stream: "s1",
  offset: 0,
  has_scrollback: false,
  flow: true,
  rows: 24,
  cols: 80,
  ...over,
});

function client(sink: Sink, over: Partial<ConstructorParameters<typeof TermClient>[0]> = {}) {
  return new TermClient({ id: ID, cwd: () => "/p", sink, base: () => "ws://h", WS: FakeWS as any, random: () => 0.5, ...over });
}

describe("terminal client", () => {
  beforeEach(() => {
    vi.useFakeTimers();
    FakeWS.all = [];
  });
  afterEach(() => vi.useRealTimers());

  it("dials with the session id, its cwd and flow=1, and no stream the first time", () => {
    const c = client(new FakeSink());
    c.start();
    const q = last().query();
    expect(q.get("session")).toBe(ID);
    expect(q.get("cwd")).toBe("/p");
    expect(q.get("flow")).toBe("1");
    expect(q.has("stream")).toBe(false);
    expect(terminalURL(`${ID}:2`, undefined, "ab", 7)).toBe(`/ws/terminal?session=${ID}%3A2&flow=1&stream=ab&offset=7`);
  });

  it("writes output, acks what was drawn in batches, and only to a server that said flow", () => {
    const sink = new FakeSink();
    sink.auto = false;
    const c = client(sink);
    c.start();
    last().open();
    last().frame(connected());
    last().bin("hello ");
    last().bin("world");
    expect(c.offset).toBe(11);
    expect(acks(last())).toEqual([]);
    sink.draw(1);
    expect(c.rendered).toBe(6);
    expect(acks(last())).toEqual([]); // batched: under 64 KiB, wait 100 ms
    sink.draw();
    vi.advanceTimersByTime(100);
    expect(acks(last())).toEqual([11]);
    // 64 KiB drawn: acked at once.
    last().bin(new Uint8Array(ACK_BYTES));
    sink.draw();
    expect(acks(last())).toEqual([11, 11 + ACK_BYTES]);
    expect(sink.log.slice(0, 2)).toEqual(["w:hello ", "w:world"]);

    // An old server (no "flow": true) would type an ack into the shell: none is sent.
    const old = client(new FakeSink());
    old.start();
    last().open();
    last().frame(connected({ flow: undefined }));
    last().bin("x".repeat(100000));
    vi.advanceTimersByTime(200);
    expect(acks(last())).toEqual([]);
    expect(old.rendered).toBe(100000);
  });

  it("gathers the output that comes while a write is parsed into one write, acked on its callback", () => {
    const sink = new FakeSink();
    sink.auto = false;
    const c = client(sink, { batchMax: 10 });
    c.start();
    last().open();
    last().frame(connected());
    last().bin("a"); // the screen is idle: written at once (a keystroke's echo is not held)
    expect(sink.log).toEqual(["w:a"]);
    last().bin("bc");
    last().bin("de");
    expect(sink.log).toEqual(["w:a"]); // gathered while "a" is parsed
    expect(c.pending).toBe(5);
    sink.draw(1);
    expect(sink.log).toEqual(["w:a", "w:bcde"]); // one write
    expect(c.rendered).toBe(1);
    last().bin("fghij");
    last().bin("klmno"); // the gathered output reaches batchMax: written without waiting
    expect(sink.log).toEqual(["w:a", "w:bcde", "w:fghijklmno"]);
    sink.draw(1);
    expect(c.rendered).toBe(5);
    sink.draw();
    expect(c.rendered).toBe(15);
    expect(c.pending).toBe(0);
    vi.advanceTimersByTime(100);
    expect(acks(last())).toEqual([15]);
    last().bin("p"); // idle again: at once
    expect(sink.log[sink.log.length - 1]).toBe("w:p");
  });

  it("in a flood, holds the gathered output until it is large (or a moment passed): one large write, drawn once", () => {
    const sink = new FakeSink();
    sink.auto = false;
    const c = client(sink, { floodWrite: 4, batchMin: 8 });
    c.start();
    last().open();
    last().frame(connected());
    last().bin("1234"); // a large write (floodWrite)
    last().bin("ab");
    sink.draw(1);
    expect(sink.log).toEqual(["w:1234"]); // "ab" is held: a flood, and under batchMin
    last().bin("cd");
    vi.advanceTimersByTime(5);
    expect(sink.log).toEqual(["w:1234"]);
    last().bin("efgh"); // batchMin reached: written at once
    expect(sink.log).toEqual(["w:1234", "w:abcdefgh"]);
    sink.draw(1);
    last().bin("x"); // idle: at once
    sink.draw(1);
    last().bin("yz"); // after a small write: no hold
    expect(sink.log).toEqual(["w:1234", "w:abcdefgh", "w:x", "w:yz"]);
    sink.draw(1); // "yz" is a small write: nothing held after it
    last().bin("12345678"); // a large write on an idle screen
    last().bin("q");
    sink.draw(1);
    expect(sink.log[sink.log.length - 1]).toBe("w:12345678"); // "q" held...
    vi.advanceTimersByTime(20);
    expect(sink.log[sink.log.length - 1]).toBe("w:q"); // ...for a moment only
    sink.draw();
    expect(c.rendered).toBe(c.offset);
    expect(c.pending).toBe(0);
  });

  it("types input as binary frames and sends its size on connecting and on every change", () => {
    const c = client(new FakeSink());
    c.resize(30, 100);
    c.send("ls\r"); // before the socket: queued
    c.start();
    last().open();
    last().frame(connected());
    expect(last().messages()).toEqual([{ type: "resize", rows: 30, cols: 100 }]);
    const typed = last().sent.filter((s) => typeof s !== "string") as Uint8Array[];
    expect(new TextDecoder().decode(typed[0])).toBe("ls\r");
    c.resize(30, 100); // unchanged: not sent again
    c.resize(40, 120);
    expect(last().messages()).toEqual([
      { type: "resize", rows: 30, cols: 100 },
      { type: "resize", rows: 40, cols: 120 },
    ]);
    // A paste that looks like a control message is still typed (binary).
    c.send('{"type":"resize","rows":1,"cols":1}');
    expect(last().messages().length).toBe(2);
  });

  it("reattaches after a drop at its stream and offset: no gap, no duplicate", () => {
    const sink = new FakeSink();
    const c = client(sink);
    c.start();
    last().open();
    last().frame(connected({ stream: "s1", offset: 100, has_scrollback: true }));
    last().bin("abc");
    last().drop();
    expect(c.state.peek().kind).toBe("reconnecting");
    vi.advanceTimersByTime(1000);
    const q = last().query();
    expect(q.get("stream")).toBe("s1");
    expect(q.get("offset")).toBe("103");
    last().open();
    last().frame(connected({ stream: "s1", offset: 103, has_scrollback: true }));
    last().bin("def");
    expect(sink.log).toEqual(["w:abc", "w:def"]); // no reset, nothing twice
    expect(c.offset).toBe(106);
    // The dial's offset counts as acked: the next ack is above it.
    vi.advanceTimersByTime(100);
    expect(acks(last())).toEqual([106]);
  });

  it("starts the screen over when the shell is a new one (another stream)", () => {
    const sink = new FakeSink();
    const c = client(sink);
    c.start();
    last().open();
    last().frame(connected({ stream: "s1", offset: 0 }));
    last().bin("old");
    last().drop();
    vi.advanceTimersByTime(1000);
    last().open();
    last().frame(connected({ stream: "s2", offset: 0, has_scrollback: true }));
    last().bin("new");
    expect(sink.log).toEqual(["w:old", "reset", "w:new"]);
    expect(c.stream).toBe("s2");
    expect(c.offset).toBe(3);
  });

  it("a screen frame: reset, size R×C, draw it, continue at its offset; stale callbacks ignored", () => {
    const sink = new FakeSink();
    sink.auto = false;
    const c = client(sink);
    c.start();
    last().open();
    last().frame(connected({ offset: 0 }));
    last().bin("abc"); // still being drawn when the screen comes
    last().frame({ type: "screen", offset: 5000000, rows: 30, cols: 90, bytes: 6 });
    last().bin("SCREEN");
    last().bin("live");
    // "live" waits for the screen's write to be parsed (output goes in one write at a time).
    expect(sink.log).toEqual(["w:abc", "reset:30x90", "w:SCREEN"]);
    expect(c.offset).toBe(5000004);
    expect(c.stats.screens).toBe(1);
    expect(c.stats.bytes).toBe(7); // the screen's bytes are not stream bytes
    sink.draw(1); // "abc" drawn: before the screen, nothing to ack
    vi.advanceTimersByTime(100);
    expect(c.rendered).toBe(0);
    expect(acks(last())).toEqual([]);
    sink.draw();
    expect(sink.log).toEqual(["w:abc", "reset:30x90", "w:SCREEN", "w:live"]);
    vi.advanceTimersByTime(100);
    expect(c.rendered).toBe(5000004);
    expect(acks(last())).toEqual([5000000, 5000004]); // the screen drawn is acked at once (far past the batch), then the rest
  });

  it("lets go of the socket when it cannot draw fast enough, and comes back at its offset once caught up", () => {
    const sink = new FakeSink();
    sink.auto = false;
    const c = client(sink, { pendingHigh: 1000, pendingLow: 100, batchMax: 1 }); // a write per frame
    c.start();
    const first = last();
    first.open();
    first.frame(connected());
    for (let i = 0; i < 11; i++) first.bin(new Uint8Array(100));
    expect(c.state.peek().kind).toBe("catching-up");
    expect(first.closed).toBe(1000);
    expect(FakeWS.all.length).toBe(1);
    vi.advanceTimersByTime(60000); // no retry while catching up
    expect(FakeWS.all.length).toBe(1);
    sink.draw(9); // 200 left
    expect(FakeWS.all.length).toBe(1);
    sink.draw(1); // 100 left: back
    expect(FakeWS.all.length).toBe(2);
    expect(last().query().get("offset")).toBe("1100");
    expect(c.stats.catchups).toBe(1);
  });

  it("deems a socket silent for 2.5 heartbeats dead, closes it and dials again", () => {
    let t = 0;
    const c = client(new FakeSink(), { now: () => t, heartbeatMs: 1000 });
    c.start();
    const ws = last();
    ws.open();
    ws.frame(connected());
    for (let i = 0; i < 5; i++) {
      t += 1000;
      ws.frame({ type: "heartbeat" });
      vi.advanceTimersByTime(1000);
    }
    expect(FakeWS.all.length).toBe(1);
    t += 2600;
    vi.advanceTimersByTime(2600);
    expect(ws.closed).toBe(1000);
    expect(FakeWS.all.length).toBe(2);
    expect(c.stats.deadSockets).toBe(1);
    expect(last().query().get("stream")).toBe("s1");
  });

  it("exit: shows the code, no reconnect; Restart dials a new shell", () => {
    const sink = new FakeSink();
    const c = client(sink);
    c.start();
    last().open();
    last().frame(connected({ stream: "s1" }));
    last().bin("bye");
    last().frame({ type: "exit", code: 3 });
    last().drop(1000);
    expect(c.state.peek()).toEqual({ kind: "exited", code: 3 });
    vi.advanceTimersByTime(60000);
    expect(FakeWS.all.length).toBe(1);
    c.send("ignored");
    c.restart();
    expect(FakeWS.all.length).toBe(2);
    last().open();
    last().frame(connected({ stream: "s2", created: true }));
    expect(c.state.peek().kind).toBe("connected");
    expect(sink.log).toEqual(["w:bye", "reset"]);
    expect(last().sent.length).toBe(0); // the key typed after exit went nowhere
  });

  it("shows error frames and backs off on closes", () => {
    const c = client(new FakeSink());
    c.start();
    last().open();
    last().frame(connected());
    last().frame({ type: "error", code: "input_timeout", message: "812 bytes were dropped" });
    expect(c.notice.peek()).toMatchObject({ code: "input_timeout", message: "812 bytes were dropped" });
    last().drop(1011);
    expect(c.notice.peek()?.code).toBe("internal");
    expect(c.state.peek()).toMatchObject({ kind: "reconnecting", attempt: 1 });
    vi.advanceTimersByTime(999);
    expect(FakeWS.all.length).toBe(1);
    vi.advanceTimersByTime(1);
    expect(FakeWS.all.length).toBe(2);
    last().drop(1006);
    expect(c.state.peek()).toMatchObject({ kind: "reconnecting", attempt: 2 });
    vi.advanceTimersByTime(2000);
    expect(FakeWS.all.length).toBe(3);
  });

  it("skip_lines: dials with the scrollback it keeps; a skip frame's pen is written after what came before, and acks go on from its offset", () => {
    const sink = new FakeSink();
    sink.auto = false;
    const c = client(sink, { skipLines: 5000 });
    c.start();
    expect(last().query().get("skip_lines")).toBe("5000");
    expect(terminalURL(ID, undefined, null, 0, 0)).toBe(`/ws/terminal?session=${ID}&flow=1`);
    last().open();
    last().frame(connected());
    last().bin("a\r\n"); // 0..3, being drawn
    last().bin("b\r\n"); // 3..6, gathered
    last().frame({ type: "skip", from: 6, offset: 1000, sgr: "\u001b[0m\u001b[32m" });
    expect(c.offset).toBe(1000);
    last().bin("z"); // 1000..1001
    expect(c.offset).toBe(1001);
    sink.draw();
    expect(sink.log).toEqual(["w:a\r\n", "w:b\r\n\u001b[0m\u001b[32mz"]);
    expect(c.rendered).toBe(1001);
    vi.advanceTimersByTime(100);
    expect(acks(last())).toEqual([1001]);
    expect(c.stats).toMatchObject({ skips: 1, skippedPlain: 994, bytes: 7 });
    // A skip with no pen, nothing being drawn: the page is at its offset at once.
    last().frame({ type: "skip", from: 1001, offset: 2000, sgr: "" });
    expect(c.rendered).toBe(2000);
    vi.advanceTimersByTime(100);
    expect(acks(last())).toEqual([1001, 2000]);
    // A reconnect resumes after the skip.
    last().drop();
    vi.advanceTimersByTime(2000);
    expect(last().query().get("offset")).toBe("2000");
  });

  it("a skip frame that does not start where the page stands is refused: the page says so and dials again at its own offset", () => {
    const c = client(new FakeSink(), { skipLines: 100 });
    c.start();
    last().open();
    last().frame(connected());
    last().bin("abc");
    const ws = last();
    ws.frame({ type: "skip", from: 2, offset: 500, sgr: "" });
    expect(c.offset).toBe(3);
    expect(c.notice.value?.code).toBe("protocol");
    expect(ws.closed).toBe(4000);
  });

  it("an older server's resync skips ahead", () => {
    const sink = new FakeSink();
    const c = client(sink);
    c.start();
    last().open();
    last().frame(connected({ flow: undefined }));
    last().frame({ type: "resync", skipped: 1000, offset: 5000 });
    last().bin("z");
    expect(c.offset).toBe(5001);
    expect(c.stats.skipped).toBe(1000);
  });
});

describe("terminal client in a hidden page", () => {
  beforeEach(() => {
    vi.useFakeTimers();
    FakeWS.all = [];
  });
  afterEach(() => vi.useRealTimers());

  it("acks output as it arrives while hidden (a background tab does not hold the shell), as it is drawn when shown", () => {
    const sink = new FakeSink();
    sink.auto = false;
    const c = client(sink);
    c.start();
    last().open();
    last().frame(connected());
    c.setHidden(true);
    last().bin(new Uint8Array(ACK_BYTES));
    expect(acks(last())).toEqual([ACK_BYTES]); // not drawn yet
    c.setHidden(false);
    last().bin(new Uint8Array(ACK_BYTES));
    expect(acks(last())).toEqual([ACK_BYTES]);
    sink.draw();
    vi.advanceTimersByTime(20); // shown, a flood's gathered output may be held a moment
    sink.draw();
    expect(acks(last())).toEqual([ACK_BYTES, 2 * ACK_BYTES]);
  });
});
