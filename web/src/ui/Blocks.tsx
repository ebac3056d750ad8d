// One component per block of the conversation. Blocks are memoised: a page
// re-renders when a block is appended, but existing blocks do not.

import { memo } from "preact/compat";
import { useEffect, useState } from "preact/hooks";
import { fmtCost, fmtDuration, fmtTokens } from "../lib/format";
import type { Block, ToolResult } from "../state/session";
import { LiveMarkdown } from "./Markdown";
import { TurnChip, type TurnJournal } from "./TurnChips";

export interface BlockActions {
  fork?: (line: number) => void;
  favourite?: (line: number) => void;
  /** The journal's turn chips, shown under each prompt. */
  turns?: TurnJournal;
}

export const BlockView = memo(function BlockView({ b, actions }: { b: Block; actions: BlockActions }) {
  const extra = b.extra?.value ?? [];
  return (
    <div class={`bw bw-${b.kind}`} data-sid={b.sid} data-line={b.line || undefined} tabIndex={b.sid ? 0 : undefined}>
      <BlockBody b={b} />
      {b.kind === "user" && actions.turns && <TurnChip journal={actions.turns} line={b.line} />}
      {extra.map((sid) => (
        <span key={sid} hidden data-sid={sid} />
      ))}
      {b.sid && <MsgActions b={b} actions={actions} />}
    </div>
  );
});

function BlockBody({ b }: { b: Block }) {
  switch (b.kind) {
    case "user":
      return (
        <article class="blk user" aria-label={`Your message, line ${b.line}`}>
          <div class="bubble">
            <pre class="usertext">{b.text}</pre>
            {b.images.length > 0 && (
              <div class="thumbs">
                {b.images.map((im, i) => (
                  <img key={i} alt={`image ${i + 1}`} src={`data:${im.source.media_type};base64,${im.source.data}`} />
                ))}
              </div>
            )}
          </div>
        </article>
      );
    case "text":
      return (
        <article class="blk text">
          <LiveMarkdown text={b.text} open={b.open} />
        </article>
      );
    case "thinking":
      return (
        <details class="blk thinking">
          <summary>Thinking</summary>
          <pre class="wrap">{b.text}</pre>
        </details>
      );
    case "tool":
      return <ToolCard b={b} />;
    case "result":
      return (
        <div class={`blk result ${b.isError ? "err" : ""}`}>
          <span>{b.isError ? `turn ended: ${b.subtype || "error"}` : "turn done"}</span>
          {b.durationMs !== undefined && <span>{fmtDuration(b.durationMs)}</span>}
          <span title={`input ${b.inputTokens}, output ${b.outputTokens}, cache ${b.cacheTokens}`}>
            {fmtTokens(b.inputTokens + b.cacheTokens)} in · {fmtTokens(b.outputTokens)} out
          </span>
          {b.cost !== undefined && <span title="this turn's cost">{fmtCost(b.cost)}</span>}
          {b.totalCost !== undefined && <span title="the agent's running total">{fmtCost(b.totalCost)} total</span>}
          {b.text && <span class="errtext">{b.text}</span>}
          <Raw value={b.raw} />
        </div>
      );
    case "notice":
      return (
        <div class={`blk notice ${b.tone}`} role={b.tone === "error" ? "alert" : undefined}>
          <strong>{b.label}</strong> <span class="wrap">{b.text}</span>
          {b.raw !== undefined && <Raw value={b.raw} />}
        </div>
      );
    case "raw_output":
    case "stderr":
      return (
        <div class={`blk stream ${b.kind}`}>
          <span class="tag">{b.kind === "stderr" ? "stderr" : "raw output"}</span>
          <pre class="wrap">{b.text}</pre>
        </div>
      );
    case "gap":
      return (
        <div class="blk gap" role="note">
          {b.from === b.to ? `Line ${b.from} is missing from the log` : `Lines ${b.from}–${b.to} are missing from the log`}
          {b.text ? `: ${b.text}` : " (lost by the server, not by this page)"}
        </div>
      );
    case "json":
      return (
        <details class="blk json">
          <summary>{b.label}</summary>
          <pre class="wrap">{JSON.stringify(b.value, null, 2)}</pre>
        </details>
      );
    case "meta":
      return null;
    case "exec":
      return (
        <div class="blk exec">
          <pre class="cmd wrap">
            <span class="prompt">! </span>
            {b.command}
          </pre>
          {b.error && <p class="error">{b.error}</p>}
          {b.stdout && <pre class="wrap">{b.stdout}</pre>}
          {b.stderr && <pre class="wrap stderr">{b.stderr}</pre>}
          <span class="muted">
            exit {b.exitCode} · {b.durationMs} ms{b.truncated ? " · output truncated" : ""} · not sent to the agent
          </span>
        </div>
      );
  }
}

