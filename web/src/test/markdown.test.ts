// @vitest-environment jsdom
// DOMPurify needs a faithful DOM: under happy-dom it keeps javascript: links
// and svg (its tree walking differs), so this file runs in jsdom, which
// DOMPurify is tested against upstream.
import { describe, expect, it } from "vitest";
import { renderMarkdown, splitBlocks } from "../lib/markdown";

// Each of these must come out with no way to run script.
const hostile = [
  "<script>window.__pwned = 1</script>",
  "<img src=x onerror=\"window.__pwned=1\">",
  "[click](javascript:window.__pwned=1)",
  "[click](JaVaScRiPt:window.__pwned=1)",
  "<a href=\"javascript:window.__pwned=1\">x</a>",
  "<svg><script>window.__pwned=1</script></svg>",
  "<svg onload=\"window.__pwned=1\"></svg>",
  "<iframe src=\"javascript:window.__pwned=1\"></iframe>",
  "<math><mtext><table><mglyph><style><img src=x onerror=window.__pwned=1>",
  "<details open ontoggle=\"window.__pwned=1\">",
  "<div style=\"background:url(javascript:window.__pwned=1)\">x</div>",
  "<form action=\"javascript:window.__pwned=1\"><button>go</button></form>",
  "<object data=\"data:text/html,<script>window.__pwned=1</script>\"></object>",
  "<base href=\"javascript:/\">",
  "```html\n<script>window.__pwned=1</script>\n```",
  "[x](data:text/html;base64,PHNjcmlwdD53aW5kb3cuX19wd25lZD0xPC9zY3JpcHQ+)",
  "<a href=\"&#106;avascript:window.__pwned=1\">x</a>",
];

describe("markdown sanitising", () => {
  for (const src of hostile) {
    it(`neutralises ${JSON.stringify(src).slice(0, 60)}`, () => {
      const html = renderMarkdown(src);
      const div = document.createElement("div");
      div.innerHTML = html;
      document.body.appendChild(div);
      expect(div.querySelector("script, iframe, object, embed, form, base, svg, math, style, img")).toBeNull();
      for (const el of div.querySelectorAll("*")) {
        for (const a of el.attributes) {
          expect(a.name.startsWith("on")).toBe(false);
          expect(a.name).not.toBe("style");
          if (a.name === "href" || a.name === "src" || a.name === "action") expect(a.value).not.toMatch(/^\s*(javascript|data|vbscript):/i);
        }
      }
      expect((window as any).__pwned).toBeUndefined();
      div.remove();
    });
  }

  it("keeps ordinary markdown and code", () => {
    const html = renderMarkdown("# Title\n\nSome *text* and `code`.\n\n```go\nfmt.Println(\"<hi>\")\n```\n\n- a\n- b\n\n[link](https://example.com)");
    expect(html).toContain("<h1>Title</h1>");
    expect(html).toContain("<em>text</em>");
    expect(html).toContain('data-lang="go"');
    expect(html).toContain("fmt.Println(\"&lt;hi&gt;\")");
    expect(html).toContain('href="https://example.com"');
    expect(html).toContain('rel="noopener noreferrer"');
  });

  it("splits at blank lines outside code fences, keeping lists whole", () => {
    expect(splitBlocks("a\n\nb")).toEqual(["a", "b"]);
    expect(splitBlocks("```\nx\n\ny\n```\n\nz")).toEqual(["```\nx\n\ny\n```", "z"]);
    expect(splitBlocks("- a\n\n- b\n\npara")).toEqual(["- a\n\n- b", "para"]);
    expect(splitBlocks("```\nopen fence\n\nstill")).toEqual(["```\nopen fence\n\nstill"]);
  });
});
