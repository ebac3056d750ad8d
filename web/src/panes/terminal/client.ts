// The socket of one terminal (`/ws/terminal`, docs/api.md "Terminal", with the
// flow-control additions of issue 18 item 2). It owns everything between the
// socket and the screen, and nothing of the DOM:
//
// - the stream position: `stream` and `offset` (the stream offset of the next
//   output byte), kept across reconnects so a reattach (`stream`/`offset`) has no
//   gap and no duplicate;
// - output is handed to the screen one write at a time: what arrives while
//   xterm.js is still parsing the previous write waits and goes in as one
//   write (up to BATCH_MAX) once it is done. A flood thus reaches xterm.js
//   in large writes, which it parses without drawing in between (it draws
//   between writes, on animation frames), instead of one write per frame;
//   a keystroke's echo after a pause is written at once, as before;
// - flow control (`flow=1`): what xterm.js has rendered (its write callback) is
//   acknowledged with `{"type":"ack","offset":N}`, batched (every ACK_BYTES or
//   ACK_MS, whichever first); acks go only to a server that said `"flow": true`
//   (an older one would type them into the shell);
// - plain floods left out (`skip_lines`, the lines of scrollback the screen keeps):
//   a `skip` frame says the server did not send output from `from` to `offset`
//   (plain text followed by more lines than the screen and its scrollback
//   hold); its `sgr`, the pen that output would have left, is written in its
//   place after everything before it, and the stream goes on at `offset`;
// - the screen resync: `screen` and the binary frame after it reset the screen
//   (after what was written before it is parsed), size it R×C, draw it, and the
//   live output continues at its offset;
// - a page that cannot keep up (more than PENDING_HIGH received and not yet
//   rendered) lets go of the socket and comes back at its offset once it has
//   caught up (PENDING_LOW): the server then sends the screen if its ring has
//   moved on, so the page never holds an unbounded backlog;
// - liveness: a socket from which nothing came for 2.5 heartbeats is deemed dead,
//   closed and dialed again; closes are retried with backoff (1 s … 30 s), except
//   after `exit` (the shell ended: the view offers Restart).
//
// The view gives it a Sink (the xterm.js terminal, or a fake in the unit tests).

import { signal } from "@preact/signals";
import { backoff } from "../../state/socket";

/** Where the output goes: xterm.js in the page, a recorder in the tests. */
export interface Sink {
  /** Queues output; done runs once it has been parsed and drawn. */
  write(data: Uint8Array, done: () => void): void;
  /** Once everything queued before is parsed: a full reset, then the size rows×cols (when given and different). */
  reset(rows?: number, cols?: number): void;
  /** A screen frame was drawn (at its size: the view may fit it to its box again). */
  screenDrawn?(): void;
}

export type TermState =
  | { kind: "connecting" }
  | { kind: "connected" }
  | { kind: "reconnecting"; at: number; attempt: number; why: string }
  | { kind: "catching-up" }
  | { kind: "exited"; code: number }
  | { kind: "offline" }
  | { kind: "stopped" };

/** An `error` frame (or a local failure) to show. */
export interface TermNotice {
  code: string;
  message: string;
  at: number;
}

export interface TermClientOptions {
  /** The terminal id: the session id, or `<session_id>:<n>` for a further terminal. */
  id: string;
  /** The directory to start the shell in when it must be started (the session's cwd). */
  cwd?: () => string | undefined;
  sink: Sink;
  /** Base of the socket URL (default: this page's origin as ws:/wss:). */
  base?: () => string;
  WS?: typeof WebSocket;
  now?: () => number;
  random?: () => number;
  /** The server's heartbeat period (TERMINAL_HEARTBEAT, 5 s); a socket silent for 2.5 of them is dead. */
  heartbeatMs?: number;
  ackBytes?: number;
  ackMs?: number;
  batchMax?: number;
  batchMin?: number;
  floodWrite?: number;
  /** The screen's scrollback in lines: sent as skip_lines (0: every byte is sent). */
  skipLines?: number;
  pendingHigh?: number;
  pendingLow?: number;
  /** Called on a `connected` frame (the view learns cwd, size, has_scrollback...). */
  onConnected?: (f: ConnectedFrame) => void;
}

export interface ConnectedFrame {
  type: "connected";
  session: string;
  cwd: string;
  stream: string;
  offset: number;
  has_scrollback: boolean;
  scrollback_truncated?: boolean;
  created?: boolean;
  rows?: number;
  cols?: number;
  flow?: boolean;
  pid?: number;
  host?: string;
}

interface ScreenFrame {
  offset: number;
  rows: number;
  cols: number;
  bytes: number;
}

