// The conversation of one session: the frame reducer.
//
// Frames come from the /chat socket (live and replayed after after_line) and
// from the HTTP log (the first load). Every logged frame carries a line; its
// sid {session_id}:{line} is seen once: a frame whose sid is known is dropped,
// a line past the next expected one leaves a gap block (shown, never hidden).
//
// Rendering stays fine-grained: blocks live in pages of PAGE blocks, each page
// a signal of its own, so appending a block re-renders the last page only, and
// a tool result or a streamed delta changes the one signal of its block.

import { batch, signal, type Signal } from "@preact/signals";
import type { ChatFrame, ImageBlock, QueueItem, StoredMessage } from "../protocol/types";
import { PermissionBook } from "./permissions";

export const PAGE = 50;

export interface ToolResult {
  content: unknown;
  is_error: boolean;
  line: number;
}

interface BlockBase {
  key: string;
  /** The log line this block came from; 0 for frames that are not logged. */
  line: number;
  /** The sid of the line this block is the element of (one block per line). */
  sid?: string;
  /** Sids of lines shown without a block of their own (a tool result, a stream delta, a turn's init). */
  extra?: Signal<string[]>;
  /** The record as received, shown by "raw". */
  raw?: unknown;
}

export type Block =
  | (BlockBase & { kind: "user"; text: string; images: ImageBlock[] })
  | (BlockBase & { kind: "text"; text: Signal<string>; open: Signal<boolean> })
  | (BlockBase & { kind: "thinking"; text: string })
  | (BlockBase & { kind: "tool"; id: string; name: string; input: any; result: Signal<ToolResult | null> })
  | (BlockBase & { kind: "result"; cost?: number; totalCost?: number; inputTokens: number; outputTokens: number; cacheTokens: number; durationMs?: number; isError: boolean; subtype: string; text?: string })
  | (BlockBase & { kind: "notice"; tone: "info" | "warn" | "error"; label: string; text: string })
  | (BlockBase & { kind: "raw_output" | "stderr"; text: string })
  | (BlockBase & { kind: "gap"; from: number; to: number; text?: string })
  | (BlockBase & { kind: "json"; label: string; value: unknown })
  | (BlockBase & { kind: "meta" })
  | (BlockBase & { kind: "exec"; command: string; stdout: string; stderr: string; exitCode: number; durationMs: number; truncated: boolean; error?: string });

export interface Page {
  key: number;
  blocks: Signal<Block[]>;
}

export type AgentState = "idle" | "working" | "stopped";

export class SessionStore {
  readonly id: string;
  /** Highest line applied. */
  lastLine = 0;
  /** Sids applied: `${id}:${line}`. */
  private seen = new Set<string>();
  private tools = new Map<string, Extract<Block, { kind: "tool" }>>();
  private openText: Extract<Block, { kind: "text" }> | null = null;
  private seq = 0;
  /** The line being applied, and whether a block took its sid. */
  private curLine = 0;
  private owned = false;
  /** The last result's total_cost_usd (the agent reports a running total). */
  private lastTotal = 0;

  readonly pages = signal<Page[]>([]);
  readonly count = signal(0);
  readonly lastLineSig = signal(0);
  readonly agentRunning = signal(false);
  readonly isCompacting = signal(false);
  readonly stopOutcome = signal<string | null>(null);
  readonly heartbeat = signal<string | null>(null);
  /** The server's last `storage` frame said PostgreSQL is unreachable: its message, else null. */
  readonly storageDown = signal<string | null>(null);
  readonly mode = signal<string>("default");
  readonly modeApplied = signal<"live" | "next_turn" | null>(null);
  readonly provider = signal("");
  readonly providerName = signal("");
  readonly providerLocked = signal(false);
  readonly cwd = signal("");
  readonly queue = signal<QueueItem[]>([]);
  readonly ended = signal<string | null>(null);
  readonly lastError = signal<string | null>(null);
  readonly cleared = signal<string | null>(null);
  readonly perms: PermissionBook;

  /** Whether a jump in line numbers makes a gap block (a file read by a CLI may skip blank lines). */
  private readonly gaps: boolean;
  /** Whether a CLI's bookkeeping records (cli_meta) get a block of their own. */
  private readonly meta: boolean;

