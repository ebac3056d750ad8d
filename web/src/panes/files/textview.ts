// The read-only view of a text file, built for long files: the text goes into
// the page at once as plain blocks of CHUNK lines (each with
// content-visibility: auto, so only the blocks on screen are laid out), with
// a gutter of line numbers beside it; Shiki then colours it block by block
// when the browser is idle, carrying the grammar state from one block to the
// next, so a 10 000-line file opens as fast as plain text and never blocks the
// page for long.

import { highlighterFor } from "../../lib/highlight";

export const CHUNK = 250;
/** Past this size the file stays plain text (colouring it would take seconds). */
export const HIGHLIGHT_MAX = 2 * 1024 * 1024;
/** The line height of the view, in px (the CSS holds the same value). */
export const LINE_PX = 20;

/** Splits text into lines (a final newline ends the last line, it does not start another). */
export function splitLines(text: string): string[] {
  const lines = text.split("\n");
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
  return lines;
}

const idle = (f: () => void) => ((window as any).requestIdleCallback ? (window as any).requestIdleCallback(f, { timeout: 500 }) : setTimeout(f, 0));

const STYLE_KEY = /^--shiki-(light|dark)$/;
const STYLE_VAL = /^#[0-9a-fA-F]{3,8}$/;

export interface Rendered {
  lines: number;
  /** Resolves when the colouring is done (or was skipped). */
  highlighted: Promise<void>;
  cancel(): void;
}

/** Fills code (the text) and gutter (the numbers) with text; colours it as lang when given. */
export function renderText(code: HTMLElement, gutter: HTMLElement, text: string, lang: string | null): Rendered {
  const lines = splitLines(text);
  const blocks: HTMLElement[] = [];
  const frag = document.createDocumentFragment();
  for (let i = 0; i < lines.length; i += CHUNK) {
    const b = document.createElement("div");
    b.className = "fv-chunk";
    const n = Math.min(CHUNK, lines.length - i);
    b.style.containIntrinsicSize = `auto ${n * LINE_PX}px`;
    b.textContent = lines.slice(i, i + n).join("\n");
    blocks.push(b);
    frag.appendChild(b);
  }
  code.replaceChildren(frag);
  let nums = "";
  for (let i = 1; i <= lines.length; i++) nums += i === 1 ? "1" : "\n" + i;
  gutter.textContent = nums;

  let stopped = false;
  const highlighted = (async () => {
    if (!lang || text.length > HIGHLIGHT_MAX) return;
    const h = await highlighterFor(lang);
    if (stopped) return;
    code.classList.add("shiki");
    let state: any = undefined;
    for (let bi = 0; bi < blocks.length; bi++) {
      await new Promise<void>((r) => idle(r));
      if (stopped) return;
      const src = lines.slice(bi * CHUNK, bi * CHUNK + CHUNK).join("\n");
      const res = h.codeToTokens(src, { lang, themes: { light: "github-light", dark: "github-dark" }, defaultColor: false, grammarState: state });
      state = res.grammarState;
      const out = document.createDocumentFragment();
      res.tokens.forEach((line, li) => {
        if (li > 0) out.appendChild(document.createTextNode("\n"));
        for (const t of line) {
          const st = (t as any).htmlStyle as Record<string, string> | undefined;
          if (!st) {
            out.appendChild(document.createTextNode(t.content));
            continue;
          }
          const s = document.createElement("span");
          s.textContent = t.content;
          for (const [k, v] of Object.entries(st)) if (STYLE_KEY.test(k) && STYLE_VAL.test(v)) s.style.setProperty(k, v);
          out.appendChild(s);
        }
      });
      blocks[bi].replaceChildren(out);
    }
  })().catch(() => {
    /* plain text stays */
  });
  return {
    lines: lines.length,
    highlighted,
    cancel: () => {
      stopped = true;
    },
  };
}