function copyText(b: Block): string {
  switch (b.kind) {
    case "user":
      return b.text;
    case "text":
      return b.text.peek();
    case "thinking":
      return b.text;
    case "tool":
      return JSON.stringify({ name: b.name, input: b.input, result: b.result.peek()?.content ?? null }, null, 2);
    case "notice":
    case "raw_output":
    case "stderr":
      return b.text;
  }
  return JSON.stringify(b.raw ?? null, null, 2);
}

function MsgActions({ b, actions }: { b: Block; actions: BlockActions }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(copyText(b));
      setCopied(true);
      setTimeout(() => setCopied(false), 1500);
    } catch {
      /* no clipboard permission */
    }
  };
  return (
    <div class="msgactions">
      <button type="button" class="mini" onClick={copy}>
        {copied ? "Copied" : "Copy"}
      </button>
      {actions.fork && (
        <button type="button" class="mini" onClick={() => actions.fork!(b.line)} title={`A new session holding this conversation up to line ${b.line}`}>
          Fork from here
        </button>
      )}
      {b.kind === "user" && actions.favourite && (
        <button type="button" class="mini" onClick={() => actions.favourite!(b.line)}>
          Favourite prompt
        </button>
      )}
    </div>
  );
}

/** The record as received, one click away. */
export function Raw({ value }: { value: unknown }) {
  const [open, setOpen] = useState(false);
  return (
    <span class="raw">
      <button type="button" class="mini" aria-expanded={open} onClick={() => setOpen(!open)}>
        raw
      </button>
      {open && <pre class="wrap rawjson">{JSON.stringify(value, null, 2)}</pre>}
    </span>
  );
}

function resultText(r: ToolResult | null): string {
  if (!r) return "";
  const c = r.content;
  if (typeof c === "string") return c;
  if (Array.isArray(c)) return c.map((x: any) => (x?.type === "text" ? x.text : x?.type === "image" ? "[image]" : JSON.stringify(x))).join("\n");
  return c === undefined || c === null ? "" : JSON.stringify(c, null, 2);
}

function toolSummary(name: string, input: any): string {
  if (!input || typeof input !== "object") return "";
  switch (name) {
    case "Bash":
      return input.command ?? "";
    case "Edit":
    case "Write":
    case "MultiEdit":
    case "Read":
    case "NotebookEdit":
      return input.file_path ?? input.notebook_path ?? "";
    case "Grep":
    case "Glob":
      return input.pattern ?? "";
    case "WebFetch":
      return input.url ?? "";
    case "WebSearch":
      return input.query ?? "";
    case "Task":
      return input.description ?? "";
    case "TodoWrite":
      return `${(input.todos ?? []).length} items`;
  }
  const first = Object.values(input).find((v) => typeof v === "string");
  return typeof first === "string" ? first : "";
}

function ToolCard({ b }: { b: Extract<Block, { kind: "tool" }> }) {
  const r = b.result.value;
  const state = !r ? "running" : r.is_error ? "error" : "done";
  const summary = toolSummary(b.name, b.input);
  // The body (diffs, long output) is built only once the card is opened.
  const [open, setOpen] = useState(b.name === "TodoWrite" || b.name === "Bash");
  return (
    <details class={`blk tool ${state}`} open={open} onToggle={(e) => setOpen((e.currentTarget as HTMLDetailsElement).open)}>
      <summary>
        <span class="toolname">{b.name}</span>
        <span class="toolsum">{summary.split("\n")[0].slice(0, 160)}</span>
        <span class={`toolstate ${state}`}>{state}</span>
      </summary>
      {open && (
      <div class="toolbody">
        <ToolInput name={b.name} input={b.input} />
        {r && <ToolOutput name={b.name} r={r} />}
        <div class="toolfoot">
          <Raw value={b.raw} />
        </div>
      </div>
      )}
    </details>
  );
}

