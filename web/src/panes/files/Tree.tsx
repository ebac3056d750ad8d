// The tree "Files": one row per entry of the open directories (flat, with
// aria-level), one row focusable at a time (roving tabindex), keys as the
// WAI-ARIA tree pattern. Clicking a directory opens or closes it, a file opens
// it. A directory's row takes dropped files (uploaded into it).

import { useEffect, useRef } from "preact/hooks";
import { keyMove, type Row } from "./tree";

interface Props {
  rootName: string;
  list: Row[];
  selected: string | null;
  rootLoading: boolean;
  rootError: string | null;
  onToggle: (dir: string) => void;
  onOpen: (path: string) => void;
  onSelect: (path: string) => void;
  onDropFiles: (dir: string | null, files: FileList) => void;
}

export function Tree({ rootName, list, selected, rootLoading, rootError, onToggle, onOpen, onSelect, onDropFiles }: Props) {
  const ref = useRef<HTMLUListElement>(null);
  const focusWanted = useRef<string | null>(null);
  const current = selected && list.some((r) => r.path === selected) ? selected : (list[0]?.path ?? null);

  useEffect(() => {
    const want = focusWanted.current;
    if (!want || !ref.current) return;
    focusWanted.current = null;
    ref.current.querySelector<HTMLElement>(`[data-path="${CSS.escape(want)}"]`)?.focus();
  });

  const onKey = (e: KeyboardEvent) => {
    const row = list.find((r) => r.path === current);
    if (e.key === "Enter" || e.key === " ") {
      if (!row) return;
      e.preventDefault();
      if (row.dir) onToggle(row.path);
      else onOpen(row.path);
      return;
    }
    const m = keyMove(list, current, e.key);
    if (m.focus === current && !m.toggle) return;
    e.preventDefault();
    if (m.toggle) onToggle(m.toggle);
    if (m.focus) {
      focusWanted.current = m.focus;
      onSelect(m.focus);
    }
  };

  const drop = (dir: string | null) => ({
    onDragOver: (e: DragEvent) => {
      if (e.dataTransfer?.types.includes("Files")) {
        e.preventDefault();
        e.stopPropagation();
        (e.currentTarget as HTMLElement).classList.add("drop");
      }
    },
    onDragLeave: (e: DragEvent) => (e.currentTarget as HTMLElement).classList.remove("drop"),
    onDrop: (e: DragEvent) => {
      (e.currentTarget as HTMLElement).classList.remove("drop");
      if (!e.dataTransfer?.files.length) return;
      e.preventDefault();
      e.stopPropagation();
      onDropFiles(dir, e.dataTransfer.files);
    },
  });

  return (
    <div class="ftree-box" {...drop(null)}>
      {rootError && (
        <p class="ferr pad" role="alert">
          {rootError}
        </p>
      )}
      <ul ref={ref} class="ftree" role="tree" aria-label="Files" aria-busy={rootLoading} onKeyDown={onKey} title={rootName}>
        {list.map((r) => (
          <li
            key={r.path}
            role="treeitem"
            data-path={r.path}
            aria-level={r.depth}
            aria-expanded={r.dir ? r.expanded : undefined}
            aria-selected={r.path === selected}
            aria-busy={r.loading || undefined}
            tabIndex={r.path === current ? 0 : -1}
            class={`frow${r.dir ? " dir" : ""}${r.path === selected ? " sel" : ""}`}
            style={{ paddingInlineStart: `${(r.depth - 1) * 14 + 6}px` }}
            onClick={(e) => {
              e.stopPropagation();
              onSelect(r.path);
              if (r.dir) onToggle(r.path);
              else onOpen(r.path);
            }}
            {...(r.dir ? drop(r.path) : {})}
          >
            <span class="ficon" aria-hidden="true">
              {r.dir ? (r.expanded ? "▾" : "▸") : r.entry.type === "symlink" ? "↪" : ""}
            </span>
            <span class="fname">{r.name}</span>
            {r.loading && <span class="muted fnote"> …</span>}
            {r.error && <span class="ferr fnote"> {r.error}</span>}
          </li>
        ))}
        {!rootLoading && !rootError && list.length === 0 && (
          <li role="none" class="muted pad">
            Empty directory.
          </li>
        )}
      </ul>
    </div>
  );
}
