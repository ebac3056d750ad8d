// The permission requests of one session and what became of them.
//
// A request is pending until a permission_resolved frame says otherwise:
// answered here (this tab sent the answer), answered elsewhere (another tab
// or device: answered_by says which), expired (our answer came too late:
// ok false), or retired by the server (cancelled, process exited, session
// cleared, owner lost). After every (re)connect the server replays what is
// still pending; requests it does not replay are no longer pending.

import { signal } from "@preact/signals";
import type { PendingPermission, PermissionRequestFrame, PermissionResolvedFrame } from "../protocol/types";

export type PermStatus = "pending" | "sending" | "answered" | "expired" | "retired";

export interface PermState {
  req: PendingPermission;
  status: PermStatus;
  behavior?: string;
  answeredBy?: string;
  here?: boolean;
  reason?: string;
}

export class PermissionBook {
  readonly items = signal<PermState[]>([]);
  /** The server's replay of pending requests ended at least once (a request not in items now is not pending). */
  readonly synced = signal(false);
  private mine = new Set<string>();
  private resync: Set<string> | null = null;

  constructor(public label = "") {}

  pending(): PermState[] {
    return this.items.value.filter((p) => p.status === "pending" || p.status === "sending");
  }

  request(f: PermissionRequestFrame & { session_id: string }) {
    this.resync?.delete(f.request_id);
    const req: PendingPermission = { session_id: f.session_id, request_id: f.request_id, tool_name: f.tool_name, input: f.input ?? {}, suggestions: f.suggestions ?? [] };
    const items = this.items.peek();
    const i = items.findIndex((p) => p.req.request_id === f.request_id);
    if (i >= 0) {
      // A replay of a request we know: it is still pending.
      if (items[i].status === "pending" || items[i].status === "sending") return;
      const next = items.slice();
      next[i] = { req, status: "pending" };
      this.items.value = next;
      return;
    }
    this.items.value = [...items, { req, status: "pending" }];
  }

  /** The user answered in this tab; the card waits for permission_resolved. */
  answering(requestId: string) {
    this.mine.add(requestId);
    this.update(requestId, (p) => (p.status === "pending" ? { ...p, status: "sending" } : p));
  }

  /** The answer could not be sent (socket closed): the card is pending again. */
  unsent(requestId: string) {
    this.mine.delete(requestId);
    this.update(requestId, (p) => (p.status === "sending" ? { ...p, status: "pending" } : p));
  }

  resolved(f: PermissionResolvedFrame & { session_id: string }) {
    this.resync?.delete(f.request_id);
    const mine = this.mine.has(f.request_id);
    const here = mine && (!f.answered_by || f.answered_by === this.label);
    this.update(f.request_id, (p) => {
      if (f.ok) return { ...p, status: "answered", behavior: f.behavior, answeredBy: f.answered_by, here };
      if (f.reason) return { ...p, status: "retired", reason: f.reason };
      if (mine && p.status === "sending") return { ...p, status: "expired" };
      return { ...p, status: "retired", reason: "answered or expired" };
    });
    this.mine.delete(f.request_id);
  }

  /** A (re)connect began: what the server does not replay is no longer pending. */
  beginResync() {
    this.resync = new Set(this.pending().map((p) => p.req.request_id));
  }

  /** The replay is over (the first pong after connected). */
  endResync() {
    const gone = this.resync;
    this.resync = null;
    if (gone) this.synced.value = true;
    if (!gone || gone.size === 0) return;
    this.items.value = this.items.peek().map((p) => (gone.has(p.req.request_id) && (p.status === "pending" || p.status === "sending") ? { ...p, status: "retired", reason: "no longer pending (answered or retired while this page was away)" } : p));
  }

  retireAll(reason: string) {
    this.items.value = this.items.peek().map((p) => (p.status === "pending" || p.status === "sending" ? { ...p, status: "retired", reason } : p));
  }

  private update(id: string, f: (p: PermState) => PermState) {
    const items = this.items.peek();
    const i = items.findIndex((p) => p.req.request_id === id);
    if (i < 0) return;
    const next = items.slice();
    next[i] = f(items[i]);
    this.items.value = next;
  }
}

/** What a card that is no longer pending says. */
export function outcomeText(p: PermState): string {
  const verb = p.behavior === "allow" ? "allowed" : p.behavior === "deny" ? "denied" : p.behavior || "answered";
  switch (p.status) {
    case "answered":
      if (p.here) return `Answered here: ${verb}`;
      if (p.answeredBy === "notification") return `Answered from a notification: ${verb}`;
      return p.answeredBy ? `Answered on another device (${p.answeredBy}): ${verb}` : `Answered elsewhere: ${verb}`;
    case "expired":
      return "This request had expired: your answer was not used";
    case "retired":
      return `No longer pending: ${reasonText(p.reason)}`;
    case "sending":
      return "Sending your answer…";
  }
  return "";
}

function reasonText(r?: string): string {
  switch (r) {
    case "cancelled":
      return "the agent cancelled the request";
    case "process_exited":
      return "the agent's process ended";
    case "session_cleared":
      return "the session was cleared";
    case "owner_lost":
      return "the agent's process was lost";
  }
  return r ?? "retired";
}
