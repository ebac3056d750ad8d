// A web page through GET /api/browser/proxy: a URL bar and a sandboxed frame
// (sandbox="" without any allow-* token: no script, form, popup or top
// navigation, an opaque origin; shadow sends its own CSP sandbox as well).

import { useState } from "preact/hooks";
import { proxyURL } from "./api";

export function WebView({ onClose }: { onClose: () => void }) {
  const [text, setText] = useState("https://");
  const [url, setUrl] = useState<string | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const go = (e: Event) => {
    e.preventDefault();
    let u = text.trim();
    if (u && !/^[a-z]+:\/\//i.test(u)) u = "https://" + u;
    try {
      const p = new URL(u);
      if (p.protocol !== "http:" && p.protocol !== "https:") throw new Error("only http and https pages can be shown");
      setErr(null);
      setText(p.href);
      setUrl(p.href);
    } catch (e2) {
      setErr(`Not a web address: ${(e2 as Error).message}`);
    }
  };
  return (
    <div class="fview">
      <form class="fbar" onSubmit={go}>
        <button type="button" class="mini fback" onClick={onClose} aria-label="Back to the tree">
          ←
        </button>
        <input class="furl" type="text" inputMode="url" aria-label="URL" value={text} onInput={(e) => setText((e.target as HTMLInputElement).value)} />
        <button type="submit" class="mini">
          Go
        </button>
      </form>
      {err && (
        <p class="ferr pad" role="alert">
          {err}
        </p>
      )}
      {url ? (
        <iframe class="fframe" sandbox="" src={proxyURL(url)} title="Web page" referrerpolicy="no-referrer" />
      ) : (
        <p class="muted pad">Pages are fetched by the server (public addresses only) and shown without their scripts.</p>
      )}
    </div>
  );
}