  constructor(id: string, perms?: PermissionBook, opts: { gaps?: boolean; meta?: boolean } = {}) {
    this.id = id;
    this.perms = perms ?? new PermissionBook();
    this.gaps = opts.gaps ?? true;
    this.meta = opts.meta ?? false;
  }

  get agentState(): AgentState {
    if (this.agentRunning.value) return "working";
    return this.stopOutcome.value ? "stopped" : "idle";
  }

  /** Stored messages of the HTTP log, in order (first load). */
  loadMessages(msgs: StoredMessage[]) {
    batch(() => {
      for (const m of msgs) this.apply(frameOf(m));
    });
  }

  /** Applies one frame; returns false when it was a duplicate. */
  apply(f: ChatFrame): boolean {
    const line = (f as any).line;
    const logged = typeof line === "number" && line > 0;
    if (logged) {
      if (this.seen.has(`${this.id}:${line}`)) return false;
      this.curLine = line;
      this.owned = false;
    }
    const r = this.apply1(f);
    if (logged) {
      // Every line the page took is one element: a line that made no block
      // of its own rides on the last block, so the page's sids stay in order.
      if (!this.owned) {
        const sid = `${this.id}:${line}`;
        const last = this.lastBlock();
        if (last?.extra) last.extra.value = [...last.extra.peek(), sid];
        else this.push({ kind: "meta", key: this.key(), line: 0, extra: signal([sid]) });
      }
      this.curLine = 0;
    }
    return r;
  }

  private lastBlock(): Block | undefined {
    const pages = this.pages.peek();
    const bl = pages[pages.length - 1]?.blocks.peek();
    return bl?.[bl.length - 1];
  }

