// The read-only view of a text file, built for long files: the text goes into
// the page at once as plain blocks of CHUNK lines (each with
// content-visibility: auto, so only the blocks on screen are laid out), with
// a gutter of line numbers beside it; Shiki then colours it STEP lines at a
// time while the browser is idle (as many steps as fit in an idle period),
// carrying the grammar state from one step to the next, and swaps each block
// in once it is done. A 10 000-line file opens as fast as plain text, and the
// colouring never holds the page for long (beyond the grammar's first use,
// which compiles its expressions).

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

interface IdleLike {
  timeRemaining(): number;
}
/** Lines tokenized at a time; as many steps run in one idle period as fit in it. */
const STEP = 40;
const idle = (f: (d: IdleLike) => void) =>
  (window as any).requestIdleCallback ? (window as any).requestIdleCallback(f, { timeout: 1000 }) : setTimeout(() => f({ timeRemaining: () => 0 }), 0);

/** Shiki's tokens of some lines as text and coloured spans (only its two colour variables are kept). */
function tokensToDOM(tokens: any[][]): DocumentFragment {
  const out = document.createDocumentFragment();
  tokens.forEach((line, li) => {
    if (li > 0) out.appendChild(document.createTextNode("\n"));
    for (const t of line) {
      const st = t.htmlStyle as Record<string, string> | undefined;
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
  return out;
}

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
    let next = 0; // the first line not tokenized yet
    let pending: any[][] = []; // the tokens of the current block so far
    while (next < lines.length) {
      const deadline = await new Promise<IdleLike>((r) => idle(r));
      if (stopped) return;
      // Steps of STEP lines while the idle period lasts (at least one step), so no task runs long.
      do {
        const blockEnd = Math.min(lines.length, (Math.floor(next / CHUNK) + 1) * CHUNK);
        const end = Math.min(blockEnd, next + STEP);
        const res = h.codeToTokens(lines.slice(next, end).join("\n"), { lang, themes: { light: "github-light", dark: "github-dark" }, defaultColor: false, grammarState: state });
        state = res.grammarState;
        pending.push(...res.tokens);
        next = end;
        if (next === blockEnd) {
          blocks[Math.floor((next - 1) / CHUNK)].replaceChildren(tokensToDOM(pending));
          pending = [];
        }
      } while (next < lines.length && deadline.timeRemaining() > 4);
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
