// A permission card: the tool and its whole input (wrapped, never cut),
// Allow, Deny (with an optional reason), one button per suggestion, and Edit
// input → "Tool input" → "Allow edited". Ask-user tools get a form.

import { useState } from "preact/hooks";
import type { Suggestion } from "../protocol/types";
import { outcomeText, type PermState } from "../state/permissions";

export interface PermHandlers {
  allow: (updated?: unknown, suggestionIndex?: number) => boolean;
  deny: (reason: string) => boolean;
  answers: (a: Record<string, string>) => boolean;
}

export function suggestionLabel(s: Suggestion): string {
  switch (s.type) {
    case "addRules":
    case "replaceRules": {
      const rules = (s.rules ?? []).map((r) => (r.ruleContent ? `${r.toolName}(${r.ruleContent})` : r.toolName)).join(", ");
      return `Always allow ${rules}${s.destination ? ` (${destLabel(s.destination)})` : ""}`;
    }
    case "setMode":
      return `Allow and switch to ${s.mode}${s.destination ? ` (${destLabel(s.destination)})` : ""}`;
    case "addDirectories":
      return `Allow and add ${(s.directories ?? []).join(", ")} to the workspace`;
  }
  return `Allow: ${JSON.stringify(s)}`;
}

function destLabel(d: string): string {
  return ({ session: "this session", localSettings: "this project, local", projectSettings: "this project", userSettings: "every project" } as Record<string, string>)[d] ?? d;
}

/** What the Edit box shows: the command for Bash, the JSON otherwise. */
export function editableInput(tool: string, input: any): string {
  if (tool === "Bash" && typeof input?.command === "string") return input.command;
  return JSON.stringify(input, null, 2);
}

/** The updated_input of an edited box, or an error sentence. */
export function parseEdited(tool: string, input: any, text: string): { value?: unknown; error?: string } {
  if (tool === "Bash" && typeof input?.command === "string") {
    if (text.trim() === "") return { error: "The command is empty." };
    return { value: { ...input, command: text } };
  }
  try {
    const v = JSON.parse(text);
    if (!v || typeof v !== "object" || Array.isArray(v)) return { error: "The tool input must be a JSON object." };
    return { value: v };
  } catch (e) {
    return { error: "Not valid JSON: " + (e as Error).message };
  }
}

/** The id of a request's card (its fields' ids start with it). */
export function permDomId(requestId: string): string {
  return `perm-${requestId.replace(/[^\w-]/g, "_")}`;
}

export function PermissionCard({ p, h }: { p: PermState; h: PermHandlers }) {
  const { req } = p;
  const live = p.status === "pending";
  const [editing, setEditing] = useState(false);
  const [edited, setEdited] = useState(() => editableInput(req.tool_name, req.input));
  const [reason, setReason] = useState("");
  const [err, setErr] = useState<string | null>(null);
  const ask = req.tool_name === "AskUserQuestion" && Array.isArray((req.input as any)?.questions);
  const id = permDomId(req.request_id);
  const sent = (ok: boolean) => setErr(ok ? null : "Not sent: the connection is down. It will be retried when you answer again after reconnecting.");
  return (
    <section id={id} tabIndex={-1} class={`perm ${p.status}`} role="region" aria-label={`Permission request: ${req.tool_name}`}>
      <header>
        <strong>{req.tool_name}</strong> wants to run
      </header>
      {ask ? (
        <AskForm input={req.input as any} disabled={!live} onSubmit={(a) => sent(h.answers(a))} />
      ) : live || p.status === "sending" ? (
        <PermInput tool={req.tool_name} input={req.input} />
      ) : (
        <p class="permbrief wrap">{(req.tool_name === "Bash" && typeof (req.input as any)?.command === "string" ? String((req.input as any).command) : JSON.stringify(req.input)).slice(0, 200)}</p>
      )}
      {live && !ask && (
        <div class="permactions">
          <button type="button" class="primary big" onClick={() => sent(h.allow())}>
            Allow
          </button>
          {(req.suggestions ?? []).map((s, i) => (
            <button type="button" class="big" key={i} onClick={() => sent(h.allow(undefined, i))}>
              {suggestionLabel(s as Suggestion)}
            </button>
          ))}
          <button type="button" class="big" aria-expanded={editing} onClick={() => setEditing(!editing)}>
            Edit input
          </button>
          <span class="denygroup">
            <label class="sr-only" for={`${id}-reason`}>
              Reason
            </label>
            <input id={`${id}-reason`} type="text" placeholder="Reason (optional)" value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
            <button type="button" class="danger big" onClick={() => sent(h.deny(reason))}>
              Deny
            </button>
          </span>
        </div>
      )}
      {live && editing && (
        <div class="permedit">
          <label for={`${id}-edit`}>Tool input</label>
          <textarea id={`${id}-edit`} rows={Math.min(14, edited.split("\n").length + 1)} value={edited} onInput={(e) => setEdited(e.currentTarget.value)} spellcheck={false} />
          <button
            type="button"
            class="primary big"
            onClick={() => {
              const r = parseEdited(req.tool_name, req.input, edited);
              if (r.error) setErr(r.error);
              else sent(h.allow(r.value));
            }}
          >
            Allow edited
          </button>
        </div>
      )}
      {p.status !== "pending" && (
        <p class="permoutcome" role="status">
          {outcomeText(p)}
        </p>
      )}
      {err && (
        <p class="error" role="alert">
          {err}
        </p>
      )}
    </section>
  );
}

export function PermInput({ tool, input }: { tool: string; input: any }) {
  if (tool === "Bash" && typeof input?.command === "string") {
    return (
      <div class="permcmd">
        {input.description && <p class="muted">{input.description}</p>}
        <pre class="perminput cmd wrap">{input.command}</pre>
      </div>
    );
  }
  return <pre class="perminput wrap">{JSON.stringify(input, null, 2)}</pre>;
}

function AskForm({ input, disabled, onSubmit }: { input: { questions: any[] }; disabled: boolean; onSubmit: (a: Record<string, string>) => void }) {
  const [answers, setAnswers] = useState<Record<string, string>>({});
  return (
    <form
      class="askform"
      onSubmit={(e) => {
        e.preventDefault();
        onSubmit(answers);
      }}
    >
      {input.questions.map((q, i) => (
        <fieldset key={i} disabled={disabled}>
          <legend>{q.question ?? q.header}</legend>
          {(q.options ?? []).map((o: any, j: number) => (
            <label key={j} class="opt">
              <input type="radio" name={`q${i}`} value={o.label} checked={answers[q.question] === o.label} onChange={() => setAnswers({ ...answers, [q.question]: o.label })} />
              <span>
                {o.label}
                {o.description && <span class="muted"> · {o.description}</span>}
              </span>
            </label>
          ))}
          <label class="opt">
            <span>Other</span>
            <input type="text" onInput={(e) => setAnswers({ ...answers, [q.question]: e.currentTarget.value })} />
          </label>
        </fieldset>
      ))}
      {!disabled && (
        <button type="submit" class="primary big">
          Answer
        </button>
      )}
    </form>
  );
}
