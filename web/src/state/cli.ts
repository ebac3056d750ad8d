// The sessions the user ran in a terminal (Claude Code, Codex), beside
// svc-code's own: their list (GET /api/cli-sessions) and one of them opened
// read-only, its file followed while the CLI writes (docs/api.md "Terminal
// sessions"). The view renders the records with the live session's reducer
// (SessionStore) and blocks.

import { signal, type Signal } from "@preact/signals";
import { api, ApiError, get, post, q } from "../lib/api";
import type { Session } from "../protocol/types";
import type { CLIContinueResponse, CLISession, CLISessionList } from "../protocol/types.gen";
import { applySession, type CliRef } from "./app";
import { appendFollow, firstPage, followBackoff, prependPage, type CliLog, type CliPage } from "./clilog";
import { SessionStore } from "./session";

export type CliProvider = CliRef["provider"];

export const CLI_PROVIDERS: { name: CliProvider; label: string }[] = [
  { name: "claude", label: "Claude Code" },
  { name: "codex", label: "Codex" },
];

export function cliProviderLabel(p: string): string {
  return CLI_PROVIDERS.find((x) => x.name === p)?.label ?? p;
}

/** A terminal session as the list answers it (libs/protocol CLISession). */
export type CliSession = CLISession;

export function cliPath(s: { provider: string; id: string }): string {
  return `/cli/${s.provider}/${s.id}`;
}

// ---- the list ----

const LIST_PAGE = 50;

/** The list's filters, its rows and state; shared by the sidebar's tab and the /cli page. */
export const cliList = {
  query: signal(""),
  provider: signal<"" | CliProvider>(""),
  items: signal<CliSession[]>([]),
  total: signal(0),
  loading: signal(false),
  error: signal<string | null>(null),
  /** Whether it was read at least once. */
  loaded: signal(false),
};

let listSeq = 0;

/** Reads the list's first page (more: the next page, appended). */
export async function loadCliList(more = false) {
  const seq = ++listSeq;
  const offset = more ? cliList.items.peek().length : 0;
  const params = new URLSearchParams({ limit: String(LIST_PAGE), offset: String(offset) });
  if (cliList.query.peek().trim()) params.set("q", cliList.query.peek().trim());
  if (cliList.provider.peek()) params.set("provider", cliList.provider.peek());
  cliList.loading.value = true;
  try {
    const r = await get<CLISessionList>(`/api/cli-sessions?${params}`);
    if (seq !== listSeq) return;
    cliList.items.value = more ? [...cliList.items.peek(), ...r.sessions] : r.sessions;
    cliList.total.value = r.total;
    cliList.error.value = null;
    cliList.loaded.value = true;
  } catch (e) {
    if (seq === listSeq) cliList.error.value = (e as Error).message;
  } finally {
    if (seq === listSeq) cliList.loading.value = false;
  }
}

// ---- one session, read-only ----

/** Records read at first (the newest), and per earlier page. */
export const FIRST_LIMIT = 100;
export const OLDER_LIMIT = 200;
/** The long poll's wait (s). */
const FOLLOW_WAIT = 25;

export type FollowState = "following" | "paused" | "retrying" | "stopped";

export class CliView {
  readonly info = signal<CliSession | null>(null);
  /** The reducer the blocks come from: replaced when earlier records are put in front. */
  readonly store: Signal<SessionStore>;
  readonly loading = signal(true);
  readonly error = signal<string | null>(null);
  readonly olderLoading = signal(false);
  readonly olderError = signal<string | null>(null);
  readonly hasMoreBefore = signal(false);
  readonly size = signal(0);
  readonly follow = signal<FollowState>("following");
  readonly followError = signal<string | null>(null);
  /** Why the view was read again from the end (the file was replaced), once. */
  readonly reloaded = signal<string | null>(null);
  /** Whether the CLI's bookkeeping records (cli_meta) are shown. */
  readonly showMeta = signal(false);
  private log: CliLog | null = null;
  private closed = false;
  private abort: AbortController | null = null;
  private wakeUp: (() => void) | null = null;
  private epoch = 0;
  private readonly onVis = () => {
    if (document.visibilityState === "visible") this.wakeUp?.();
    else this.abort?.abort(); // no long poll kept open in a hidden tab
  };

  readonly ref: CliRef;

  constructor(ref: CliRef) {
    this.ref = ref;
    this.store = signal(this.newStore());
  }

  private base() {
    return `/api/cli-sessions/${q(this.ref.provider)}/${q(this.ref.id)}`;
  }

  private newStore() {
    return new SessionStore(this.ref.id, undefined, { gaps: false, meta: this.showMeta.peek() });
  }