  private apply1(f: ChatFrame): boolean {
    const line = (f as any).line;
    if (typeof line === "number" && line > 0) {
      const sid = `${this.id}:${line}`;
      if (this.seen.has(sid)) return false;
      this.seen.add(sid);
      // Nothing seen yet: a log may start past line 1 (cleared sessions).
      if (this.gaps && this.lastLine > 0 && line > this.lastLine + 1) this.push({ kind: "gap", key: this.key(), line: 0, from: this.lastLine + 1, to: line - 1 });
      if (line > this.lastLine) {
        this.lastLine = line;
        this.lastLineSig.value = line;
      }
    }
    switch (f.type) {
      case "connected":
        batch(() => {
          this.agentRunning.value = f.agent_running;
          this.isCompacting.value = f.is_compacting;
          this.mode.value = f.permission_mode;
          this.provider.value = f.provider;
          this.providerName.value = f.provider_display_name ?? f.provider;
          this.providerLocked.value = f.provider_locked;
          this.cwd.value = f.cwd;
          if (f.queue) this.queue.value = f.queue;
          this.perms.beginResync();
        });
        return true;
      case "message_stored":
        this.closeText();
        if (f.message && f.message.role === "user") {
          this.push({ kind: "user", key: this.key(), line: f.line, text: f.message.content ?? "", images: f.message.images ?? [], raw: f.message });
          // A prompt stored starts (or queues behind) a turn.
          this.agentRunning.value = true;
          this.stopOutcome.value = null;
          this.ended.value = null;
        } else if ((f.message as any)?.type === "parse_error") {
          // A line of a CLI's transcript that is not JSON: say where.
          const m = f.message as any;
          this.push({ kind: "notice", key: this.key(), line: f.line, tone: "error", label: "parse error", text: `${m.file ?? "?"}, line ${m.line ?? f.line}: ${m.error ?? "not valid JSON"}`, raw: m });
        } else if (f.message && f.message.role === "notice") {
          // A server notice (a queued prompt that could not be sent, a gap: lines the log lost, ...).
          const gap = f.message.level === "warning";
          this.push({ kind: "notice", key: this.key(), line: f.line, tone: gap ? "warn" : "error", label: f.message.gap ? "gap" : "notice", text: f.message.content, raw: f.message });
        } else {
          this.push({ kind: "json", key: this.key(), line: f.line, label: "notice", value: f.message, raw: f.message });
        }
        return true;
      case "agent_message":
        this.agent(f.data, f.line ?? 0);
        return true;
      case "user_message_stored":
      case "user_message_queued":
        return true;
      case "raw_output":
      case "stderr":
        this.closeText();
        this.push({ kind: f.type, key: this.key(), line: 0, text: f.line, raw: f });
        return true;
      case "permission_request":
        this.perms.request({ ...f, session_id: this.id });
        return true;
      case "permission_resolved":
        this.perms.resolved({ ...f, session_id: this.id });
        return true;
      case "session_cleared":
        this.reset();
        this.cleared.value = f.archived_session_id;
        return true;
      case "stopped":
        batch(() => {
          this.stopOutcome.value = f.outcome;
          if (f.outcome === "idle") this.agentRunning.value = false;
        });
        this.push({ kind: "notice", key: this.key(), line: 0, tone: "info", label: "stopped", text: stopText(f.outcome), raw: f });
        return true;
      case "permission_mode_changed":
        batch(() => {
          this.mode.value = f.mode;
          this.modeApplied.value = f.applied;
        });
        return true;
      case "compact_progress":
        this.isCompacting.value = f.is_compacting;
        if (f.heartbeat) {
          this.heartbeat.value = `silent ${Math.round((f.silent_ms ?? 0) / 1000)} s${f.is_compacting ? " · compacting" : ""}`;
        } else {
          this.heartbeat.value = f.is_compacting ? "compacting" : null;
          this.push({ kind: "notice", key: this.key(), line: 0, tone: "info", label: "compaction", text: `compaction ${f.phase ?? ""}${f.trigger ? " (" + f.trigger + ")" : ""}${f.result ? ": " + f.result : ""}`, raw: f });
        }
        return true;
      case "session_ended":
        batch(() => {
          this.agentRunning.value = false;
          this.isCompacting.value = false;
          this.heartbeat.value = null;
          this.ended.value = f.reason;
        });
        this.closeText();
        this.push({ kind: "notice", key: this.key(), line: 0, tone: f.cause === "crashed" ? "error" : "warn", label: "session ended", text: `${f.reason} (${f.cause}${f.exit_code !== undefined ? ", exit " + f.exit_code : ""})`, raw: f });
        this.perms.retireAll("process_exited");
        return true;
      case "error":
        this.lastError.value = f.message;
        this.push({ kind: "notice", key: this.key(), line: 0, tone: "error", label: "error", text: f.message, raw: f });
        return true;
      case "queue":
        this.queue.value = f.items ?? [];
        return true;
      case "storage":
        // A status line while the server cannot reach its database (it retries).
        this.storageDown.value = f.available ? null : f.message || "storage unavailable, retrying";
        return true;
      case "pong":
        this.perms.endResync();
        return true;
      default:
        this.push({ kind: "json", key: this.key(), line: line ?? 0, label: (f as any).type ?? "frame", value: f, raw: f });
        return true;
    }
  }

