// Recent and frequent prompts, and a full-text search over them
// (/api/prompts/*); each can be sent again to a session picked in "Send to",
// in one click, through the composer's path (state/sendprompt.ts). What
// happened is said in the status: stored (with a link to the chat), queued
// behind a running turn, or refused.

import { useEffect, useState } from "preact/hooks";
import { get, q } from "../../lib/api";
import { baseName, fmtAgo } from "../../lib/format";
import { lastSession, navigate, sessions } from "../../state/app";
import { sendPromptOnce } from "../../state/sendprompt";
import { sinceOf, type PromptHit, type Range } from "./data";

type Kind = "recent" | "frequent" | "search";

export function Prompts({ range, visible, stamp }: { range: Range; visible: boolean; stamp: number }) {
  const [kind, setKind] = useState<Kind>("recent");
  const [query, setQuery] = useState("");
  const [asked, setAsked] = useState("");
  const [list, setList] = useState<PromptHit[] | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const [target, setTarget] = useState<string>(lastSession.peek() ?? "");
  const [sending, setSending] = useState<number | null>(null);
  const [said, setSaid] = useState<{ ok: boolean; text: string; session?: string } | null>(null);
  const live = sessions.value;

  // The default target: the last session, else the newest.
  useEffect(() => {
    if (!target || !live.some((s) => s.session_id === target)) setTarget(lastSession.peek() && live.some((s) => s.session_id === lastSession.peek()) ? lastSession.peek()! : (live[0]?.session_id ?? ""));
  }, [live]);

  useEffect(() => {
    if (!visible) return;
    if (kind === "search" && !asked) {
      setList(null);
      return;
    }
    let on = true;
    const s = `since=${sinceOf(range)}&limit=50`;
    const url = kind === "search" ? `/api/prompts/search?q=${q(asked)}&${s}` : `/api/prompts/${kind}?${s}`;
    setErr(null);
    get<{ prompts: PromptHit[] }>(url).then(
      (r) => on && setList(r.prompts ?? []),
      (e) => on && (setErr((e as Error).message), setList([])),
    );
    return () => {
      on = false;
    };
  }, [kind, asked, range, visible, stamp]);

  async function resend(i: number, text: string) {
    if (!target) return;
    setSending(i);
    setSaid(null);
    const title = live.find((s) => s.session_id === target)?.title || target;
    try {
      const r = await sendPromptOnce(target, text);
      setSaid(
        r.kind === "stored"
          ? { ok: true, text: `Sent to “${title}”: stored as line ${r.line}; the agent is on it.`, session: target }
          : { ok: true, text: `Queued in “${title}”: a turn is running there; it goes when that turn ends.`, session: target },
      );
    } catch (e) {
      setSaid({ ok: false, text: `Not sent to “${title}”: ${(e as Error).message}` });
    } finally {
      setSending(null);
    }
  }

  return (
    <section class="costs-card costs-prompts" aria-labelledby="costs-prompts-h">
      <div class="costs-cardhead">
        <h2 id="costs-prompts-h">Prompts</h2>
        <div class="costs-seg" role="tablist" aria-label="Prompt list">
          {(["recent", "frequent", "search"] as Kind[]).map((k) => (
            <button key={k} type="button" role="tab" aria-selected={kind === k} onClick={() => setKind(k)}>
              {k === "recent" ? "Recent" : k === "frequent" ? "Frequent" : "Search"}
            </button>
          ))}
        </div>
      </div>
      <div class="costs-promptbar">
        {kind === "search" && (
          <form
            role="search"
            onSubmit={(e) => {
              e.preventDefault();
              setAsked(query.trim());
            }}
          >
            <input type="search" aria-label="Search prompts" placeholder="words, “a phrase”, -word, or" value={query} onInput={(e) => setQuery((e.target as HTMLInputElement).value)} maxLength={1000} />
            <button type="submit" disabled={!query.trim()}>
              Search
            </button>
          </form>
        )}
        <label class="costs-target">
          Send to{" "}
          <select aria-label="Send to" value={target} onChange={(e) => setTarget((e.target as HTMLSelectElement).value)}>
            {live.length === 0 && <option value="">no session</option>}
            {live.map((s) => (
              <option key={s.session_id} value={s.session_id}>
                {(s.title || s.session_id) + (s.cwd ? ` · ${baseName(s.cwd)}` : "")}
              </option>
            ))}
          </select>
        </label>
      </div>
      {said && (
        <p class={said.ok ? "costs-said ok" : "costs-said error"} role="status" aria-label="Send result">
          {said.text}{" "}
          {said.session && (
            <a href={`/s/${said.session}`} onClick={(e) => (e.preventDefault(), navigate(`/s/${said.session}`))}>
              Open chat
            </a>
          )}
        </p>
      )}
      {err && <p class="error">{err}</p>}
      {list === null && kind !== "search" && <p class="muted">Loading…</p>}
      {list !== null && list.length === 0 && !err && <p class="muted">{kind === "search" ? "No prompt matches." : "No prompts in this range."}</p>}
      {list !== null && list.length > 0 && (
        <ul class="costs-promptlist" aria-label={kind === "recent" ? "Recent prompts" : kind === "frequent" ? "Frequent prompts" : "Matching prompts"}>
          {list.map((p, i) => (
            <li key={(p.turn_id ?? "") + i}>
              <div class="costs-prompttext wrap">{p.snippet ? <Snippet s={p.snippet} /> : p.prompt.length > 400 ? p.prompt.slice(0, 400) + "…" : p.prompt}</div>
              <div class="costs-promptmeta muted">
                {p.count !== undefined ? `${p.count}× in ${p.sessions} session${p.sessions === 1 ? "" : "s"}, last ${fmtAgo(p.last_at)}` : `${fmtAgo(p.started_at)}${p.project ? " · " + baseName(p.project) : ""}`}
                <button type="button" class="mini" disabled={!target || sending !== null} onClick={() => resend(i, p.prompt)} aria-label={`Send again: ${p.prompt.slice(0, 60)}`}>
                  {sending === i ? "Sending…" : "Send again"}
                </button>
              </div>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

/** A search snippet: matches are between [[ and ]]. */
function Snippet({ s }: { s: string }) {
  const parts = s.split(/\[\[|\]\]/);
  return <>{parts.map((x, i) => (i % 2 === 1 ? <mark key={i}>{x}</mark> : x))}</>;
}
