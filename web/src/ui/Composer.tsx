// The composer: a multi-line prompt (Enter sends, Shift+Enter breaks a line;
// the other way round when configured), images (paste, drop, pick) and files,
// `@` path completion, the `/` command palette, `!cmd` bang commands, drafts
// saved as you type, the stash and favourite prompts.

import { useSignal } from "@preact/signals";
import { useEffect, useRef, useState } from "preact/hooks";
import { api, ApiError, del, get, post, put, q } from "../lib/api";
import type { ImageBlock } from "../protocol/types";
import { enterSends } from "../state/app";
import type { LiveSession } from "../state/live";

interface Completion {
  label: string;
  insert: string;
  detail?: string;
}

export interface ExecResult {
  command: string;
  stdout: string;
  stderr: string;
  exit_code: number;
  duration_ms: number;
  truncated?: boolean;
  error?: string;
}

export function Composer({ live, onExec, onStop }: { live: LiveSession; onExec: (r: ExecResult) => void; onStop: () => void }) {
  const s = live.store;
  const [text, setText] = useState("");
  const [images, setImages] = useState<{ name: string; block: ImageBlock }[]>([]);
  const [busy, setBusy] = useState<string | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const [comp, setComp] = useState<{ items: Completion[]; start: number; end: number; sel: number; kind: "@" | "/" } | null>(null);
  const [panel, setPanel] = useState<null | "stash" | "favs">(null);
  const ta = useRef<HTMLTextAreaElement>(null);
  const fileIn = useRef<HTMLInputElement>(null);
  const imgIn = useRef<HTMLInputElement>(null);
  const draftId = useRef<string | null>(null);
  const draftTimer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const restored = useSignal(false);

  // Restore the newest draft of this session (saved from any device).
  useEffect(() => {
    let live_ = true;
    get<{ drafts: { draft_id: string; text: string }[] }>(`/api/drafts?session=${q(live.id)}`)
      .then((r) => {
        if (!live_ || !r.drafts.length) return;
        draftId.current = r.drafts[0].draft_id;
        setText((t) => (t === "" ? r.drafts[0].text : t));
        restored.value = true;
      })
      .catch(() => {});
    return () => {
      live_ = false;
    };
  }, [live.id]);

  useEffect(() => autosize(ta.current), [text]);

  const saveDraft = (t: string) => {
    if (draftTimer.current) clearTimeout(draftTimer.current);
    draftTimer.current = setTimeout(async () => {
      try {
        if (t.trim() === "") {
          if (draftId.current) await del(`/api/drafts/${q(draftId.current)}`);
          draftId.current = null;
          return;
        }
        const body = { text: t, cwd: s.cwd.peek() || undefined, session_id: live.id };
        if (draftId.current) {
          try {
            await put(`/api/drafts/${q(draftId.current)}`, body);
            return;
          } catch (e) {
            if (!(e instanceof ApiError && e.status === 404)) throw e;
          }
        }
        const d = await post<{ draft_id: string }>("/api/drafts", body);
        draftId.current = d.draft_id;
      } catch {
        /* a draft is a convenience: the text is still in the box */
      }
    }, 600);
  };

  const clearDraft = () => {
    if (draftTimer.current) clearTimeout(draftTimer.current);
    const id = draftId.current;
    draftId.current = null;
    if (id) del(`/api/drafts/${q(id)}`).catch(() => {});
  };

  const submit = async () => {
    const t = text;
    if (t.trim() === "" && images.length === 0) return;
    setErr(null);
    if (t.startsWith("!") && images.length === 0) {
      const command = t.slice(1).trim();
      if (!command) return;
      setBusy("running " + command);
      try {
        const r = await api<ExecResult>("POST", "/api/exec", { command, cwd: s.cwd.peek() });
        onExec({ ...r, command });
      } catch (e) {
        const b = e instanceof ApiError ? e.body : null;
        onExec({ command, stdout: b?.stdout ?? "", stderr: b?.stderr ?? "", exit_code: b?.exit_code ?? -1, duration_ms: b?.duration_ms ?? 0, error: (e as Error).message });
      } finally {
        setBusy(null);
      }
      setText("");
      clearDraft();
      return;
    }
    // The box is emptied before the prompt is handed over, not after: what
    // the user types while the outbox stores it is the next message, and
    // must not be wiped when this one is through.
    const imgs = images;
    setText("");
    setImages([]);
    clearDraft();
    try {
      await live.sendPrompt(t, imgs.map((i) => i.block));
    } catch (e) {
      setText((cur) => (cur === "" ? t : cur));
      setImages((cur) => (cur.length === 0 ? imgs : cur));
      setErr("Could not keep the message to send: " + (e as Error).message);
    }
  };

  const onInput = (e: Event) => {
    const el = e.currentTarget as HTMLTextAreaElement;
    setText(el.value);
    saveDraft(el.value);
    complete(el);
  };

  const complete = async (el: HTMLTextAreaElement) => {
    const pos = el.selectionStart ?? el.value.length;
    const before = el.value.slice(0, pos);
    const slash = /^\/([\w:.-]*)$/.exec(before);
    if (slash) {
      try {
        const r = await get<{ commands: { invocation: string; description?: string; active?: boolean }[] }>(`/api/commands?cwd=${q(s.cwd.peek())}`);
        const items = r.commands
          .filter((c) => c.active !== false && c.invocation && c.invocation.slice(1).startsWith(slash[1]))
          .slice(0, 30)
          .map((c) => ({ label: c.invocation, insert: c.invocation + " ", detail: c.description }));
        setComp(items.length ? { items, start: 0, end: pos, sel: 0, kind: "/" } : null);
      } catch {
        setComp(null);
      }
      return;
    }
    const at = /(^|\s)@([^\s@]*)$/.exec(before);
    if (at) {
      const partial = at[2];
      const cwd = s.cwd.peek();
      const dir = partial.includes("/") ? partial.slice(0, partial.lastIndexOf("/") + 1) : "";
      const stem = partial.slice(dir.length);
      const abs = dir.startsWith("/") ? dir : `${cwd.replace(/\/$/, "")}/${dir}`;
      try {
        const r = await get<{ entries: { name: string; type: string; target?: string }[] }>(`/api/files?path=${q(abs.replace(/\/$/, "") || "/")}&hidden=${stem.startsWith(".")}`);
        const items = r.entries
          .filter((f) => f.name.startsWith(stem))
          .slice(0, 40)
          .map((f) => {
            const isDir = f.type === "dir" || f.target === "dir";
            return { label: dir + f.name + (isDir ? "/" : ""), insert: "@" + dir + f.name + (isDir ? "/" : " ") };
          });
        setComp(items.length ? { items, start: pos - partial.length - 1, end: pos, sel: 0, kind: "@" } : null);
      } catch {
        setComp(null);
      }
      return;
    }
    setComp(null);
  };

  const choose = (c: Completion) => {
    if (!comp) return;
    const next = text.slice(0, comp.start) + c.insert + text.slice(comp.end);
    setText(next);
    saveDraft(next);
    setComp(null);
    requestAnimationFrame(() => {
      const el = ta.current;
      if (!el) return;
      el.focus();
      const p = comp.start + c.insert.length;
      el.setSelectionRange(p, p);
      if (c.insert.endsWith("/")) complete(el);
    });
  };

  const onKeyDown = (e: KeyboardEvent) => {
    if (comp) {
      if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        e.preventDefault();
        const n = comp.items.length;
        setComp({ ...comp, sel: (comp.sel + (e.key === "ArrowDown" ? 1 : n - 1)) % n });
        return;
      }
      if (e.key === "Tab" || (e.key === "Enter" && !e.shiftKey)) {
        e.preventDefault();
        choose(comp.items[comp.sel]);
        return;
      }
      if (e.key === "Escape") {
        setComp(null);
        return;
      }
    }
    if (e.key === "Enter" && !e.isComposing) {
      const sendKey = enterSends.value ? !e.shiftKey : e.ctrlKey || e.metaKey;
      if (sendKey) {
        e.preventDefault();
        submit();
      }
    }
  };

  const addImage = async (f: File) => {
    setBusy("uploading " + f.name);
    setErr(null);
    try {
      const fd = new FormData();
      fd.append("file", f, f.name || "pasted.png");
      const r = await api<{ name: string; block: ImageBlock }>("POST", `/api/upload-image?session=${q(live.id)}`, fd);
      setImages((im) => [...im, { name: r.name, block: r.block }]);
    } catch (e) {
      setErr(`${f.name || "image"}: ${(e as Error).message}`);
    } finally {
      setBusy(null);
    }
  };

  const addFile = async (f: File) => {
    if (/^image\/(png|jpeg|gif|webp)$/.test(f.type)) return addImage(f);
    setBusy("uploading " + f.name);
    setErr(null);
    try {
      const fd = new FormData();
      fd.append("file", f, f.name);
      const r = await api<{ path: string }>("POST", `/api/upload-file?session=${q(live.id)}`, fd);
      const next = (text && !text.endsWith(" ") && !text.endsWith("\n") ? text + " " : text) + "@" + r.path + " ";
      setText(next);
      saveDraft(next);
    } catch (e) {
      setErr(`${f.name}: ${(e as Error).message}`);
    } finally {
      setBusy(null);
    }
  };

  const onPaste = (e: ClipboardEvent) => {
    const files = [...(e.clipboardData?.files ?? [])].filter((f) => f.type.startsWith("image/"));
    if (files.length) {
      e.preventDefault();
      files.forEach(addImage);
    }
  };

  const onDrop = (e: DragEvent) => {
    const files = [...(e.dataTransfer?.files ?? [])];
    if (files.length) {
      e.preventDefault();
      files.forEach(addFile);
    }
  };

  const stash = async () => {
    if (!text.trim()) return;
    try {
      await post(`/api/session/${q(live.id)}/stash`, { text });
      setText("");
      clearDraft();
      setPanel("stash");
    } catch (e) {
      setErr((e as Error).message);
    }
  };

  const running = s.agentRunning.value;
  return (
    <div class="composer" onDragOver={(e) => e.preventDefault()} onDrop={onDrop}>
      {comp && (
        <ul class="completions" role="listbox" aria-label={comp.kind === "/" ? "Commands" : "Files"}>
          {comp.items.map((c, i) => (
            <li key={c.label} role="option" aria-selected={i === comp.sel} class={i === comp.sel ? "sel" : ""} onMouseDown={(e) => (e.preventDefault(), choose(c))}>
              <span>{c.label}</span>
              {c.detail && <span class="muted"> {c.detail}</span>}
            </li>
          ))}
        </ul>
      )}
      {panel === "stash" && <StashPanel live={live} onUse={(t) => (setText(t), setPanel(null))} onClose={() => setPanel(null)} />}
      {panel === "favs" && <FavPanel onUse={(t) => (setText(t), setPanel(null))} onClose={() => setPanel(null)} />}
      {images.length > 0 && (
        <div class="attach">
          {images.map((im, i) => (
            <span class="chip" key={i}>
              <img alt="" src={`data:${im.block.source.media_type};base64,${im.block.source.data}`} />
              {im.name}
              <button type="button" class="mini" aria-label={`Remove ${im.name}`} onClick={() => setImages(images.filter((_, j) => j !== i))}>
                ×
              </button>
            </span>
          ))}
        </div>
      )}
      {(busy || err || restored.value) && (
        <div class={`composer-note ${err ? "error" : ""}`} role={err ? "alert" : undefined}>
          {err ?? busy ?? "Draft restored"}
        </div>
      )}
      <div class="composer-row">
        <textarea
          ref={ta}
          aria-label="Message"
          placeholder={narrow() ? "Message" : enterSends.value ? "Message · Enter sends, Shift+Enter new line · / commands · @ files · !cmd runs" : "Message · Ctrl+Enter sends · / commands · @ files · !cmd runs"}
          rows={1}
          value={text}
          onInput={onInput}
          onKeyDown={onKeyDown}
          onPaste={onPaste}
          onBlur={() => setTimeout(() => setComp(null), 150)}
          onFocus={() => (restored.value = false)}
        />
        <div class="composer-buttons">
          <button type="button" class="primary big" onClick={submit} disabled={!!busy && busy.startsWith("running")}>
            Send
          </button>
          <button type="button" class="danger big" onClick={onStop} disabled={!running}>
            Stop
          </button>
        </div>
      </div>
      <div class="composer-tools">
        <button type="button" class="mini" onClick={() => imgIn.current?.click()}>
          Image
        </button>
        <button type="button" class="mini" onClick={() => fileIn.current?.click()}>
          File
        </button>
        <button type="button" class="mini" onClick={stash} disabled={!text.trim()}>
          Stash
        </button>
        <button type="button" class="mini" aria-expanded={panel === "stash"} onClick={() => setPanel(panel === "stash" ? null : "stash")}>
          Stashed
        </button>
        <button type="button" class="mini" aria-expanded={panel === "favs"} onClick={() => setPanel(panel === "favs" ? null : "favs")}>
          Favourites
        </button>
        <label class="mini check">
          <input type="checkbox" checked={enterSends.value} onChange={(e) => (enterSends.value = e.currentTarget.checked)} /> Enter sends
        </label>
        <input ref={imgIn} type="file" accept="image/png,image/jpeg,image/gif,image/webp" multiple hidden onChange={(e) => [...(e.currentTarget.files ?? [])].forEach(addImage)} />
        <input ref={fileIn} type="file" multiple hidden onChange={(e) => [...(e.currentTarget.files ?? [])].forEach(addFile)} />
      </div>
    </div>
  );
}

