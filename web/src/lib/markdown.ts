// Markdown to safe HTML: marked parses, DOMPurify sanitises (no script, no
// event handler, no javascript: URL, no remote image, no form, no frame).
// A message is split into top-level blocks; finished blocks are memoised, so
// a streaming message re-parses only its last, still-open block.

import DOMPurify from "dompurify";
import { Marked } from "marked";

const marked = new Marked({ gfm: true, breaks: false, async: false });
marked.use({
  renderer: {
    code({ text, lang }) {
      const l = (lang ?? "").trim().split(/\s+/)[0].replace(/[^\w+#.-]/g, "");
      return `<pre class="code"><code data-lang="${l}">${escapeHTML(text)}</code></pre>`;
    },
  },
});

let hooked = false;
function purify() {
  if (!hooked) {
    hooked = true;
    DOMPurify.addHook("afterSanitizeAttributes", (node) => {
      if (node.tagName === "A") {
        const href = node.getAttribute("href") ?? "";
        if (/^\s*(javascript|data|vbscript):/i.test(href)) node.removeAttribute("href");
        node.setAttribute("target", "_blank");
        node.setAttribute("rel", "noopener noreferrer");
      }
    });
  }
  return DOMPurify;
}

const SANITIZE = {
  FORBID_TAGS: ["style", "img", "form", "input", "button", "textarea", "select", "iframe", "object", "embed", "svg", "math", "link", "meta", "base"],
  FORBID_ATTR: ["style", "srcset", "action", "formaction"],
  ALLOW_DATA_ATTR: true,
};

export function sanitize(html: string): string {
  // Fail closed: without a DOM DOMPurify can work in, show the text, not HTML.
  if (!DOMPurify.isSupported) return escapeHTML(html);
  return purify().sanitize(html, SANITIZE) as unknown as string;
}

export function escapeHTML(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

const cache = new Map<string, string>();
const CACHE_MAX = 4000;

/** One block of markdown to sanitised HTML, memoised. */
export function renderBlock(src: string): string {
  const hit = cache.get(src);
  if (hit !== undefined) return hit;
  const html = sanitize(marked.parse(src) as string);
  if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
  cache.set(src, html);
  return html;
}

/** The whole text, block by block. */
export function renderMarkdown(src: string): string {
  return splitBlocks(src).map(renderBlock).join("");
}

/**
 * Splits markdown at blank lines that are outside fenced code, so each part
 * parses alone as it would in the whole (lists and paragraphs stay whole
 * until a blank line; a fence stays whole until it closes).
 */
export function splitBlocks(src: string): string[] {
  const lines = src.split("\n");
  const out: string[] = [];
  let cur: string[] = [];
  let fence: string | null = null;
  let listy = false;
  for (const line of lines) {
    const m = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (fence) {
      cur.push(line);
      if (m && m[1][0] === fence[0] && m[1].length >= fence.length && line.trim() === m[1]) fence = null;
      continue;
    }
    if (m) fence = m[1];
    if (line.trim() === "" && !fence) {
      if (cur.length) {
        // Keep a list or an indented continuation together across blank lines.
        listy = /^\s*([-*+]|\d+[.)])\s/.test(cur[0]);
        cur.push(line);
        continue;
      }
      continue;
    }
    if (cur.length && cur[cur.length - 1].trim() === "" && !(listy && /^(\s{2,}|\s*([-*+]|\d+[.)])\s)/.test(line))) {
      out.push(cur.join("\n").trimEnd());
      cur = [];
    }
    cur.push(line);
  }
  if (cur.length) out.push(fence ? cur.join("\n") : cur.join("\n").trimEnd());
  return out.filter((b) => b.trim() !== "");
}
