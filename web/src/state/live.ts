// One open session: its store, its /chat socket and its outbox.
//
// Opening reads the log over HTTP (pages of 5000 lines), then opens /chat
// with after_line = the last line read; every reconnect asks again from the
// last line applied, so nothing is missed, and the store drops what it has
// already seen (sid de-duplication). Permission requests come back with each
// connect (replay); what is not replayed is no longer pending.
//
// The socket also says whether someone is looking: {"type":"visibility",
// "visible": ...} after each `connected` and whenever the tab's visibility or
// the chat pane's display changes. The server sends a Web Push for a
// permission request only when no socket of the session said visible.

import { effect, signal } from "@preact/signals";
import { ApiError, get, q, wsURL } from "../lib/api";
import { deviceLabel } from "../lib/format";
import type { ChatFrame, ClientMessage, ImageBlock, Session, StoredMessage } from "../protocol/types";
import { applySession, removeSession, setSessionPending } from "./app";
import { idbKV, Outbox } from "./outbox";
import { PermissionBook } from "./permissions";
import { SessionStore } from "./session";
import { ReconnectingSocket } from "./socket";

export const LOG_PAGE = 5000;

export class LiveSession {
  readonly store: SessionStore;
  readonly socket: ReconnectingSocket;
  readonly outbox: Outbox;
  readonly loading = signal(true);
  readonly loadError = signal<string | null>(null);
  readonly session = signal<Session | null>(null);
  readonly label = deviceLabel();
  private disposers: (() => void)[] = [];
  private hiddenAt = 0;
  private closed = false;
  /** Whether the chat pane of this session is the one on screen (set by the view). */
  readonly shown = signal(true);
  /** What the socket was last told (null: nothing yet on this socket). */
  private toldVisible: boolean | null = null;

  constructor(public readonly id: string) {
    this.store = new SessionStore(id, new PermissionBook(this.label));
    this.socket = new ReconnectingSocket({
      url: () => wsURL(`/chat?session=${q(id)}&after_line=${this.store.lastLine}`),
      onFrame: (f: ChatFrame) => this.frame(f),
      onOpen: () => {
        // The first pong after connected marks the end of the permission replay.
        this.socket.send({ type: "ping" });
      },
      fatal: (ev) => (ev.code === 4404 ? "the session no longer exists" : null),
    });
    this.outbox = new Outbox(id, {
      kv: idbKV,
      send: (m) => this.socket.send(m),
      lastLine: () => this.store.lastLine,
      logSince: (since) => this.readLog(since),
      queued: () => this.store.queue.peek().map((x) => x.content),
    });
    this.disposers.push(
      effect(() => {
        const items = this.store.perms.items.value;
        setSessionPending(id, items.filter((p) => p.status === "pending" || p.status === "sending").map((p) => p.req));
      }),
    );
    // A socket that keeps failing may be refused because the session is gone
    // (404 before the upgrade): ask, and stop retrying if so.
    this.disposers.push(
      this.socket.state.subscribe((st) => {
        if (st.kind === "reconnecting" && st.attempt >= 2) this.checkGone();
      }),
    );
    this.disposers.push(
      effect(() => {
        void this.shown.value;
        this.tellVisibility();
      }),
    );
    const wake = () => {
      this.tellVisibility();
      if (document.visibilityState === "hidden") {
        this.hiddenAt = Date.now();
        return;
      }
      this.wake();
    };
    document.addEventListener("visibilitychange", wake);
    addEventListener("pageshow", wake);
    addEventListener("focus", wake);
    addEventListener("online", wake);
    this.disposers.push(() => {
      document.removeEventListener("visibilitychange", wake);
      removeEventListener("pageshow", wake);
      removeEventListener("focus", wake);
      removeEventListener("online", wake);
    });
  }

  async open() {
    try {
      const s = await get<Session>(`/api/session/${q(this.id)}`);
      this.session.value = s;
      this.store.mode.value = s.permission_mode;
      this.store.provider.value = s.provider;
      this.store.providerLocked.value = s.provider_locked;
      this.store.cwd.value = s.cwd;
      this.store.agentRunning.value = s.agent_running;
      const msgs = await this.readLogParallel(s.last_line ?? 0);
      if (this.closed) return;
      this.store.loadMessages(msgs);
    } catch (e) {
      this.loadError.value = e instanceof ApiError && e.status === 404 ? "This session does not exist (deleted?)." : (e as Error).message;
      this.loading.value = false;
      if (e instanceof ApiError && e.status === 404) removeSession(this.id);
      return;
    }
    this.loading.value = false;
    if (!this.closed) this.socket.start();
  }

