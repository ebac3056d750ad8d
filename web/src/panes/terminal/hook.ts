// window.__svcTerm: what the browser tests and the benchmark read of the
// terminals in the page (documented in web/e2e/README.md). Reading it costs
// nothing; a capture (a byte count and an FNV-1a hash of the output between two
// markers) runs only when a test asks for one.

import type { Terminal } from "@xterm/xterm";
import type { SerializeAddon } from "@xterm/addon-serialize";
import type { TermClient } from "./client";

/** Counts and hashes the output bytes after the first `begin` up to the first `end` after it (inclusive). */
export class Capture {
  state: "waiting" | "hashing" | "done" = "waiting";
  bytes = 0;
  hash = 0x811c9dc5;
  private begin: Uint8Array;
  private end: Uint8Array;
  private tail = new Uint8Array(0);

  constructor(begin: string, end: string) {
    const enc = new TextEncoder();
    this.begin = enc.encode(begin);
    this.end = enc.encode(end);
  }

  feed(data: Uint8Array) {
    if (this.state === "done") return;
    // The markers may span two chunks: search the previous chunk's tail joined to
    // this one's head, then this chunk (no copy of the chunk: it may be large).
    const want = this.state === "waiting" ? this.begin : this.end;
    const keep = this.tail.length;
    let stop = -1; // where the marker ends in data
    if (keep) {
      const at = find(concat(this.tail, data.subarray(0, want.length - 1)), want, 0);
      if (at >= 0) stop = at + want.length - keep;
    }
    if (stop < 0) {
      const at = find(data, want, 0);
      if (at >= 0) stop = at + want.length;
    }
    if (this.state === "waiting") {
      if (stop < 0) {
        this.keepTail(data, want.length - 1);
        return;
      }
      this.state = "hashing";
      this.tail = new Uint8Array(0);
      this.feed(data.subarray(stop));
      return;
    }
    // Hashing: the kept tail was hashed already.
    this.add(data.subarray(0, stop < 0 ? data.length : stop));
    if (stop >= 0) {
      this.state = "done";
      return;
    }
    this.keepTail(data, want.length - 1);
  }

  /** Keeps the last n bytes of the output so far (the kept tail, then data). */
  private keepTail(data: Uint8Array, n: number) {
    const all = data.length >= n ? data : concat(this.tail, data);
    this.tail = all.slice(Math.max(0, all.length - n));
  }

  private add(b: Uint8Array) {
    let h = this.hash;
    for (let i = 0; i < b.length; i++) h = Math.imul(h ^ b[i], 0x01000193);
    this.hash = h >>> 0;
    this.bytes += b.length;
  }
}

function concat(a: Uint8Array, b: Uint8Array) {
  const c = new Uint8Array(a.length + b.length);
  c.set(a);
  c.set(b, a.length);
  return c;
}

function find(hay: Uint8Array, needle: Uint8Array, from: number): number {
  const first = needle[0];
  for (let i = hay.indexOf(first, from); i >= 0 && i + needle.length <= hay.length; i = hay.indexOf(first, i + 1)) {
    let j = 1;
    while (j < needle.length && hay[i + j] === needle[j]) j++;
    if (j === needle.length) return i;
  }
  return -1;
}

export interface HookEntry {
  client: TermClient;
  term: Terminal;
  /** The serialize addon, once its chunk is loaded. */
  serializer: () => Promise<SerializeAddon>;
  renderer: () => string;
  capture: Capture | null;
  /** Resolves (performance.now()) once the next output that arrives is drawn. */
  nextDrawn: () => Promise<number>;
}

const entries = new Map<string, HookEntry>();

export function registerTerminal(id: string, e: HookEntry) {
  entries.set(id, e);
}
export function unregisterTerminal(id: string, e: HookEntry) {
  if (entries.get(id) === e) entries.delete(id);
}

function entry(id: string): HookEntry {
  const e = entries.get(id);
  if (!e) throw new Error(`no terminal ${id} in this page`);
  return e;
}

const hook = {
  /** The ids of the terminals mounted in this page. */
  ids: () => [...entries.keys()],
  /** The state of terminal id: stream position, what was drawn and acknowledged, size, renderer, counters. */
  info(id: string) {
    const { client, term, renderer, capture } = entry(id);
    return {
      state: client.state.peek().kind,
      stream: client.stream,
      offset: client.offset,
      rendered: client.rendered,
      acked: client.ackSent,
      pending: client.pending,
      flow: client.flow,
      rows: term.rows,
      cols: term.cols,
      renderer: renderer(),
      stats: { ...client.stats },
      capture: capture && { state: capture.state, bytes: capture.bytes, hash: capture.hash },
    };
  },
  /** The serialize addon's output (modes included); scrollback rows kept (default all; 0: the screen only). */
  serialize: async (id: string, scrollback?: number) => (await entry(id).serializer()).serialize(scrollback === undefined ? {} : { scrollback }),
  /** The visible lines as text (right-trimmed), top to bottom. */
  text(id: string) {
    const b = entry(id).term.buffer.active;
    const lines: string[] = [];
    for (let y = 0; y < entry(id).term.rows; y++) lines.push(b.getLine(b.viewportY + y)?.translateToString(true) ?? "");
    return lines.join("\n");
  },
  /** The last n lines of the active buffer (scrollback and screen, empty rows below the cursor included), right-trimmed, oldest first. */
  lines(id: string, n: number) {
    const b = entry(id).term.buffer.active;
    const lines: string[] = [];
    for (let y = Math.max(0, b.length - n); y < b.length; y++) lines.push(b.getLine(y)?.translateToString(true) ?? "");
    return lines;
  },
  /** Types data as the keyboard would (xterm.js input: onData, the sticky Ctrl, the socket). */
  input: (id: string, data: string) => entry(id).term.input(data, true),
  /** Resolves with performance.now() once the next output to arrive has been drawn. */
  nextDrawn: (id: string) => entry(id).nextDrawn(),
  /** Closes the socket as a network failure would; the client reconnects at its stream and offset. */
  disconnect: (id: string) => entry(id).client.dropSocket(),
  /** Starts counting and hashing (FNV-1a, 32 bits) the output after `begin` up to and including `end`. */
  capture(id: string, begin: string, end: string) {
    entry(id).capture = new Capture(begin, end);
  },
};

declare global {
  interface Window {
    __svcTerm?: typeof hook;
  }
}

if (typeof window !== "undefined") window.__svcTerm = hook;
