// The outbox: prompts written while the socket is down wait here (kept in
// IndexedDB, so a reload or a closed tab loses none of them) and go, in
// order, when the socket is back.
//
// An item is "waiting" until it is written to an open socket, then "sent"
// until the server acknowledges it (user_message_stored, in order). A socket
// that drops in between leaves the question open: the prompt may or may not
// have been stored. On the next connect the log after the line the item was
// sent at is read: found there, the item is done; otherwise it goes again.
// So a prompt is neither lost nor sent twice.

import { signal } from "@preact/signals";
import { get as idbGet, set as idbSet } from "idb-keyval";
import type { ImageBlock, StoredMessage } from "../protocol/types";

export interface OutItem {
  id: string;
  content: string;
  images?: ImageBlock[];
  created_at: string;
  state: "waiting" | "sent";
  /** The last line the page had when the item was written to the socket. */
  sentAfter?: number;
}

export interface KV {
  get(key: string): Promise<any>;
  set(key: string, value: any): Promise<void>;
}

export const idbKV: KV = { get: (k) => idbGet(k), set: (k, v) => idbSet(k, v) };

export function memoryKV(): KV & { data: Map<string, any> } {
  const data = new Map<string, any>();
  return {
    data,
    async get(k) {
      return structuredClone(data.get(k));
    },
    async set(k, v) {
      data.set(k, structuredClone(v));
    },
  };
}

export interface OutboxDeps {
  kv: KV;
  /** Writes to the socket; false when it is not open. */
  send: (msg: { type: "user_message"; content: string; images?: ImageBlock[] }) => boolean;
  lastLine: () => number;
  /** Stored messages with line > since (the HTTP log). */
  logSince: (since: number) => Promise<StoredMessage[]>;
  /** The texts of the server's prompt queue, as the last connect gave it. */
  queued?: () => string[];
}

export class Outbox {
  readonly items = signal<OutItem[]>([]);
  private key: string;
  private loaded: Promise<void>;
  private busy: Promise<void> = Promise.resolve();

  constructor(public sessionId: string, private d: OutboxDeps) {
    this.key = "outbox:" + sessionId;
    this.loaded = d.kv.get(this.key).then((v) => {
      if (Array.isArray(v)) this.items.value = v;
    });
  }

  ready() {
    return this.loaded;
  }

  /** Queues a prompt and sends it at once when the socket is open. */
  async add(content: string, images?: ImageBlock[]) {
    await this.loaded;
    const it: OutItem = { id: Math.random().toString(36).slice(2) + Date.now().toString(36), content, images: images?.length ? images : undefined, created_at: new Date().toISOString(), state: "waiting" };
    await this.save([...this.items.peek(), it]);
    await this.flush();
  }

  /** Drops a waiting item (the user changed their mind). */
  async remove(id: string) {
    await this.loaded;
    await this.save(this.items.peek().filter((i) => i.id !== id || i.state === "sent"));
  }

  /** Sends the waiting items in order while the socket takes them. */
  flush(): Promise<void> {
    this.busy = this.busy.then(async () => {
      await this.loaded;
      let items = this.items.peek();
      let changed = false;
      for (let i = 0; i < items.length; i++) {
        const it = items[i];
        if (it.state !== "waiting") continue;
        const sentAfter = this.d.lastLine();
        if (!this.d.send({ type: "user_message", content: it.content, ...(it.images ? { images: it.images } : {}) })) break;
        items = items.slice();
        items[i] = { ...it, state: "sent", sentAfter };
        changed = true;
      }
      if (changed) await this.save(items);
    });
    return this.busy;
  }

  /** user_message_stored: the oldest sent item is stored. */
  async acknowledged() {
    await this.loaded;
    const items = this.items.peek();
    const i = items.findIndex((x) => x.state === "sent");
    if (i < 0) return;
    await this.save(items.filter((_, j) => j !== i));
  }

  /**
   * The socket (re)connected: items sent on the old socket without an
   * acknowledgement are looked up in the log; those not there go again.
   */
  reconnected(): Promise<void> {
    this.busy = this.busy.then(async () => {
      await this.loaded;
      const sent = this.items.peek().filter((x) => x.state === "sent");
      if (sent.length > 0) {
        const since = Math.min(...sent.map((x) => x.sentAfter ?? 0));
        let log: StoredMessage[];
        try {
          log = await this.d.logSince(since);
        } catch {
          return; // the next connect tries again; nothing is re-sent blindly
        }
        // Each stored prompt (after the line the item went at) or item of the
        // server's queue accounts for one sent item with the same text.
        const seen: { text: string; line: number }[] = log.filter((m) => m.kind === "user_prompt").map((m) => ({ text: promptText(m.payload), line: m.line }));
        for (const t of this.d.queued?.() ?? []) seen.push({ text: t, line: Infinity });
        const keep: OutItem[] = [];
        for (const it of this.items.peek()) {
          if (it.state !== "sent") {
            keep.push(it);
            continue;
          }
          const j = seen.findIndex((p) => p.text === it.content && p.line > (it.sentAfter ?? 0));
          if (j >= 0) {
            seen.splice(j, 1);
            continue; // stored or queued by the server: done
          }
          keep.push({ ...it, state: "waiting" });
        }
        await this.save(keep);
      }
    });
    return this.busy.then(() => this.flush());
  }

  private async save(items: OutItem[]) {
    this.items.value = items;
    await this.d.kv.set(this.key, items);
  }
}

function promptText(p: any): string {
  if (!p) return "";
  if (typeof p.content === "string") return p.content;
  if (typeof p.message === "string") return p.message;
  return "";
}
