// One terminal: an xterm.js screen (WebGL, or the DOM renderer on phones and
// when WebGL fails or loses its context) on a TermClient, fitted to its box on
// every layout change, with its state (reconnecting, exited with Restart,
// errors) shown above it.

import type { Signal } from "@preact/signals";
import { useEffect, useRef, useState } from "preact/hooks";
import { Terminal } from "@xterm/xterm";
import { FitAddon } from "@xterm/addon-fit";
import type { SearchAddon } from "@xterm/addon-search";
import type { SerializeAddon } from "@xterm/addon-serialize";
import { WebLinksAddon } from "@xterm/addon-web-links";
import { TermClient, type Sink } from "./client";
import { registerTerminal, unregisterTerminal, type HookEntry } from "./hook";
import { paletteKey } from "../../lib/shortcuts";
import { withCtrl } from "./keys";

/** What the pane drives in the terminal shown (key bar, find box). */
export interface TermHandle {
  send(data: string): void;
  paste(text: string): void;
  appCursor(): boolean;
  focus(): void;
  search: SearchAddon | null;
}

interface Props {
  id: string;
  label: string;
  cwd: () => string | undefined;
  /** Shown (the pane is visible and this is its tab). */
  active: boolean;
  ctrl: Signal<boolean>;
  onHandle: (id: string, h: TermHandle | null) => void;
}

/** xterm.js as the client's Sink: a reset waits for what was written before it to be parsed. */
class XtermSink implements Sink {
  private held = false;
  private q: (() => void)[] = [];
  capture: HookEntry["capture"] = null;
  /** Runs once a screen frame is drawn (the view fits the terminal to its box again, after a screen of another size). */
  onScreen: (() => void) | null = null;

  screenDrawn() {
    this.onScreen?.();
  }
  constructor(private term: Terminal) {}

  /** Called once after the next write is drawn (the hook's drawn(), for the benchmark's echo timing). */
  waiters: (() => void)[] = [];

  write(data: Uint8Array, done: () => void) {
    this.capture?.feed(data);
    if (this.waiters.length) {
      const w = this.waiters;
      this.waiters = [];
      const d = done;
      done = () => {
        d();
        for (const f of w) f();
      };
    }
    this.run(() => this.term.write(data, done));
  }

  reset(rows?: number, cols?: number) {
    this.run(() => {
      this.held = true;
      this.term.write("", () => {
        this.term.reset();
        if (rows && cols && (rows !== this.term.rows || cols !== this.term.cols)) this.term.resize(cols, rows);
        this.held = false;
        while (!this.held && this.q.length) this.q.shift()!();
      });
    });
  }

  private run(op: () => void) {
    if (this.held) this.q.push(op);
    else op();
  }
}

/**
 * Whether WebGL is drawn by the CPU (SwiftShader, llvmpipe: no GPU, as in
 * headless Chromium or a VM): there xterm.js's WebGL renderer is several times
 * slower than its DOM renderer (measured: 0.7 against 3.9 MB/s of `cat`), so it
 * counts as a WebGL failure.
 */
function softwareGL(): boolean {
  try {
    const gl = document.createElement("canvas").getContext("webgl2");
    if (!gl) return true;
    const ext = gl.getExtension("WEBGL_debug_renderer_info");
    const name = String(ext ? gl.getParameter(ext.UNMASKED_RENDERER_WEBGL) : gl.getParameter(gl.RENDERER));
    gl.getExtension("WEBGL_lose_context")?.loseContext();
    return /swiftshader|llvmpipe|softpipe|software/i.test(name);
  } catch {
    return true;
  }
}

const coarse = () => typeof matchMedia === "function" && matchMedia("(pointer: coarse)").matches;

function theme() {
  const cs = getComputedStyle(document.documentElement);
  const v = (n: string, d: string) => cs.getPropertyValue(n).trim() || d;
  return { background: v("--code", "#0d1014"), foreground: v("--fg", "#e3e7ec"), cursor: v("--accent", "#4c8dff"), selectionBackground: "#4c8dff55" };
}