  /** An agent_message's data (provider-neutral agent JSON). */
  private agent(d: any, line: number) {
    if (!d || typeof d !== "object") {
      this.push({ kind: "json", key: this.key(), line, label: "agent", value: d, raw: d });
      return;
    }
    switch (d.type) {
      case "assistant": {
        this.heartbeat.value = null;
        this.agentRunning.value = true;
        const content = d.message?.content;
        if (typeof content === "string") {
          this.text(content, line, d);
          return;
        }
        if (!Array.isArray(content)) break;
        for (const c of content) {
          if (c?.type === "text") this.text(c.text ?? "", line, d);
          else if (c?.type === "thinking" || c?.type === "redacted_thinking") {
            this.closeText();
            this.push({ kind: "thinking", key: this.key(), line, text: c.thinking ?? "(redacted)", raw: d });
          } else if (c?.type === "tool_use" || c?.type === "server_tool_use") {
            this.closeText();
            const b = { kind: "tool" as const, key: this.key(), line, id: c.id ?? "", name: c.name ?? "?", input: c.input ?? {}, result: signal<ToolResult | null>(null), raw: d };
            if (b.id) this.tools.set(b.id, b);
            this.push(b);
          } else {
            this.closeText();
            this.push({ kind: "json", key: this.key(), line, label: `assistant ${c?.type ?? "block"}`, value: c, raw: d });
          }
        }
        return;
      }
      case "user": {
        const content = d.message?.content;
        if (Array.isArray(content)) {
          let other = false;
          for (const c of content) {
            if (c?.type === "tool_result") {
              const t = this.tools.get(c.tool_use_id);
              const r = { content: c.content, is_error: !!c.is_error, line };
              if (t) t.result.value = r;
              else this.push({ kind: "json", key: this.key(), line, label: "tool result", value: c, raw: d });
            } else other = true;
          }
          if (!other) return;
        }
        // Replayed user text (compaction summaries, "[Request interrupted by user]").
        this.closeText();
        const text = typeof content === "string" ? content : Array.isArray(content) ? content.filter((c: any) => c?.type === "text").map((c: any) => c.text).join("\n") : "";
        this.push({ kind: "notice", key: this.key(), line, tone: "info", label: d.isReplay || d.isSynthetic ? "replayed" : "user", text: text || JSON.stringify(content), raw: d });
        return;
      }
      case "result": {
        this.closeText();
        const u = d.usage ?? {};
        const total = typeof d.total_cost_usd === "number" ? d.total_cost_usd : undefined;
        // The turn's own cost: the running total's step (a new process that
        // starts its total afresh makes a step down: then the total is the turn's).
        const turnCost = typeof d.cost_usd === "number" ? d.cost_usd : total !== undefined ? (total >= this.lastTotal ? total - this.lastTotal : total) : undefined;
        if (total !== undefined) this.lastTotal = total;
        batch(() => {
          this.agentRunning.value = false;
          this.isCompacting.value = false;
          this.heartbeat.value = null;
        });
        this.push({
          kind: "result",
          key: this.key(),
          line,
          cost: turnCost,
          totalCost: total,
          inputTokens: u.input_tokens ?? 0,
          outputTokens: u.output_tokens ?? 0,
          cacheTokens: (u.cache_read_input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0),
          durationMs: d.duration_ms,
          isError: !!d.is_error || (d.subtype && d.subtype !== "success"),
          subtype: d.subtype ?? "",
          text: d.is_error ? (typeof d.result === "string" ? d.result : (d.errors ?? []).join("; ")) : undefined,
          raw: d,
        });
        return;
      }
      case "system": {
        if (d.subtype === "init") {
          this.agentRunning.value = true;
          return; // every turn starts with one: not worth a block
        }
        this.closeText();
        if (d.subtype === "status" && d.permissionMode) this.mode.value = d.permissionMode;
        this.push({ kind: "notice", key: this.key(), line, tone: d.subtype === "api_retry" || d.subtype === "permission_denied" ? "warn" : "info", label: `system ${d.subtype ?? ""}`.trim(), text: systemText(d), raw: d });
        return;
      }
      case "raw_record": {
        // A record of a CLI's transcript that the server does not convert: shown as written.
        this.closeText();
        const rec = d.record;
        const t = rec && typeof rec === "object" && typeof rec.type === "string" ? rec.type : typeof rec === "string" ? "text" : "";
        this.push({ kind: "json", key: this.key(), line, label: `unknown record${t ? ` (${t})` : ""}`, value: rec, raw: d });
        return;
      }
      case "cli_meta": {
        // A CLI's bookkeeping (attachments, token counts, a copy of another
        // record): folded into the block before unless asked for.
        if (!this.meta) return;
        this.closeText();
        this.push({ kind: "json", key: this.key(), line, label: `record ${d.record_type ?? ""}`.trim(), value: d.record, raw: d });
        return;
      }
      case "stream_event": {
        const ev = d.event;
        if (ev?.type === "content_block_delta" && ev.delta?.type === "text_delta") {
          if (this.openText) this.openText.text.value += ev.delta.text ?? "";
          else this.text(ev.delta.text ?? "", line, d, true);
          return;
        }
        return; // other stream events carry nothing to show
      }
    }
    this.closeText();
    this.push({ kind: "json", key: this.key(), line, label: d.type ?? "agent", value: d, raw: d });
  }

