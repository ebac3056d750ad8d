// Project-wide search (GET /api/search over the working directory): a
// textbox "Search files", results grouped by file, each a link that opens the
// file at its line (the deep link /s/{id}/files?path=…&line=N).

import { useState } from "preact/hooks";
import { ApiError } from "../../lib/api";
import { search, type SearchResult } from "./api";
import { relative } from "./tree";

interface Props {
  cwd: string;
  linkOf: (path: string, line: number) => string;
  onOpen: (href: string) => void;
  onQuery: (active: boolean) => void;
}

export function Search({ cwd, linkOf, onOpen, onQuery }: Props) {
  const [text, setText] = useState("");
  const [res, setRes] = useState<SearchResult | null>(null);
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState<string | null>(null);

  const run = async (e?: Event) => {
    e?.preventDefault();
    const qtext = text.trim();
    if (!qtext) return clear();
    setBusy(true);
    setErr(null);
    onQuery(true);
    try {
      setRes(await search(cwd, qtext));
    } catch (e2) {
      setRes(null);
      setErr((e2 as ApiError).message);
    } finally {
      setBusy(false);
    }
  };
  const clear = () => {
    setText("");
    setRes(null);
    setErr(null);
    onQuery(false);
  };

  const groups: { path: string; items: SearchResult["matches"] }[] = [];
  for (const m of res?.matches ?? []) {
    const g = groups[groups.length - 1];
    if (g && g.path === m.path) g.items.push(m);
    else groups.push({ path: m.path, items: [m] });
  }

  return (
    <div class="fsearch">
      <form role="search" onSubmit={run} class="fsearch-form">
        <input
          type="text"
          enterkeyhint="search"
          aria-label="Search files"
          placeholder="Search files…"
          value={text}
          onInput={(e) => setText((e.target as HTMLInputElement).value)}
          onKeyDown={(e) => e.key === "Escape" && clear()}
        />
        {(res || err) && (
          <button type="button" class="mini" onClick={clear} aria-label="Clear the search">
            ✕
          </button>
        )}
      </form>
      {busy && (
        <p class="muted pad" role="status">
          Searching…
        </p>
      )}
      {err && (
        <p class="ferr pad" role="alert">
          {err}
        </p>
      )}
      {res && !busy && (
        <div class="fresults" role="region" aria-label="Search results">
          <p class="muted fresults-sum" role="status">
            {res.matches.length === 0 ? "No match." : `${res.matches.length}${res.truncated ? "+" : ""} ${res.matches.length === 1 ? "match" : "matches"} in ${groups.length} ${groups.length === 1 ? "file" : "files"}`}
          </p>
          {groups.map((g) => (
            <div key={g.path} class="fgroup">
              <div class="fgroup-path" title={g.path}>
                {relative(cwd, g.path)}
              </div>
              <ul>
                {g.items.map((m) => {
                  const href = linkOf(m.path, m.line);
                  return (
                    <li key={m.line}>
                      <a
                        href={href}
                        onClick={(e) => {
                          if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
                          e.preventDefault();
                          onOpen(href);
                        }}
                      >
                        <span class="fline">{m.line}</span>
                        <span class="ftextm">{m.text}</span>
                      </a>
                    </li>
                  );
                })}
              </ul>
            </div>
          ))}
        </div>
      )}
    </div>
  );
}
