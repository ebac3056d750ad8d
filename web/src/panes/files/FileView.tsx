// One open file: its text (highlighted, numbered, the deep-linked line marked),
// an image or player fed by /api/file-raw, an HTML file rendered in a
// sandboxed frame, or a note with its raw and download links; and the editor,
// which saves against the version it read and turns a 409 into a conflict.

import { useSignal } from "@preact/signals";
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError } from "../../lib/api";
import { langOfPath } from "../../lib/highlight";
import { kindOf, rawURL, readFile, renderURL, type FileText } from "./api";
import { Conflict } from "./Conflict";
import { dirty, edit, openDoc, saved, saveRequest, conflicted, type Doc } from "./doc";
import { writeFile } from "./api";
import type { Editor } from "./editor";
import { LINE_PX, renderText, type Rendered } from "./textview";

type Load = { status: "loading" } | { status: "text"; file: FileText } | { status: "raw"; message: string } | { status: "error"; message: string };

interface Props {
  path: string;
  /** Its name relative to the working directory (what the toolbar shows). */
  shown: string;
  line: number | null;
  /** Called with whether the editor holds unsaved changes. */
  onDirty: (d: boolean) => void;
  onClose: () => void;
}

export function FileView({ path, shown, line, onDirty, onClose }: Props) {
  const kind = kindOf(path);
  const name = path.split("/").pop() ?? path;
  const [load, setLoad] = useState<Load>({ status: "loading" });
  const [mode, setMode] = useState<"view" | "edit" | "rendered">(kind === "html" ? "rendered" : "view");
  const doc = useSignal<Doc | null>(null);
  const [reloads, setReloads] = useState(0);

  useEffect(() => {
    if (kind !== "text" && kind !== "html") return;
    let live = true;
    setLoad({ status: "loading" });
    readFile(path).then(
      (file) => live && setLoad({ status: "text", file }),
      (e: ApiError) => live && setLoad(e.status === 415 || e.status === 413 ? { status: "raw", message: e.message } : { status: "error", message: e.message }),
    );
    return () => {
      live = false;
    };
  }, [path, reloads]);

  const d = doc.value;
  const isDirty = !!d && (dirty(d) || !!d.conflict);
  useEffect(() => onDirty(isDirty), [isDirty]);
  useEffect(() => {
    if (!isDirty) return;
    const h = (e: BeforeUnloadEvent) => e.preventDefault();
    addEventListener("beforeunload", h);
    return () => removeEventListener("beforeunload", h);
  }, [isDirty]);

  const startEdit = () => {
    if (load.status !== "text") return;
    doc.value = openDoc(path, load.file.content, load.file.version);
    setMode("edit");
  };
  const stopEdit = () => {
    if (isDirty && !confirm(`Discard your unsaved changes to ${name}?`)) return;
    const cur = doc.peek();
    if (cur && load.status === "text") setLoad({ status: "text", file: { ...load.file, content: cur.savedText, version: cur.version } });
    doc.value = null;
    setMode(kind === "html" ? "rendered" : "view");
  };

  const save = async () => {
    const cur = doc.peek();
    if (!cur || cur.saving || cur.conflict) return;
    const req = saveRequest(cur);
    doc.value = { ...cur, saving: true, error: null };
    try {
      const w = await writeFile(req);
      doc.value = saved(doc.peek()!, req.content, w.version);
    } catch (e) {
      const err = e as ApiError;
      if (err.status !== 409) {
        doc.value = { ...doc.peek()!, saving: false, error: err.message };
        return;
      }
      await fetchConflict(req.content);
    }
  };

  /** After a 409: reads what the disk holds now and shows both. */
  const fetchConflict = async (mine: string) => {
    try {
      const f = await readFile(path);
      doc.value = conflicted(doc.peek()!, mine, { content: f.content, version: f.version });
    } catch (e2) {
      const err = e2 as ApiError;
      if (err.status === 404) doc.value = conflicted(doc.peek()!, mine, null);
      else doc.value = { ...doc.peek()!, saving: false, error: `The save was refused (the file changed) and the other version cannot be read: ${err.message}` };
    }
  };

  const shownName = (
    <span class="fpath" title={path}>
      {shown || name}
      {isDirty && <span class="fdirty" title="Unsaved changes" aria-label="Unsaved changes"> ●</span>}
    </span>
  );

  return (
    <div class="fview">
      <div class="fbar" role="toolbar" aria-label="File">
        <button type="button" class="mini fback" onClick={() => (isDirty && !confirm(`Discard your unsaved changes to ${name}?`) ? null : onClose())} aria-label="Back to the tree">
          ←
        </button>
        {shownName}
        {load.status === "text" && mode !== "edit" && (
          <button type="button" class="mini" onClick={startEdit}>
            Edit
          </button>
        )}
        {kind === "html" && mode !== "edit" && (
          <button type="button" class="mini" aria-pressed={mode === "view"} onClick={() => setMode(mode === "rendered" ? "view" : "rendered")}>
            {mode === "rendered" ? "Source" : "Rendered"}
          </button>
        )}
        {mode === "edit" && d && (
          <>
            <button type="button" class="mini primary" disabled={d.saving || !!d.conflict || !dirty(d)} onClick={save}>
              {d.saving ? "Saving…" : "Save"}
            </button>
            <button type="button" class="mini" onClick={stopEdit}>
              Close editor
            </button>
          </>
        )}
        {mode !== "edit" && (
          <button type="button" class="mini" onClick={() => setReloads(reloads + 1)} disabled={kind !== "text" && kind !== "html"}>
            Reload
          </button>
        )}
        <a class="mini btnlink" href={rawURL(path)} target="_blank" rel="noopener noreferrer">
          Raw
        </a>
        <a class="mini btnlink" href={rawURL(path, true)} download={name}>
          Download
        </a>
      </div>
      {mode === "edit" && d ? (
        <EditArea doc={d} line={line} name={name} onText={(t) => (doc.value = edit(doc.peek()!, t))} onSave={save} onResolved={(next) => (doc.value = next)} refetch={fetchConflict} />
      ) : (
        <Body kind={kind} mode={mode} path={path} name={name} load={load} line={line} />
      )}
    </div>
  );
}

