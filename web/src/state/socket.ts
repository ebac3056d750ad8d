// A WebSocket that comes back: reconnect with exponential backoff (1 s, 2 s,
// 4 s … 30 s, with jitter), a fresh URL each time (so /chat resumes with
// after_line = the last line applied), a ping every 25 s and a forced
// reconnect when nothing arrived for 70 s (iOS drops sockets of suspended
// tabs without a close event), and an immediate check when the tab comes back
// (visibilitychange, pageshow, focus, online).

import { signal } from "@preact/signals";

export type ConnState =
  | { kind: "connecting" }
  | { kind: "connected" }
  | { kind: "reconnecting"; at: number; attempt: number; why?: string }
  | { kind: "offline" }
  | { kind: "closed"; why: string };

export interface SocketOptions {
  url: () => string;
  onOpen?: (ws: WebSocket) => void;
  onFrame: (data: any) => void;
  /** A close the app must not retry (e.g. the session was deleted). */
  fatal?: (ev: CloseEvent) => string | null;
  WS?: typeof WebSocket;
  now?: () => number;
  random?: () => number;
  pingMs?: number;
  idleMs?: number;
}

export const BACKOFF_MIN = 1000;
export const BACKOFF_MAX = 30000;

export function backoff(attempt: number, random = Math.random): number {
  const base = Math.min(BACKOFF_MAX, BACKOFF_MIN * 2 ** Math.max(0, attempt - 1));
  return Math.round(base * (0.8 + 0.4 * random()));
}

export class ReconnectingSocket {
  readonly state = signal<ConnState>({ kind: "connecting" });
  private ws: WebSocket | null = null;
  private attempt = 0;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private pingTimer: ReturnType<typeof setInterval> | null = null;
  private lastFrame = 0;
  /** Until start(), nothing (a wake, a retry) opens the socket. */
  private stopped = true;
  private o: SocketOptions;
  private WS: typeof WebSocket;
  private now: () => number;

  constructor(o: SocketOptions) {
    this.o = o;
    this.WS = o.WS ?? WebSocket;
    this.now = o.now ?? Date.now;
  }

  start() {
    this.stopped = false;
    this.open();
  }

  /** Closes for good (leaving the view). */
  stop() {
    this.stopped = true;
    this.clearTimers();
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

  /** Sends when open; returns false when the message could not go. */
  send(msg: unknown): boolean {
    if (!this.ws || this.ws.readyState !== 1) return false;
    try {
      this.ws.send(JSON.stringify(msg));
      return true;
    } catch {
      return false;
    }
  }

  get open_(): boolean {
    return !!this.ws && this.ws.readyState === 1;
  }

  /** The tab came back: reconnect now if the socket is not open, else check it. */
  wake() {
    if (this.stopped) return;
    if (!this.ws || this.ws.readyState > 1) {
      this.retryNow();
      return;
    }
    if (this.ws.readyState === 1 && this.now() - this.lastFrame > (this.o.pingMs ?? 25000)) {
      // Silent for a while: a suspended tab's socket may be dead without a close.
      this.reconnect("woke up");
    }
  }

  /** Drops the socket and opens a new one at once (re-reads pending state). */
  reconnect(why: string) {
    if (this.stopped) return;
    this.drop();
    this.attempt = 0;
    this.state.value = { kind: "reconnecting", at: this.now(), attempt: 0, why };
    this.open();
  }

  retryNow() {
    if (this.stopped) return;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    if (!this.ws || this.ws.readyState > 1) this.open();
  }

  private open() {
    if (this.stopped) return;
    this.clearTimers();
    if (typeof navigator !== "undefined" && navigator.onLine === false) {
      this.state.value = { kind: "offline" };
      return; // the "online" event calls wake()
    }
    if (this.state.peek().kind !== "reconnecting") this.state.value = { kind: "connecting" };
    let ws: WebSocket;
    try {
      ws = new this.WS(this.o.url());
    } catch (e) {
      this.schedule(String(e));
      return;
    }
    this.ws = ws;
    ws.onopen = () => {
      if (this.ws !== ws) return;
      this.attempt = 0;
      this.lastFrame = this.now();
      this.state.value = { kind: "connected" };
      this.pingTimer = setInterval(() => this.tick(), Math.min(this.o.pingMs ?? 25000, this.o.idleMs ?? 70000));
      this.o.onOpen?.(ws);
    };
    ws.onmessage = (ev) => {
      if (this.ws !== ws) return;
      this.lastFrame = this.now();
      let data: any;
      try {
        data = JSON.parse(typeof ev.data === "string" ? ev.data : "");
      } catch {
        return;
      }
      this.o.onFrame(data);
    };
    ws.onclose = (ev) => {
      if (this.ws !== ws) return;
      this.ws = null;
      const fatal = this.o.fatal?.(ev);
      if (fatal) {
        this.clearTimers();
        this.state.value = { kind: "closed", why: fatal };
        return;
      }
      this.schedule(ev.code === 4001 ? "too slow" : `closed (${ev.code})`);
    };
    ws.onerror = () => {
      /* a close event follows */
    };
  }

  private tick() {
    if (!this.ws || this.ws.readyState !== 1) return;
    if (this.now() - this.lastFrame > (this.o.idleMs ?? 70000)) {
      this.reconnect("no frame for a while");
      return;
    }
    this.send({ type: "ping" });
  }

  private schedule(why: string) {
    this.clearTimers();
    if (this.stopped) return;
    this.attempt++;
    const delay = backoff(this.attempt, this.o.random);
    this.state.value = { kind: "reconnecting", at: this.now() + delay, attempt: this.attempt, why };
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.open();
    }, delay);
  }

  private drop() {
    this.clearTimers();
    const ws = this.ws;
    this.ws = null;
    if (ws) {
      ws.onclose = ws.onmessage = ws.onerror = ws.onopen = null;
      try {
        ws.close(4000, "reconnect");
      } catch {
        /* ignore */
      }
    }
  }

  private clearTimers() {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.pingTimer) clearInterval(this.pingTimer);
    this.retryTimer = null;
    this.pingTimer = null;
  }
}