export const ACK_BYTES = 64 * 1024;
export const ACK_MS = 100;
export const PENDING_HIGH = 4 * 1024 * 1024;
export const PENDING_LOW = 512 * 1024;
export const HEARTBEAT_MS = 5000;
/** The most output gathered into one write while the screen is busy with the previous one. */
export const BATCH_MAX = 512 * 1024;
/**
 * During a flood (the write just parsed was FLOOD_WRITE or more), output
 * gathered meanwhile is held until it reaches BATCH_MIN, for at most
 * BATCH_HOLD_MS: xterm.js then parses it in one go and draws once, where
 * it would draw after every 12 ms of parsing (drawing costs the DOM
 * renderer about as much as parsing).
 */
export const BATCH_MIN = 192 * 1024;
export const FLOOD_WRITE = 32 * 1024;
export const BATCH_HOLD_MS = 12;
/** Typed input kept while the socket is down (sent on reconnect); beyond it keys are dropped. */
export const INPUT_QUEUE_MAX = 64 * 1024;

const enc = new TextEncoder();

/** The socket URL of terminal id (query as docs/api.md describes). */
export function terminalURL(id: string, cwd: string | undefined, stream: string | null, offset: number, skipLines = 0): string {
  const p = new URLSearchParams({ session: id });
  if (cwd) p.set("cwd", cwd);
  p.set("flow", "1");
  if (skipLines > 0) p.set("skip_lines", String(Math.floor(skipLines)));
  if (stream) {
    p.set("stream", stream);
    p.set("offset", String(offset));
  }
  return `/ws/terminal?${p}`;
}

export class TermClient {
  readonly state = signal<TermState>({ kind: "connecting" });
  /** The last error frame (cleared when the view dismisses it). */
  readonly notice = signal<TermNotice | null>(null);

  /** The stream the screen shows, and the offset of the next byte of it. */
  stream: string | null = null;
  offset = 0;
  /** Up to where xterm.js has drawn the stream (write callbacks). */
  rendered = 0;
  /** The last ack sent on this connection (the dial's offset counts as one). */
  ackSent = 0;
  /** Whether the server accepted flow=1 on this connection. */
  flow = false;
  /** Counters for the tests and the benchmark (window.__svcTerm). */
  readonly stats = { bytes: 0, frames: 0, screens: 0, resyncs: 0, skipped: 0, acks: 0, connects: 0, catchups: 0, deadSockets: 0, skips: 0, skippedPlain: 0 };

  private o: TermClientOptions;
  private ws: WebSocket | null = null;
  private WS: typeof WebSocket;
  private now: () => number;
  private stopped = true;
  private attempt = 0;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private ackTimer: ReturnType<typeof setTimeout> | null = null;
  private watchTimer: ReturnType<typeof setInterval> | null = null;
  private lastFrame = 0;
  private screen: ScreenFrame | null = null;
  /** Bumped when the screen starts over (a new stream, a screen frame): older write callbacks are stale. */
  private epoch = 0;
  private input: Uint8Array[] = [];
  private inputBytes = 0;
  private size: { rows: number; cols: number } | null = null;
  private sentSize = "";
  private exited = false;
  private queued = 0;
  private hidden = false;
  /** Writes handed to the sink and not called back yet. */
  private inFlight = 0;
  /** Output received while a write was in flight: written as one once it is done. */
  private batch: { parts: Uint8Array[]; bytes: number; end: number; epoch: number } | null = null;
  private holdTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(o: TermClientOptions) {
    this.o = o;
    this.WS = o.WS ?? WebSocket;
    this.now = o.now ?? Date.now;
  }

  get id() {
    return this.o.id;
  }

  /** Opens the socket (and keeps it open until stop()). */
  start() {
    if (!this.stopped) return;
    this.stopped = false;
    this.open();
  }

  /** Closes for good (the tab was closed, the pane unmounted). */
  stop() {
    this.stopped = true;
    if (this.holdTimer) clearTimeout(this.holdTimer);
    this.holdTimer = null;
    this.drop();
    this.state.value = { kind: "stopped" };
  }

  /** After `exit`: a new shell (a new stream; the screen starts over when it comes). */
  restart() {
    this.exited = false;
    this.stopped = false;
    this.attempt = 0;
    this.drop();
    this.open();
  }

  /** Dials again now (a retry the user asked for, or the tab came back to a closed socket). */
  retryNow() {
    if (this.stopped || this.exited) return;
    if (this.ws && this.ws.readyState <= 1) return;
    this.drop();
    this.open();
  }