  private text(t: string, line: number, raw: unknown, streaming = false) {
    if (this.openText && this.openText.open.value && streaming) {
      this.openText.text.value += t;
      return;
    }
    // A whole assistant text after its streamed deltas replaces them.
    if (this.openText && !streaming && this.openText.raw && (this.openText.raw as any).type === "stream_event") {
      this.openText.text.value = t;
      this.openText.raw = raw;
      this.closeText();
      return;
    }
    this.closeText();
    const b = { kind: "text" as const, key: this.key(), line, text: signal(t), open: signal(streaming), raw };
    this.push(b);
    if (streaming) this.openText = b;
  }

  private closeText() {
    if (this.openText) {
      this.openText.open.value = false;
      this.openText = null;
    }
  }

  private key() {
    return `${this.id}#${++this.seq}`;
  }

  private push(b: Block) {
    if (!b.extra) b.extra = signal<string[]>([]);
    if (b.line > 0 && b.line === this.curLine && !this.owned) {
      b.sid = `${this.id}:${b.line}`;
      this.owned = true;
    }
    const pages = this.pages.value;
    const last = pages[pages.length - 1];
    if (last && last.blocks.peek().length < PAGE) {
      last.blocks.value = [...last.blocks.peek(), b];
    } else {
      this.pages.value = [...pages, { key: pages.length, blocks: signal([b]) }];
    }
    this.count.value++;
  }

  /** A bang command's output, shown in place; it is not part of the log. */
  addExec(x: { command: string; stdout: string; stderr: string; exit_code: number; duration_ms: number; truncated?: boolean; error?: string }) {
    this.closeText();
    this.push({ kind: "exec", key: this.key(), line: 0, command: x.command, stdout: x.stdout, stderr: x.stderr, exitCode: x.exit_code, durationMs: x.duration_ms, truncated: !!x.truncated, error: x.error });
  }

  /** After session_cleared: the log is empty, lines go on (sids never reused). */
  reset() {
    batch(() => {
      this.pages.value = [];
      this.count.value = 0;
      this.tools.clear();
      this.openText = null;
      this.lastTotal = 0;
      this.queue.value = [];
      this.stopOutcome.value = null;
      this.ended.value = null;
    });
  }

  /** Every block, in order (tests and copy). */
  allBlocks(): Block[] {
    return this.pages.peek().flatMap((p) => p.blocks.peek());
  }
}

/** The frame a stored message was broadcast as (FrameOf in the chat service). */
export function frameOf(m: StoredMessage): ChatFrame {
  if (m.kind === "agent") return { type: "agent_message", data: m.payload, line: m.line };
  let message = m.payload;
  if (m.kind === "user_prompt" && message && typeof message.message === "string" && message.content === undefined) {
    message = { role: "user", content: message.message };
  }
  return { type: "message_stored", message, line: m.line };
}

export function stopText(outcome: string): string {
  switch (outcome) {
    case "idle":
      return "Stop: nothing was running";
    case "acknowledged":
      return "Stop: the agent acknowledged and ended the turn";
    case "forced":
      return "Stop: the agent did not answer; its process was interrupted";
  }
  return "Stop: " + outcome;
}

function systemText(d: any): string {
  switch (d.subtype) {
    case "status":
      return d.permissionMode ? `permission mode: ${d.permissionMode}` : d.status ? `status: ${d.status}` : d.compact_result ? `compaction: ${d.compact_result}` : "status";
    case "compact_boundary":
      return `compacted${d.compact_metadata?.trigger ? " (" + d.compact_metadata.trigger + ")" : ""}${d.compact_metadata?.pre_tokens ? ", " + d.compact_metadata.pre_tokens + " tokens before" : ""}`;
    case "api_retry":
      return `API error, retrying${d.attempt ? " (attempt " + d.attempt + (d.max_retries ? "/" + d.max_retries : "") + ")" : ""}${d.error_status ? ": " + d.error_status : ""}`;
    case "permission_denied":
      return `permission denied${d.tool_name ? ": " + d.tool_name : ""}${d.message ? " (" + d.message + ")" : ""}`;
  }
  return JSON.stringify(d).slice(0, 300);
}
