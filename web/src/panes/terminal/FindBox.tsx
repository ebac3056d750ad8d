// Find in the terminal shown (its scrollback included): the search addon's
// next/previous with highlighted matches, Enter / Shift+Enter, Escape closes.

import type { SearchAddon } from "@xterm/addon-search";
import { useEffect, useRef, useState } from "preact/hooks";

const DECO = {
  matchBackground: "#6b5a00",
  matchOverviewRuler: "#e3b341",
  activeMatchBackground: "#2f6feb",
  activeMatchColorOverviewRuler: "#4c8dff",
};

export function FindBox({ search, onClose }: { search: SearchAddon; onClose: () => void }) {
  const [q, setQ] = useState("");
  const [count, setCount] = useState<{ i: number; n: number } | null>(null);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => {
    input.current?.focus();
    const sub = search.onDidChangeResults(({ resultIndex, resultCount }) => setCount({ i: resultIndex, n: resultCount }));
    return () => {
      sub.dispose();
      search.clearDecorations();
    };
  }, [search]);
  const opts = { decorations: DECO };
  const next = (text = q) => (text ? search.findNext(text, { ...opts, incremental: true }) : (search.clearDecorations(), setCount(null)));
  return (
    <div class="term-find" role="search">
      <input
        ref={input}
        type="search"
        aria-label="Find in terminal"
        placeholder="Find in terminal"
        value={q}
        onInput={(e) => {
          const v = (e.target as HTMLInputElement).value;
          setQ(v);
          next(v);
        }}
        onKeyDown={(e) => {
          if (e.key === "Enter") {
            e.preventDefault();
            if (e.shiftKey) search.findPrevious(q, opts);
            else search.findNext(q, opts);
          } else if (e.key === "Escape") onClose();
        }}
      />
      <span class="muted term-find-count" aria-live="polite">
        {q && count ? (count.n ? `${count.i + 1} of ${count.n}` : "no match") : ""}
      </span>
      <button type="button" aria-label="Previous match" onClick={() => q && search.findPrevious(q, opts)}>
        ↑
      </button>
      <button type="button" aria-label="Next match" onClick={() => q && search.findNext(q, opts)}>
        ↓
      </button>
      <button type="button" aria-label="Close find" onClick={onClose}>
        ×
      </button>
    </div>
  );
}
