// Code highlighting with Shiki, loaded on demand (its core, the JavaScript
// regex engine, no wasm) and run when the browser is idle. Until then, and for
// languages it does not know, code shows as plain escaped text.

import type { HighlighterCore } from "@shikijs/core";
import { sanitize } from "./markdown";

const LANGS: Record<string, () => Promise<any>> = {
  ts: () => import("@shikijs/langs/typescript"),
  tsx: () => import("@shikijs/langs/tsx"),
  js: () => import("@shikijs/langs/javascript"),
  jsx: () => import("@shikijs/langs/jsx"),
  json: () => import("@shikijs/langs/json"),
  sh: () => import("@shikijs/langs/shellscript"),
  go: () => import("@shikijs/langs/go"),
  py: () => import("@shikijs/langs/python"),
  rust: () => import("@shikijs/langs/rust"),
  diff: () => import("@shikijs/langs/diff"),
  html: () => import("@shikijs/langs/html"),
  css: () => import("@shikijs/langs/css"),
  yaml: () => import("@shikijs/langs/yaml"),
  md: () => import("@shikijs/langs/markdown"),
  sql: () => import("@shikijs/langs/sql"),
  c: () => import("@shikijs/langs/c"),
  java: () => import("@shikijs/langs/java"),
  toml: () => import("@shikijs/langs/toml"),
  dockerfile: () => import("@shikijs/langs/dockerfile"),
  makefile: () => import("@shikijs/langs/makefile"),
};

const ALIASES: Record<string, string> = {
  typescript: "ts", javascript: "js", mjs: "js", cjs: "js", bash: "sh", shell: "sh", shellscript: "sh", zsh: "sh", console: "sh",
  golang: "go", python: "py", rs: "rust", patch: "diff", xml: "html", svg: "html", yml: "yaml", markdown: "md", h: "c", make: "makefile", docker: "dockerfile", jsonc: "json", json5: "json",
};

export function langOf(name: string): string | null {
  const n = name.toLowerCase();
  const k = ALIASES[n] ?? n;
  return LANGS[k] ? k : null;
}

/** The language of a file path, by its extension. */
export function langOfPath(path: string): string | null {
  const base = path.split("/").pop() ?? "";
  if (/^Makefile$/i.test(base)) return "makefile";
  if (/^Dockerfile/i.test(base)) return "dockerfile";
  const ext = base.includes(".") ? base.split(".").pop()! : "";
  return langOf(ext);
}

let hl: Promise<HighlighterCore> | null = null;
const loaded = new Map<string, Promise<void>>();

function highlighter(): Promise<HighlighterCore> {
  hl ??= (async () => {
    const [{ createHighlighterCore }, { createJavaScriptRegexEngine }, light, dark] = await Promise.all([
      import("@shikijs/core"),
      import("@shikijs/engine-javascript"),
      import("@shikijs/themes/github-light"),
      import("@shikijs/themes/github-dark"),
    ]);
    return createHighlighterCore({ themes: [light.default, dark.default], langs: [], engine: createJavaScriptRegexEngine() });
  })();
  return hl;
}

async function withLang(lang: string): Promise<HighlighterCore> {
  const h = await highlighter();
  let p = loaded.get(lang);
  if (!p) {
    p = LANGS[lang]().then((m) => h.loadLanguage(m.default));
    loaded.set(lang, p);
  }
  await p;
  return h;
}

/**
 * Shiki with lang loaded, for callers that tokenize by themselves (the files
 * pane highlights a long file in chunks, carrying the grammar state across).
 */
export function highlighterFor(lang: string): Promise<HighlighterCore> {
  return withLang(lang);
}

/** HTML of code highlighted in both themes (CSS variables pick one). */
export async function highlight(code: string, lang: string): Promise<string> {
  const h = await withLang(lang);
  const html = h.codeToHtml(code, { lang: h.getLoadedLanguages().includes(lang) ? lang : "text", themes: { light: "github-light", dark: "github-dark" }, defaultColor: false });
  return sanitizeShiki(html);
}

// Shiki's output is spans with colour variables; only those styles are kept.
function sanitizeShiki(html: string): string {
  const cleaned = sanitize(html.replace(/ style="([^"]*)"/g, (_m, s: string) => ` data-s="${s.replace(/[^-\w#:;,%. ]/g, "")}"`));
  return cleaned;
}

const idle = (f: () => void) => ((window as any).requestIdleCallback ? (window as any).requestIdleCallback(f, { timeout: 1500 }) : setTimeout(f, 50));

/** Highlights the code blocks under el when the browser is idle. */
export function highlightWithin(el: HTMLElement) {
  const codes = el.querySelectorAll<HTMLElement>("pre.code > code[data-lang]:not([data-done])");
  if (codes.length === 0) return;
  idle(() => {
    codes.forEach((code) => {
      const lang = langOf(code.dataset.lang ?? "");
      code.dataset.done = "1";
      if (!lang) return;
      const text = code.textContent ?? "";
      if (text.length > 200_000) return;
      highlight(text, lang)
        .then((html) => {
          const tmp = document.createElement("div");
          tmp.innerHTML = html;
          const pre = tmp.querySelector("pre");
          const inner = pre?.querySelector("code");
          if (!inner || !code.isConnected) return;
          inner.querySelectorAll<HTMLElement>("[data-s]").forEach((s) => {
            const st = s.dataset.s ?? "";
            for (const part of st.split(";")) {
              const [k, v] = part.split(":");
              if (k && v && /^--shiki-(light|dark)(-bg)?$/.test(k.trim())) s.style.setProperty(k.trim(), v.trim());
            }
            s.removeAttribute("data-s");
          });
          code.innerHTML = inner.innerHTML;
          code.classList.add("shiki");
        })
        .catch(() => {
          /* plain text stays */
        });
    });
  });
}