function Body({ kind, mode, path, name, load, line }: { kind: ReturnType<typeof kindOf>; mode: string; path: string; name: string; load: Load; line: number | null }) {
  if (kind === "image")
    return (
      <div class="fmedia">
        <img src={rawURL(path)} alt={name} />
      </div>
    );
  if (kind === "video")
    return (
      <div class="fmedia">
        <video src={rawURL(path)} controls preload="metadata" aria-label={name} />
      </div>
    );
  if (kind === "audio")
    return (
      <div class="fmedia">
        <audio src={rawURL(path)} controls preload="metadata" aria-label={name} />
      </div>
    );
  if (kind === "html" && mode === "rendered")
    // sandbox="" (no allow-* token): an opaque origin, no script, form, popup or top navigation,
    // on top of the CSP sandbox shadow sends with the page itself.
    return <iframe class="fframe" sandbox="" src={renderURL(path)} title={`Rendered ${name}`} referrerpolicy="no-referrer" />;
  if (load.status === "loading")
    return (
      <p class="muted pad" role="status">
        Reading {name}…
      </p>
    );
  if (load.status === "error")
    return (
      <p class="ferr pad" role="alert">
        {load.message}
      </p>
    );
  if (load.status === "raw")
    return (
      <div class="pad">
        <p>{load.message}</p>
        <p>
          <a href={rawURL(path)} target="_blank" rel="noopener noreferrer">
            Open the raw file
          </a>{" "}
          ·{" "}
          <a href={rawURL(path, true)} download={name}>
            Download it
          </a>
        </p>
      </div>
    );
  return <TextView text={load.file.content} path={path} line={line} />;
}

/** The numbered, highlighted text; line is scrolled to and marked. */
export function TextView({ text, path, line }: { text: string; path: string; line: number | null }) {
  const code = useRef<HTMLDivElement>(null);
  const gutter = useRef<HTMLPreElement>(null);
  const scroller = useRef<HTMLDivElement>(null);
  const [lines, setLines] = useState(0);
  const r = useRef<Rendered | null>(null);
  useEffect(() => {
    if (!code.current || !gutter.current) return;
    r.current = renderText(code.current, gutter.current, text, langOfPath(path));
    setLines(r.current.lines);
    return () => r.current?.cancel();
  }, [text, path]);
  useEffect(() => {
    const s = scroller.current;
    if (!s || !line || !lines) return;
    s.scrollTop = Math.max(0, (line - 1) * LINE_PX - s.clientHeight / 3);
  }, [line, lines]);
  const marked = line && line <= lines ? line : null;
  return (
    <div class="ftext" ref={scroller} role="region" aria-label={`Contents of ${path.split("/").pop()}`} tabIndex={0}>
      <div class="ftext-in">
        <pre class="fgutter" ref={gutter} aria-hidden="true" />
        <div class="fcode-wrap">
          {marked && <div class="fmark" style={{ top: `${(marked - 1) * LINE_PX}px` }} data-line={marked} />}
          <div class="fcode" ref={code} />
        </div>
      </div>
    </div>
  );
}

function EditArea({ doc, line, name, onText, onSave, onResolved, refetch }: { doc: Doc; line: number | null; name: string; onText: (t: string) => void; onSave: () => void; onResolved: (d: Doc) => void; refetch: (mine: string) => Promise<void> }) {
  const host = useRef<HTMLDivElement>(null);
  const ed = useRef<Editor | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const cb = useRef({ onText, onSave });
  cb.current = { onText, onSave };
  useEffect(() => {
    let live = true;
    import("./editor").then(
      (m) => {
        if (!live || !host.current) return;
        ed.current = m.createEditor(host.current, doc.text, name, (t) => cb.current.onText(t), () => cb.current.onSave());
        if (line) ed.current.gotoLine(line);
        ed.current.focus();
      },
      (e) => live && setErr(`The editor could not be loaded: ${(e as Error).message}`),
    );
    return () => {
      live = false;
      ed.current?.destroy();
      ed.current = null;
    };
  }, []);
  // A resolved conflict puts the chosen text into the editor. Only then: the
  // editor is the source of the text while typing (syncing it back from an
  // older render's doc would undo keystrokes typed in between).
  const wasConflict = useRef(false);
  useEffect(() => {
    const e = ed.current;
    if (wasConflict.current && !doc.conflict && e && e.text() !== doc.text) e.setText(doc.text);
    wasConflict.current = !!doc.conflict;
  }, [doc.conflict]);
  return (
    <div class="fedit">
      {err && <p class="ferr pad">{err}</p>}
      {doc.error && (
        <p class="ferr pad" role="alert">
          {doc.error}
        </p>
      )}
      {doc.conflict && <Conflict doc={doc} name={name} onResolved={onResolved} refetch={refetch} />}
      <div class="fcm" ref={host} hidden={!!doc.conflict} />
    </div>
  );
}