  async open() {
    document.addEventListener("visibilitychange", this.onVis);
    try {
      const [info] = await Promise.all([get<CliSession>(this.base()), this.readEnd()]);
      if (this.closed) return;
      this.info.value = info;
    } catch (e) {
      this.error.value = e instanceof ApiError && e.status === 404 ? "There is no such terminal session (its file was removed?)." : (e as Error).message;
      this.loading.value = false;
      return;
    }
    this.loading.value = false;
    this.followLoop();
  }

  /** Reads the newest page and renders it (at open, and after the file was replaced). */
  private async readEnd() {
    const p = await get<CliPage>(`${this.base()}/messages?limit=${FIRST_LIMIT}`);
    if (this.closed) return;
    this.epoch++;
    this.log = firstPage(p);
    this.render();
  }

  private render() {
    const log = this.log!;
    const st = this.newStore();
    st.loadMessages(log.messages);
    this.store.value = st;
    this.hasMoreBefore.value = log.hasMoreBefore;
    this.size.value = log.size;
  }

  /** Shows or hides the bookkeeping records (the blocks are built again). */
  setShowMeta(on: boolean) {
    this.showMeta.value = on;
    if (this.log) this.render();
  }

  /** Reads the page before the first record held and puts it in front. */
  async loadOlder() {
    const log = this.log;
    if (!log || !log.hasMoreBefore || this.olderLoading.peek()) return;
    const epoch = this.epoch;
    this.olderLoading.value = true;
    try {
      const p = await get<CliPage>(`${this.base()}/messages?before=${log.start}&limit=${OLDER_LIMIT}`);
      if (this.closed || epoch !== this.epoch) return;
      // (Records followed meanwhile leave the start as it was.)
      const next = prependPage(this.log!, p);
      if (!next) return this.replaced("The file changed under this page; it was read again from its end.");
      this.log = next;
      this.render();
      this.olderError.value = null;
    } catch (e) {
      if (e instanceof ApiError && e.status === 409) return this.replaced("The file was replaced; it was read again from its end.");
      this.olderError.value = (e as Error).message;
    } finally {
      this.olderLoading.value = false;
    }
  }

  private async replaced(why: string) {
    this.reloaded.value = why;
    try {
      await this.readEnd();
    } catch (e) {
      this.error.value = (e as Error).message;
    }
  }

  /** Long polls for appended records while the page is open and visible. */
  private async followLoop() {
    let failures = 0;
    while (!this.closed) {
      if (document.visibilityState === "hidden") {
        this.follow.value = "paused";
        await new Promise<void>((r) => (this.wakeUp = r));
        this.wakeUp = null;
        continue;
      }
      this.follow.value = failures ? "retrying" : "following";
      const epoch = this.epoch;
      const ctrl = (this.abort = new AbortController());
      try {
        const p = await api<CliPage>("GET", `${this.base()}/messages?after=${this.log!.end}&wait=${FOLLOW_WAIT}`, undefined, { signal: ctrl.signal });
        if (this.closed) return;
        if (epoch !== this.epoch) continue; // read again from the end meanwhile
        // (Earlier records put in front meanwhile leave the end as it was.)
        const r = appendFollow(this.log!, p);
        if (!r) {
          await this.replaced("The file changed under this page; it was read again from its end.");
          continue;
        }
        this.log = r.log;
        this.size.value = r.log.size;
        if (r.added.length) this.store.peek().loadMessages(r.added);
        failures = 0;
        this.followError.value = null;
      } catch (e) {
        if (this.closed) return;
        if (ctrl.signal.aborted) continue; // hidden: pause
        if (e instanceof ApiError && e.status === 409) {
          await this.replaced("The file was replaced (it shrank); it was read again from its end.");
          continue;
        }
        if (e instanceof ApiError && e.status === 404) {
          this.follow.value = "stopped";
          this.followError.value = "The file is gone: nothing more to follow.";
          return;
        }
        failures++;
        this.follow.value = "retrying";
        this.followError.value = (e as Error).message;
        await new Promise<void>((r) => {
          const t = setTimeout(r, followBackoff(failures));
          this.wakeUp = () => (clearTimeout(t), r());
        });
        this.wakeUp = null;
      } finally {
        this.abort = null;
      }
    }
  }

  /** Starts an svc-code session that resumes this one; resolves to it. */
  async continueHere(): Promise<Session> {
    const r = await post<CLIContinueResponse>(`${this.base()}/continue`, {});
    applySession(r.session as any);
    return r.session as Session;
  }

  close() {
    this.closed = true;
    document.removeEventListener("visibilitychange", this.onVis);
    this.abort?.abort();
    this.wakeUp?.();
  }
}