  /**
   * The whole log, its pages fetched at once: page i asks for the lines after
   * i × LOG_PAGE. Lines lost in a crash make a page reach into the next one;
   * the overlap is dropped by the store's sid de-duplication, and nothing is
   * skipped (each page holds every line from its start to at least the next
   * page's start). What is past last_line comes from the socket.
   */
  private async readLogParallel(lastLine: number): Promise<StoredMessage[]> {
    const n = Math.max(1, Math.ceil(lastLine / LOG_PAGE));
    if (n === 1) return this.readLog(0);
    const pages = await Promise.all(
      Array.from({ length: n }, (_, i) => get<{ messages: StoredMessage[] }>(`/api/sessions/${q(this.id)}/logs/messages?since=${i * LOG_PAGE}&limit=${LOG_PAGE}`).then((r) => r.messages)),
    );
    return pages.flat();
  }

  private async readLog(since: number): Promise<StoredMessage[]> {
    const out: StoredMessage[] = [];
    for (;;) {
      const r = await get<{ messages: StoredMessage[]; has_more: boolean }>(`/api/sessions/${q(this.id)}/logs/messages?since=${since}&limit=${LOG_PAGE}`);
      out.push(...r.messages);
      if (!r.has_more || r.messages.length === 0) return out;
      since = r.messages[r.messages.length - 1].line;
    }
  }

  /** Whether someone looks at this session here: the tab visible and the chat pane shown. */
  isWatched(): boolean {
    return document.visibilityState === "visible" && this.shown.peek();
  }

  /** Tells the socket whether this session is watched, when it changed (or always, after a connect). */
  private tellVisibility(always = false) {
    const v = this.isWatched();
    if (!always && v === this.toldVisible) return;
    this.toldVisible = this.socket.send(visibilityMessage(v)) ? v : null;
  }

  private frame(f: ChatFrame) {
    this.store.apply(f);
    switch (f.type) {
      case "connected":
        // A new socket starts as not watching on the server: say it now.
        this.tellVisibility(true);
        this.outbox.reconnected();
        return;
      case "user_message_stored":
      case "user_message_queued":
        // The sender's prompt is stored, or queued behind the running turn.
        this.outbox.acknowledged();
        return;
      case "session_cleared":
      case "permission_mode_changed":
        this.refreshSession();
        return;
      case "message_stored":
        // The first prompt locks the provider on the server: re-read the
        // session so that the header stops offering a switch at once.
        if (!this.store.providerLocked.peek()) this.refreshSession();
        return;
      case "agent_message":
        if (f.data?.type === "result") this.refreshSession();
        return;
    }
  }

  private checking = false;
  private async checkGone() {
    if (this.checking || this.closed) return;
    this.checking = true;
    try {
      await get(`/api/session/${q(this.id)}`);
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) {
        this.socket.stop();
        this.socket.state.value = { kind: "closed", why: "the session was deleted" };
        removeSession(this.id);
      }
    } finally {
      this.checking = false;
    }
  }

  private refreshTimer: ReturnType<typeof setTimeout> | null = null;
  /** Re-reads the session object (title, cost, turns, lock) soon. */
  refreshSession() {
    if (this.refreshTimer) return;
    this.refreshTimer = setTimeout(async () => {
      this.refreshTimer = null;
      try {
        const s = await get<Session>(`/api/session/${q(this.id)}`);
        this.session.value = s;
        this.store.providerLocked.value = s.provider_locked;
        applySession({ ...s, agent_running: this.store.agentRunning.peek() });
      } catch {
        /* next time */
      }
    }, 300);
  }

  /** A prompt: through the outbox, so it survives a dropped socket or a reload. */
  sendPrompt(content: string, images?: ImageBlock[]) {
    return this.outbox.add(content, images);
  }

  send(m: ClientMessage): boolean {
    return this.socket.send(m);
  }

  answer(requestId: string, body: Omit<Extract<ClientMessage, { type: "permission_response" }>, "type" | "request_id" | "answered_by">): boolean {
    this.store.perms.answering(requestId);
    const ok = this.socket.send({ type: "permission_response", request_id: requestId, answered_by: this.label, ...body });
    if (!ok) this.store.perms.unsent(requestId);
    return ok;
  }

  toolAnswer(requestId: string, answers: Record<string, string>): boolean {
    this.store.perms.answering(requestId);
    const ok = this.socket.send({ type: "tool_answer", request_id: requestId, answers, answered_by: this.label });
    if (!ok) this.store.perms.unsent(requestId);
    return ok;
  }

  /** The tab is visible again: check the socket and re-read pending requests. */
  wake() {
    if (this.closed) return;
    const away = this.hiddenAt > 0 ? Date.now() - this.hiddenAt : 0;
    this.hiddenAt = 0;
    if (!this.socket.open_) this.socket.retryNow();
    // Back after a while: the socket may be dead without a close event (iOS),
    // and pending requests may have changed: a fresh connect re-reads them.
    else if (away > 3000) this.socket.reconnect("tab visible again");
    else this.socket.wake();
  }

  close() {
    this.closed = true;
    this.socket.stop();
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    for (const d of this.disposers) d();
  }
}

/** The /chat client message that says whether the session is on screen. */
export function visibilityMessage(visible: boolean) {
  return { type: "visibility" as const, visible };
}
