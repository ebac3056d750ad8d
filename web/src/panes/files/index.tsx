// The files pane (issue 18 item 3): the tree "Files" rooted at the session's
// working directory, project-wide search, the open file (viewer, editor,
// conflict merge), a web page through the proxy, and upload. The open file
// and line live in the URL (/s/{id}/files?path=src/a.go&line=12), so search
// results and links elsewhere open a file at a line.

import { useSignal } from "@preact/signals";
import { useEffect, useRef, useState } from "preact/hooks";
import type { ApiError } from "../../lib/api";
import { navigate, route } from "../../state/app";
import type { PaneProps } from "../../ui/Panes";
import { SessionCwd } from "../../ui/SessionCwd";
import { listDir } from "./api";
import { FileView } from "./FileView";
import { Search } from "./Search";
import { Tree } from "./Tree";
import { failed, initTree, loaded, parent, relative, reloading, resolvePath, reveal, rows, select, toggle } from "./tree";
import { uploadOne, type UploadNote } from "./upload";
import { WebView } from "./WebView";
import "./files.css";

export default function FilesPane({ sessionId, visible }: PaneProps) {
  return (
    <SessionCwd sessionId={sessionId} none="Open a session first: the files pane shows its working directory." errClass="ferr">
      {(cwd) => <Files sessionId={sessionId!} cwd={cwd} visible={visible} />}
    </SessionCwd>
  );
}

function Files({ sessionId, cwd, visible }: { sessionId: string; cwd: string; visible: boolean }) {
  const tree = useSignal(initTree(cwd));
  const dirty = useRef(false);
  const [web, setWeb] = useState(false);
  const [searching, setSearching] = useState(false);
  const [notes, setNotes] = useState<UploadNote[]>([]);
  const fileInput = useRef<HTMLInputElement>(null);
  const root = tree.value.root;

  const loadDir = async (dir: string) => {
    try {
      const l = await listDir(dir);
      tree.value = loaded(tree.peek(), dir, l.entries, l.truncated);
    } catch (e) {
      tree.value = failed(tree.peek(), dir, (e as ApiError).message);
    }
  };
  useEffect(() => void loadDir(root), [root]);

  // The open file comes from the URL while the pane is shown (another pane's query is not ours).
  route.value; // re-render on navigation
  const lastSearch = useRef("");
  const refused = useRef<string | null>(null);
  const pathOf = (search: string) => {
    const a = new URLSearchParams(search).get("path");
    return a ? resolvePath(root, a) : null;
  };
  if (visible && location.search !== lastSearch.current && location.search !== refused.current) {
    // Back/Forward (or a link from elsewhere) to another file while this
    // one has unsaved edits: ask, and on "no" put the URL back.
    if (dirty.current && pathOf(location.search) !== pathOf(lastSearch.current) && !confirm("Discard your unsaved changes?")) {
      refused.current = location.search;
      const keep = location.pathname + lastSearch.current;
      queueMicrotask(() => {
        navigate(keep);
        refused.current = null;
      });
    } else {
      if (pathOf(location.search) !== pathOf(lastSearch.current)) dirty.current = false;
      lastSearch.current = location.search;
      refused.current = null;
    }
  }
  const params = new URLSearchParams(lastSearch.current);
  const openPath = pathOf(lastSearch.current);
  const line = Number(params.get("line")) || null;

  useEffect(() => {
    if (!openPath) return;
    setWeb(false);
    const r = reveal(tree.peek(), openPath);
    tree.value = r.state;
    (async () => {
      for (const d of r.load) await loadDir(d);
    })();
  }, [openPath]);

  const linkOf = (path: string, ln?: number) => {
    const rel = relative(root, path);
    return `/s/${sessionId}/files` + (path === root ? "" : `?path=${encodeURIComponent(rel)}${ln ? `&line=${ln}` : ""}`);
  };
  const guard = (path: string | null) => !dirty.current || path === openPath || confirm("Discard your unsaved changes?");
  const go = (href: string, path: string | null) => {
    if (!guard(path)) return;
    dirty.current = false;
    navigate(href);
  };
  const onToggle = (dir: string) => {
    const r = toggle(tree.peek(), dir);
    tree.value = r.state;
    if (r.load) void loadDir(r.load);
  };
  const refresh = () => {
    let s = tree.peek();
    const dirs = s.expanded.filter((d) => s.listings[d]);
    for (const d of dirs) s = reloading(s, d);
    tree.value = s;
    dirs.forEach((d) => void loadDir(d));
  };

  const sel = tree.value.selected;
  const selRow = sel ? rows(tree.value).find((r) => r.path === sel) : null;
  const uploadDir = selRow ? (selRow.dir ? selRow.path : parent(selRow.path)) : root;
  const upload = async (dir: string | null, files: FileList | File[]) => {
    const target = dir ?? uploadDir;
    const list = Array.from(files);
    const out: UploadNote[] = [];
    for (const f of list) out.push(await uploadOne(target, f));
    setNotes(out);
    tree.value = reloading(tree.peek(), target);
    await loadDir(target);
  };

  const list = rows(tree.value);
  const t = tree.value;
  const main = web ? (
    <WebView onClose={() => setWeb(false)} />
  ) : openPath ? (
    <FileView key={openPath} path={openPath} shown={relative(root, openPath)} line={line} onDirty={(d) => (dirty.current = d)} onClose={() => (dirty.current = false, navigate(linkOf(root)))} />
  ) : (
    <p class="muted pad fempty">Choose a file in the tree, or search the project.</p>
  );

  return (
    <div class={`files${openPath || web ? " has-main" : ""}`}>
      <aside class="fside">
        <div class="fbar" role="toolbar" aria-label="Files tools">
          <span class="froot" title={root}>
            {root.split("/").pop() || "/"}
          </span>
          <button type="button" class="mini" onClick={refresh} title="Read the open directories again">
            Refresh
          </button>
          <button type="button" class="mini" onClick={() => fileInput.current?.click()} title={`Upload into ${relative(root, uploadDir) || "the working directory"}`}>
            Upload
          </button>
          <button type="button" class="mini" onClick={() => setWeb(true)}>
            Web page
          </button>
          <input ref={fileInput} type="file" multiple hidden aria-label="Files to upload" onChange={(e) => {
            const el = e.target as HTMLInputElement;
            if (el.files?.length) void upload(null, Array.from(el.files));
            el.value = "";
          }} />
        </div>
        <Search cwd={root} linkOf={linkOf} onOpen={(href) => go(href, resolvePath(root, new URLSearchParams(href.split("?")[1]).get("path") ?? ""))} onQuery={setSearching} />
        {notes.length > 0 && (
          <div class="fnotes" role="status" aria-label="Upload">
            {notes.map((n) => (
              <p key={n.name} class={n.ok ? "" : "ferr"}>
                {n.message}
              </p>
            ))}
            <button type="button" class="mini" onClick={() => setNotes([])}>
              Dismiss
            </button>
          </div>
        )}
        <div hidden={searching} class="ftree-wrap">
          <Tree
            rootName={root}
            list={list}
            selected={t.selected}
            rootLoading={t.loading.includes(root)}
            rootError={t.errors[root] ?? null}
            onToggle={onToggle}
            onOpen={(p) => go(linkOf(p), p)}
            onSelect={(p) => (tree.value = select(tree.peek(), p))}
            onDropFiles={(dir, files) => void upload(dir, files)}
          />
          {t.listings[root]?.truncated && <p class="muted pad">Only the first 10 000 entries of this directory are listed.</p>}
        </div>
      </aside>
      <section class="fmain" aria-label="Open file">
        {main}
      </section>
    </div>
  );
}
