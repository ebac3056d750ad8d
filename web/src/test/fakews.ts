// A WebSocket the tests drive by hand: it records what the client sends
// (raw strings and binary frames in `sent`) and lets the test open it, hand it
// frames (JSON text or binary) and drop it.
export class FakeWS {
  static all: FakeWS[] = [];
  readyState = 0;
  binaryType = "blob";
  sent: (string | Uint8Array)[] = [];
  /** The code the client closed it with (null while it has not). */
  closed: number | null = null;
  onopen: (() => void) | null = null;
  onmessage: ((e: { data: string | ArrayBuffer }) => void) | null = null;
  onclose: ((e: { code: number }) => void) | null = null;
  onerror: (() => void) | null = null;
  constructor(public url: string) {
    FakeWS.all.push(this);
  }
  send(s: string | Uint8Array) {
    this.sent.push(s);
  }
  /** What was sent as text, each message decoded from JSON. */
  messages(): any[] {
    return this.sent.filter((s): s is string => typeof s === "string").map((s) => JSON.parse(s));
  }
  close(code = 1005) {
    this.closed = code;
    this.readyState = 3;
  }
  open() {
    this.readyState = 1;
    this.onopen?.();
  }
  /** A text frame: f as JSON. */
  frame(f: unknown) {
    this.onmessage?.({ data: JSON.stringify(f) });
  }
  /** A binary frame (a string is sent as its UTF-8 bytes). */
  bin(s: string | Uint8Array) {
    const b = typeof s === "string" ? new TextEncoder().encode(s) : s;
    this.onmessage?.({ data: b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer });
  }
  drop(code = 1006) {
    this.readyState = 3;
    this.onclose?.({ code });
  }
  /** The query of the URL it was opened with. */
  query() {
    return new URL(this.url, "ws://x").searchParams;
  }
}