  /** The tab came back (visibilitychange, pageshow, focus, online): check the socket. */
  wake() {
    if (this.stopped || this.exited) return;
    if (!this.ws || this.ws.readyState > 1) {
      if (this.state.peek().kind !== "catching-up") this.retryNow();
      return;
    }
    this.watch();
  }

  /**
   * The page is hidden (a background tab: its timers, and so xterm.js's parsing,
   * are throttled): ack output as it arrives rather than as it is drawn, so the
   * shell does not crawl at the pace of a tab nobody looks at; if the backlog
   * grows past PENDING_HIGH the page lets go of the socket as usual, and once
   * shown and drawn it comes back to the current screen.
   */
  setHidden(hidden: boolean) {
    this.hidden = hidden;
    if (!hidden) return;
    this.afterRender();
  }

  /** Closes the socket as a network failure would (the tests' hook): the client reconnects as after any drop. */
  dropSocket() {
    try {
      this.ws?.close(4000, "dropped");
    } catch {
      /* closed */
    }
  }

  /** Types data (a key, a paste) into the shell; binary, so it is never taken for a control message. */
  send(data: string | Uint8Array) {
    if (this.exited) return;
    const b = typeof data === "string" ? enc.encode(data) : data;
    if (b.length === 0) return;
    if (this.ws && this.ws.readyState === 1 && this.input.length === 0) {
      this.ws.send(b);
      return;
    }
    if (this.inputBytes + b.length > INPUT_QUEUE_MAX) {
      this.notify("input_dropped", "the terminal is not connected: keys typed meanwhile beyond 64 KiB were dropped");
      return;
    }
    this.input.push(b);
    this.inputBytes += b.length;
  }

  /** The terminal's size as the view fits it; sent now and on every connection. */
  resize(rows: number, cols: number) {
    if (!(rows >= 1 && cols >= 1)) return;
    this.size = { rows: Math.min(1000, Math.floor(rows)), cols: Math.min(1000, Math.floor(cols)) };
    this.sendSize();
  }

  /** Bytes handed to the screen and not yet drawn (stale ones before a screen frame included). */
  get pending() {
    return this.queued;
  }