function ToolInput({ name, input }: { name: string; input: any }) {
  if (name === "Bash" && typeof input?.command === "string") {
    return (
      <div>
        {input.description && <p class="muted">{input.description}</p>}
        <pre class="cmd wrap">
          <span class="prompt">$ </span>
          {input.command}
        </pre>
      </div>
    );
  }
  if (name === "Edit" && typeof input?.file_path === "string") {
    return <DiffView path={input.file_path} before={input.old_string ?? ""} after={input.new_string ?? ""} />;
  }
  if (name === "MultiEdit" && Array.isArray(input?.edits)) {
    return (
      <div>
        {input.edits.map((e: any, i: number) => (
          <DiffView key={i} path={`${input.file_path} (${i + 1}/${input.edits.length})`} before={e.old_string ?? ""} after={e.new_string ?? ""} />
        ))}
      </div>
    );
  }
  if (name === "Write" && typeof input?.file_path === "string") {
    return <DiffView path={input.file_path} before="" after={input.content ?? ""} />;
  }
  if (name === "TodoWrite" && Array.isArray(input?.todos)) {
    return (
      <ul class="todos">
        {input.todos.map((t: any, i: number) => (
          <li key={i} class={t.status}>
            <span aria-hidden="true">{t.status === "completed" ? "☑" : t.status === "in_progress" ? "◐" : "☐"}</span> {t.status === "in_progress" ? t.activeForm ?? t.content : t.content}
            <span class="sr-only"> ({t.status})</span>
          </li>
        ))}
      </ul>
    );
  }
  return <pre class="wrap json">{JSON.stringify(input, null, 2)}</pre>;
}

function ToolOutput({ name, r }: { name: string; r: ToolResult }) {
  const text = resultText(r);
  const long = text.length > 4000;
  const [all, setAll] = useState(!long);
  if (name === "TodoWrite" && !r.is_error) return null;
  return (
    <div class={`toolout ${r.is_error ? "err" : ""}`}>
      <pre class="wrap">{all ? text : text.slice(0, 4000)}</pre>
      {!all && (
        <button type="button" class="mini" onClick={() => setAll(true)}>
          Show all ({text.length} characters)
        </button>
      )}
    </div>
  );
}

type Hunk = { added?: boolean; removed?: boolean; value: string };

/** A line diff of a tool call; the diff library loads on first use. */
function DiffView({ path, before, after }: { path: string; before: string; after: string }) {
  const [parts, setParts] = useState<Hunk[] | null>(null);
  useEffect(() => {
    let live = true;
    import("diff").then((d) => live && setParts(d.diffLines(before, after) as Hunk[]));
    return () => {
      live = false;
    };
  }, [before, after]);
  let add = 0;
  let rem = 0;
  for (const p of parts ?? []) {
    const n = p.value.split("\n").length - (p.value.endsWith("\n") ? 1 : 0);
    if (p.added) add += n;
    if (p.removed) rem += n;
  }
  return (
    <div class="diff">
      <div class="diffhead">
        <span class="path">{path}</span>
        {parts && (
          <span>
            <span class="plus">+{add}</span> <span class="minus">−{rem}</span>
          </span>
        )}
      </div>
      <pre class="diffbody">
        {(parts ?? [{ value: after }]).map((p, i) =>
          p.value
            .replace(/\n$/, "")
            .split("\n")
            .map((l, j) => (
              <div key={`${i}.${j}`} class={p.added ? "add" : p.removed ? "rem" : "ctx"}>
                <span aria-hidden="true">{p.added ? "+" : p.removed ? "−" : " "}</span>
                {l}
              </div>
            )),
        )}
      </pre>
    </div>
  );
}