/** Lines of scrollback xterm.js keeps; the server is told (skip_lines) so that it need not send what cannot reach them. */
const SCROLLBACK = 5000;

export function TermView({ id, label, cwd, active, ctrl, onHandle }: Props) {
  const box = useRef<HTMLDivElement>(null);
  const [parts] = useState(() => {
    const term = new Terminal({
      allowProposedApi: true, // unicode11
      fontFamily: 'ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono", monospace',
      fontSize: coarse() ? 12 : 13,
      scrollback: SCROLLBACK,
      cursorBlink: true,
      theme: theme(),
    });
    const sink = new XtermSink(term);
    // localStorage "svc-term-batch" = "off": a write per frame, as before gathering (the benchmark's baseline);
    // "svc-term-skip" = "off": every byte of a flood parsed, none left out by the server (the other baseline).
    let batchMax: number | undefined;
    let skipLines = SCROLLBACK;
    try {
      if (localStorage.getItem("svc-term-batch") === "off") batchMax = 1;
      if (localStorage.getItem("svc-term-skip") === "off") skipLines = 0;
    } catch {
      /* private mode */
    }
    const client = new TermClient({ id, cwd, sink, batchMax, skipLines });
    return { term, sink, client, fit: new FitAddon(), search: null as SearchAddon | null, serializer: null as SerializeAddon | null };
  });
  const { term, client, fit } = parts;
  const renderer = useRef("dom");
  const [extrasReady, setExtrasReady] = useState(false);

  useEffect(() => {
    const el = box.current!;
    let disposed = false;
    term.open(el);
    // Ctrl+K belongs to the programs in the terminal (readline's kill to the end
    // of the line, nano's cut): the palette is ⌘K or Ctrl+Shift+K here, which
    // xterm.js leaves to the page (App's key handler).
    term.attachCustomKeyEventHandler((e) => !paletteKey(e, true));
    term.loadAddon(fit);
    const extras = import("./extras").then((x) => {
      if (disposed) return;
      parts.search = new x.SearchAddon({ highlightLimit: 1000 });
      parts.serializer = new x.SerializeAddon();
      term.loadAddon(parts.search);
      term.loadAddon(parts.serializer);
      term.loadAddon(new x.Unicode11Addon());
      term.unicode.activeVersion = "11";
      setExtrasReady(true);
    });
    term.loadAddon(new WebLinksAddon((_e, uri) => window.open(uri, "_blank", "noopener,noreferrer")));
    // localStorage "svc-term-renderer" = "dom" keeps the DOM renderer (WebGL is software-rendered on some machines).
    let want = "auto";
    try {
      want = localStorage.getItem("svc-term-renderer") ?? "auto";
    } catch {
      /* private mode */
    }
    if (want === "webgl" || (want === "auto" && !coarse() && !softwareGL())) {
      // WebGL (its own chunk) when it works; the DOM renderer until then, when it fails, and after a lost context.
      import("@xterm/addon-webgl")
        .then(({ WebglAddon }) => {
          if (disposed) return;
          const gl = new WebglAddon();
          gl.onContextLoss(() => {
            gl.dispose();
            renderer.current = "dom";
          });
          term.loadAddon(gl);
          renderer.current = "webgl";
        })
        .catch(() => {
          renderer.current = "dom";
        });
    }
    const data = term.onData((d) => {
      if (ctrl.peek()) {
        ctrl.value = false;
        d = withCtrl(d);
      }
      client.send(d);
    });
    const bin = term.onBinary((d) => client.send(Uint8Array.from(d, (c) => c.charCodeAt(0) & 0xff)));
    const rs = term.onResize(({ rows, cols }) => client.resize(rows, cols));
    const refit = () => {
      if (!el.offsetParent) return; // hidden: no size to fit
      try {
        fit.fit();
      } catch {
        /* not laid out yet */
      }
      client.resize(term.rows, term.cols);
    };
    // A screen frame of another size is drawn at that size, then fitted back to this box (the shell redraws).
    parts.sink.onScreen = refit;
    const ro = new ResizeObserver(refit);
    ro.observe(el);
    refit();
    const entry: HookEntry = {
      client,
      term,
      serializer: async () => (await extras, parts.serializer!),
      renderer: () => renderer.current,
      capture: null,
      nextDrawn: () => new Promise<number>((r) => parts.sink.waiters.push(() => r(performance.now()))),
    };
    // The hook's capture is fed by the sink.
    Object.defineProperty(entry, "capture", { get: () => parts.sink.capture, set: (c) => (parts.sink.capture = c) });
    registerTerminal(id, entry);
    const wake = () => client.wake();
    const onVis = () => {
      client.setHidden(document.visibilityState === "hidden");
      if (document.visibilityState === "visible") wake();
    };
    client.setHidden(document.visibilityState === "hidden");
    addEventListener("focus", wake);
    addEventListener("pageshow", wake);
    addEventListener("online", wake);
    document.addEventListener("visibilitychange", onVis);
    client.start();
    return () => {
      disposed = true;
      ro.disconnect();
      data.dispose();
      bin.dispose();
      rs.dispose();
      removeEventListener("focus", wake);
      removeEventListener("pageshow", wake);
      removeEventListener("online", wake);
      document.removeEventListener("visibilitychange", onVis);
      unregisterTerminal(id, entry);
      client.stop();
      term.dispose();
    };
  }, []);

  useEffect(() => {
    if (!active) {
      onHandle(id, null);
      return;
    }
    onHandle(id, {
      send: (d) => client.send(d),
      paste: (t) => term.paste(t),
      appCursor: () => term.modes.applicationCursorKeysMode,
      focus: () => term.focus(),
      search: parts.search,
    });
    // Shown again: its box may have changed while hidden.
    requestAnimationFrame(() => {
      if (!box.current?.offsetParent) return;
      try {
        fit.fit();
      } catch {
        /* not laid out */
      }
      client.resize(term.rows, term.cols);
      // Take the keyboard unless someone else has it: a dialog (the
      // palette opened while the addons loaded) or a visible field.
      if (!focusTakenElsewhere(box.current)) term.focus();
    });
  }, [active, extrasReady]);

  const st = client.state.value;
  const notice = client.notice.value;
  return (
    <div class="term-view" hidden={!active}>
      {st.kind !== "connected" && st.kind !== "stopped" && (
        <div class={`term-state ${st.kind === "exited" ? "term-exited" : ""}`} role="status" aria-label={`${label} status`}>
          {st.kind === "exited" ? (
            <>
              <span>
                The shell exited with code <b>{st.code}</b>.
              </span>
              <button type="button" onClick={() => client.restart()}>
                Restart
              </button>
            </>
          ) : st.kind === "reconnecting" ? (
            <>
              <span>Reconnecting ({st.why})…</span>
              <button type="button" onClick={() => client.retryNow()}>
                Reconnect now
              </button>
            </>
          ) : st.kind === "catching-up" ? (
            <span>Drawing the output that came in; the live output resumes once it is drawn…</span>
          ) : st.kind === "offline" ? (
            <span>Offline: the terminal reconnects when the network is back.</span>
          ) : (
            <span>Connecting…</span>
          )}
        </div>
      )}
      {notice && (
        <div class="term-notice" role="alert">
          <span>
            {notice.code}: {notice.message}
          </span>
          <button type="button" aria-label="Dismiss" onClick={() => (client.notice.value = null)}>
            ×
          </button>
        </div>
      )}
      <div class="term-screen" ref={box} />
    </div>
  );
}

/** Whether the focus is on something of the page's other than this terminal: a dialog, or a visible field. */
export function focusTakenElsewhere(box: HTMLElement | null): boolean {
  const a = document.activeElement as HTMLElement | null;
  if (!a || a === document.body || box?.contains(a)) return false;
  if (a.closest('[role="dialog"]')) return true;
  return a.offsetParent !== null && a.matches("input, textarea, select, [contenteditable=''], [contenteditable='true']");
}