  private open() {
    if (this.stopped) return;
    this.clearRetry();
    if (typeof navigator !== "undefined" && navigator.onLine === false) {
      this.state.value = { kind: "offline" };
      return; // "online" calls wake()
    }
    if (this.state.peek().kind !== "reconnecting") this.state.value = { kind: "connecting" };
    const path = terminalURL(this.o.id, this.o.cwd?.(), this.stream, this.offset, this.o.skipLines);
    const base = this.o.base?.() ?? defaultBase();
    let ws: WebSocket;
    try {
      ws = new this.WS(base + path);
    } catch (e) {
      this.schedule(String(e));
      return;
    }
    ws.binaryType = "arraybuffer";
    this.ws = ws;
    this.flow = false;
    this.screen = null;
    this.sentSize = "";
    ws.onopen = () => {
      if (this.ws !== ws) return;
      this.lastFrame = this.now();
      this.startWatch();
    };
    ws.onmessage = (ev) => {
      if (this.ws !== ws) return;
      this.lastFrame = this.now();
      if (typeof ev.data === "string") this.onText(ev.data);
      else this.onBinary(new Uint8Array(ev.data as ArrayBuffer));
    };
    ws.onclose = (ev) => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.stopWatch();
      this.clearAck();
      if (this.exited || this.stopped) return;
      if (ev.code === 1011) this.notify("internal", "the terminal could not be started");
      this.schedule(ev.code === 1001 ? "the terminal host is shutting down" : `closed (${ev.code})`);
    };
    ws.onerror = () => {
      /* a close event follows */
    };
  }

  private onText(text: string) {
    let f: any;
    try {
      f = JSON.parse(text);
    } catch {
      return;
    }
    switch (f?.type) {
      case "connected":
        this.onConnected(f as ConnectedFrame);
        break;
      case "screen":
        this.screen = { offset: f.offset, rows: f.rows, cols: f.cols, bytes: f.bytes };
        break;
      case "skip":
        this.onSkip(Number(f.from), Number(f.offset), typeof f.sgr === "string" ? f.sgr : "");
        break;
      case "resync":
        // A server without flow control dropped output for us: skip ahead (the screen may be off until a redraw).
        this.flushBatch();
        this.stats.resyncs++;
        this.stats.skipped += Number(f.skipped) || 0;
        this.offset = f.offset;
        this.epoch++;
        this.rendered = f.offset;
        break;
      case "exit":
        this.exited = true;
        this.clearRetry();
        this.state.value = { kind: "exited", code: Number(f.code) };
        break;
      case "error":
        this.notify(String(f.code ?? "error"), String(f.message ?? ""));
        break;
      default: // heartbeat, pong: liveness only
    }
  }

  private onConnected(f: ConnectedFrame) {
    this.stats.connects++;
    this.attempt = 0;
    this.flow = f.flow === true;
    this.flushBatch();
    if (this.stream !== null && f.stream !== this.stream) {
      // A new shell (the old one exited, or its host was lost): start the screen over.
      this.epoch++;
      this.o.sink.reset();
    } else if (this.stream !== null && f.scrollback_truncated && !this.flow) {
      // An older server could not replay all we missed: what follows would be drawn on a stale screen.
      this.epoch++;
      this.o.sink.reset();
    }
    if (f.stream !== this.stream) this.rendered = f.offset;
    this.stream = f.stream;
    this.offset = f.offset;
    this.ackSent = f.offset;
    this.state.value = { kind: "connected" };
    this.sendSize();
    const ws = this.ws;
    if (ws && this.input.length) {
      for (const b of this.input) ws.send(b);
      this.input = [];
      this.inputBytes = 0;
    }
    this.o.onConnected?.(f);
  }

  private onBinary(data: Uint8Array) {
    const scr = this.screen;
    if (scr) {
      this.flushBatch();
      this.screen = null;
      this.stats.screens++;
      const epoch = ++this.epoch;
      this.o.sink.reset(scr.rows, scr.cols);
      this.offset = scr.offset;
      // Acks continue from the screen's offset once it is drawn.
      this.queued += data.length;
      this.inFlight++;
      this.o.sink.write(data, () => {
        this.inFlight--;
        this.queued -= data.length;
        if (epoch === this.epoch) {
          this.rendered = Math.max(this.rendered, scr.offset);
          this.o.sink.screenDrawn?.();
        }
        this.flushBatch();
        this.afterRender();
      });
      return;
    }
    const end = this.offset + data.length;
    this.offset = end;
    this.stats.bytes += data.length;
    this.stats.frames++;
    this.queued += data.length;
    if (this.inFlight > 0 || this.holdTimer) {
      // The screen is still parsing (or a flood's batch is held): gather, written as one when it is done.
      const b = (this.batch ??= { parts: [], bytes: 0, end, epoch: this.epoch });
      b.parts.push(data);
      b.bytes += data.length;
      b.end = end;
      if (b.bytes >= (this.o.batchMax ?? BATCH_MAX) || (this.holdTimer && b.bytes >= (this.o.batchMin ?? BATCH_MIN))) this.flushBatch();
    } else {
      this.writeOut(data, end, this.epoch);
    }
    if (this.hidden) this.afterRender();
    if (this.queued > (this.o.pendingHigh ?? PENDING_HIGH) && this.ws) {
      // This page draws slower than the output comes: let go of the socket until it has caught up.
      this.stats.catchups++;
      this.drop();
      this.state.value = { kind: "catching-up" };
    }
  }

  /**
   * The server left out output [from, to): the pen it would have left goes to the screen in its place,
   * in order with the output before it (so acks reach `to` once everything before is drawn).
   */
  private onSkip(from: number, to: number, sgr: string) {
    if (!(from === this.offset && to > from)) {
      // Not where this page stands: a server bug; start over from where the page is.
      this.notify("protocol", `skip from ${from} to ${to} while at ${this.offset}`);
      this.dropSocket();
      return;
    }
    this.stats.skips++;
    this.stats.skippedPlain += to - from;
    this.offset = to;
    const pen = enc.encode(sgr);
    this.queued += pen.length;
    if (this.inFlight > 0 || this.holdTimer || this.batch) {
      const b = (this.batch ??= { parts: [], bytes: 0, end: to, epoch: this.epoch });
      b.parts.push(pen);
      b.bytes += pen.length;
      b.end = to;
    } else if (pen.length > 0) {
      this.writeOut(pen, to, this.epoch);
    } else {
      this.rendered = Math.max(this.rendered, to);
      this.afterRender();
    }
  }

  /** Hands data (output up to the stream offset end) to the screen; acks follow its write callback. */
  private writeOut(data: Uint8Array, end: number, epoch: number) {
    this.inFlight++;
    this.o.sink.write(data, () => {
      this.inFlight--;
      this.queued -= data.length;
      if (epoch === this.epoch && end > this.rendered) this.rendered = end;
      this.releaseBatch(data.length);
      this.afterRender();
    });
  }

  /** After a write of n bytes is parsed: the gathered output goes now, or, in a flood, once it is large enough. */
  private releaseBatch(n: number) {
    const b = this.batch;
    if (!b || this.inFlight > 0 || this.holdTimer) return;
    // Not in a hidden page: its timers are throttled.
    if (!this.hidden && n >= (this.o.floodWrite ?? FLOOD_WRITE) && b.bytes < (this.o.batchMin ?? BATCH_MIN)) {
      this.holdTimer = setTimeout(() => {
        this.holdTimer = null;
        this.flushBatch();
      }, BATCH_HOLD_MS);
      return;
    }
    this.flushBatch();
  }

  /** Writes the gathered output now (its write is done, or the screen is about to start over). */
  private flushBatch() {
    if (this.holdTimer) clearTimeout(this.holdTimer);
    this.holdTimer = null;
    const b = this.batch;
    if (!b) return;
    this.batch = null;
    let data = b.parts[0];
    if (b.parts.length > 1) {
      data = new Uint8Array(b.bytes);
      let at = 0;
      for (const p of b.parts) {
        data.set(p, at);
        at += p.length;
      }
    }
    this.writeOut(data, b.end, b.epoch);
  }

  private afterRender() {
    if (this.state.peek().kind === "catching-up") {
      if (this.queued <= (this.o.pendingLow ?? PENDING_LOW) && !this.stopped) this.open();
      return;
    }
    if (!this.flow || !this.ws || this.ws.readyState !== 1) return;
    const due = this.ackPoint() - this.ackSent;
    if (due <= 0) return;
    if (due >= (this.o.ackBytes ?? ACK_BYTES)) this.sendAck();
    else if (!this.ackTimer) this.ackTimer = setTimeout(() => ((this.ackTimer = null), this.sendAck()), this.o.ackMs ?? ACK_MS);
  }

  /** What may be acked: what is drawn; while the page is hidden, what has arrived (a hidden tab's throttled timers must not hold the shell). */
  private ackPoint() {
    return this.hidden ? this.offset : this.rendered;
  }

  private sendAck() {
    this.clearAck();
    const ws = this.ws;
    if (!this.flow || !ws || ws.readyState !== 1) return;
    const n = Math.min(this.ackPoint(), this.offset);
    if (n <= this.ackSent) return;
    ws.send(JSON.stringify({ type: "ack", offset: n }));
    this.ackSent = n;
    this.stats.acks++;
  }

  private sendSize() {
    const s = this.size;
    const ws = this.ws;
    if (!s || !ws || ws.readyState !== 1 || this.state.peek().kind !== "connected") return;
    const key = `${s.rows}x${s.cols}`;
    if (key === this.sentSize) return;
    ws.send(JSON.stringify({ type: "resize", rows: s.rows, cols: s.cols }));
    this.sentSize = key;
  }

  private notify(code: string, message: string) {
    this.notice.value = { code, message, at: this.now() };
  }

  private deadline() {
    return 2.5 * (this.o.heartbeatMs ?? HEARTBEAT_MS);
  }

  private startWatch() {
    this.stopWatch();
    this.watchTimer = setInterval(() => this.watch(), (this.o.heartbeatMs ?? HEARTBEAT_MS) / 2);
  }

  /** A socket silent for 2.5 heartbeats is dead: close it and dial again. */
  private watch() {
    if (!this.ws || this.ws.readyState !== 1) return;
    if (this.now() - this.lastFrame <= this.deadline()) return;
    this.stats.deadSockets++;
    this.drop();
    this.attempt = 0;
    this.state.value = { kind: "reconnecting", at: this.now(), attempt: 0, why: "no heartbeat" };
    this.open();
  }

  private stopWatch() {
    if (this.watchTimer) clearInterval(this.watchTimer);
    this.watchTimer = null;
  }

  private schedule(why: string) {
    this.clearRetry();
    if (this.stopped || this.exited) return;
    this.attempt++;
    const delay = backoff(this.attempt, this.o.random);
    this.state.value = { kind: "reconnecting", at: this.now() + delay, attempt: this.attempt, why };
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.open();
    }, delay);
  }

  private drop() {
    this.stopWatch();
    this.clearAck();
    this.clearRetry();
    const ws = this.ws;
    this.ws = null;
    if (ws) {
      ws.onclose = ws.onmessage = ws.onerror = ws.onopen = null;
      try {
        ws.close(1000);
      } catch {
        /* already closed */
      }
    }
  }

  private clearRetry() {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
  }

  private clearAck() {
    if (this.ackTimer) clearTimeout(this.ackTimer);
    this.ackTimer = null;
  }
}

function defaultBase(): string {
  return `${location.protocol === "https:" ? "wss:" : "ws:"}//${location.host}`;
}