const narrow = () => matchMedia("(max-width: 800px)").matches;

function autosize(el: HTMLTextAreaElement | null) {
  if (!el) return;
  el.style.height = "auto";
  el.style.height = Math.min(el.scrollHeight + 2, Math.round(window.innerHeight * 0.4)) + "px";
}

function StashPanel({ live, onUse, onClose }: { live: LiveSession; onUse: (t: string) => void; onClose: () => void }) {
  const [items, setItems] = useState<{ item_id: string; text: string }[] | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const load = () =>
    get<{ items: { item_id: string; text: string }[] }>(`/api/session/${q(live.id)}/stash?sent=false`)
      .then((r) => setItems(r.items))
      .catch((e) => setErr(e.message));
  useEffect(() => {
    load();
  }, [live.id]);
  const act = async (f: () => Promise<unknown>) => {
    try {
      await f();
      await load();
    } catch (e) {
      setErr((e as Error).message);
    }
  };
  return (
    <div class="panel" role="dialog" aria-label="Stash">
      <div class="panelhead">
        <strong>Stash</strong>
        <button type="button" class="mini" onClick={onClose}>
          Close
        </button>
      </div>
      {err && <p class="error">{err}</p>}
      {items && items.length === 0 && <p class="muted">Nothing stashed. Write a prompt and press Stash to keep it for later.</p>}
      <ul class="plain">
        {items?.map((it) => (
          <li key={it.item_id}>
            <pre class="wrap">{it.text}</pre>
            <button type="button" class="mini" onClick={() => act(async () => (await live.sendPrompt(it.text), await api("PATCH", `/api/session/${q(live.id)}/stash/${q(it.item_id)}`, { sent: true })))}>
              Send
            </button>
            <button type="button" class="mini" onClick={() => act(async () => (onUse(it.text), await del(`/api/session/${q(live.id)}/stash/${q(it.item_id)}`)))}>
              Edit
            </button>
            <button type="button" class="mini" onClick={() => act(() => del(`/api/session/${q(live.id)}/stash/${q(it.item_id)}`))}>
              Delete
            </button>
          </li>
        ))}
      </ul>
    </div>
  );
}

function FavPanel({ onUse, onClose }: { onUse: (t: string) => void; onClose: () => void }) {
  const [items, setItems] = useState<{ prompt_id: string; text: string; session_title: string }[] | null>(null);
  const [err, setErr] = useState<string | null>(null);
  useEffect(() => {
    get<{ prompts: { prompt_id: string; text: string; session_title: string }[] }>("/api/favorites")
      .then((r) => setItems(r.prompts))
      .catch((e) => setErr(e.message));
  }, []);
  return (
    <div class="panel" role="dialog" aria-label="Favourite prompts">
      <div class="panelhead">
        <strong>Favourite prompts</strong>
        <button type="button" class="mini" onClick={onClose}>
          Close
        </button>
      </div>
      {err && <p class="error">{err}</p>}
      {items && items.length === 0 && <p class="muted">No favourite prompts yet: star one of your messages.</p>}
      <ul class="plain">
        {items?.map((it) => (
          <li key={it.prompt_id}>
            <pre class="wrap">{it.text}</pre>
            <button type="button" class="mini" onClick={() => onUse(it.text)}>
              Use
            </button>
          </li>
        ))}
      </ul>
    </div>
  );
}
