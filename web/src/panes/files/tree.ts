// The file tree's state, as data: which directories are open, what each
// listing holds, which are loading or failed, and the rows a tree shows. Pure
// functions (state in, state out), so the tree's behaviour is tested without a
// DOM; the component only renders rows() and sends intents.

export type EntryType = "file" | "dir" | "symlink" | "other";

/** One entry of GET /api/files. */
export interface Entry {
  name: string;
  type: EntryType;
  /** A symbolic link's target kind: file, dir, other or broken. */
  target?: string;
  size: number;
  mtime: string;
}

export interface TreeState {
  /** The directory the tree is rooted at (the session's working directory). */
  root: string;
  /** Listings by directory path; absent until loaded. */
  listings: Record<string, { entries: Entry[]; truncated: boolean }>;
  /** Open directories. */
  expanded: string[];
  /** Directories whose listing is being read. */
  loading: string[];
  /** The error of a directory's listing. */
  errors: Record<string, string>;
  /** The selected row (file or directory), the one with focus in the tree. */
  selected: string | null;
}

export interface Row {
  path: string;
  name: string;
  depth: number;
  dir: boolean;
  entry: Entry;
  expanded: boolean;
  loading: boolean;
  error?: string;
}

export function initTree(root: string): TreeState {
  root = trimSlash(root);
  return { root, listings: {}, expanded: [root], loading: [root], errors: {}, selected: null };
}

export function trimSlash(p: string): string {
  return p.length > 1 && p.endsWith("/") ? p.slice(0, -1) : p;
}

/** The path of name inside dir. */
export function join(dir: string, name: string): string {
  return dir === "/" ? "/" + name : dir + "/" + name;
}

/** The directory holding path ("/" for a top-level path). */
export function parent(path: string): string {
  const i = path.lastIndexOf("/");
  return i <= 0 ? "/" : path.slice(0, i);
}

/** Whether an entry opens as a directory (a link to one does). */
export function isDir(e: Entry): boolean {
  return e.type === "dir" || (e.type === "symlink" && e.target === "dir");
}

/** Whether path is root or inside it (by whole path elements). */
export function within(root: string, path: string): boolean {
  return path === root || path.startsWith(root === "/" ? "/" : root + "/");
}

/** path relative to root ("" for root itself); the path itself when outside. */
export function relative(root: string, path: string): string {
  if (path === root) return "";
  if (within(root, path)) return path.slice(root === "/" ? 1 : root.length + 1);
  return path;
}

/** An absolute path from p, relative to root unless it is absolute already. */
export function resolvePath(root: string, p: string): string {
  if (p.startsWith("/")) return trimSlash(p);
  const parts = p.split("/").filter((x) => x && x !== ".");
  return parts.length ? join(root, parts.join("/")) : root;
}

const without = (list: string[], x: string) => list.filter((y) => y !== x);
const withOne = (list: string[], x: string) => (list.includes(x) ? list : [...list, x]);

/**
 * Opens or closes directory dir. Returns the new state and, when the
 * directory must be read (opened, never loaded, not loading), its path.
 */
export function toggle(s: TreeState, dir: string): { state: TreeState; load: string | null } {
  if (s.expanded.includes(dir)) return { state: { ...s, expanded: without(s.expanded, dir) }, load: null };
  return expand(s, dir);
}

/** Opens directory dir (and says whether it must be read). */
export function expand(s: TreeState, dir: string): { state: TreeState; load: string | null } {
  const expanded = withOne(s.expanded, dir);
  const needs = !s.listings[dir] && !s.loading.includes(dir);
  if (!needs) return { state: { ...s, expanded }, load: null };
  const errors = { ...s.errors };
  delete errors[dir];
  return { state: { ...s, expanded, loading: withOne(s.loading, dir), errors }, load: dir };
}

/** Marks dir as being read again (a refresh); its old listing shows meanwhile. */
export function reloading(s: TreeState, dir: string): TreeState {
  return { ...s, loading: withOne(s.loading, dir) };
}

/** A listing arrived. */
export function loaded(s: TreeState, dir: string, entries: Entry[], truncated = false): TreeState {
  const errors = { ...s.errors };
  delete errors[dir];
  return { ...s, listings: { ...s.listings, [dir]: { entries, truncated } }, loading: without(s.loading, dir), errors };
}

/** A listing failed (its message is shown in the directory's place). */
export function failed(s: TreeState, dir: string, message: string): TreeState {
  return { ...s, loading: without(s.loading, dir), errors: { ...s.errors, [dir]: message } };
}

export function select(s: TreeState, path: string | null): TreeState {
  return s.selected === path ? s : { ...s, selected: path };
}

/**
 * The directories to open so that path shows in the tree (its ancestors
 * below the root, outermost first), and the state with them opened. Those
 * not loaded yet are returned in load, to be read in order.
 */
export function reveal(s: TreeState, path: string): { state: TreeState; load: string[] } {
  if (!within(s.root, path) || path === s.root) return { state: s, load: [] };
  const dirs: string[] = [];
  for (let d = parent(path); within(s.root, d) && d !== s.root; d = parent(d)) dirs.unshift(d);
  let state = s;
  const load: string[] = [];
  for (const d of dirs) {
    const r = expand(state, d);
    state = r.state;
    if (r.load) load.push(r.load);
  }
  return { state: select(state, path), load };
}

/** The rows the tree shows: the root's entries, and those of every open directory under them. */
export function rows(s: TreeState): Row[] {
  const out: Row[] = [];
  const walk = (dir: string, depth: number) => {
    const l = s.listings[dir];
    if (!l) return;
    for (const e of l.entries) {
      const path = join(dir, e.name);
      const dir_ = isDir(e);
      const open = dir_ && s.expanded.includes(path);
      out.push({ path, name: e.name, depth, dir: dir_, entry: e, expanded: open, loading: s.loading.includes(path), error: s.errors[path] });
      if (open) walk(path, depth + 1);
    }
  };
  walk(s.root, 1);
  return out;
}

/**
 * Where a key moves the focus in the tree (the WAI-ARIA tree pattern):
 * Up/Down to the previous/next row, Home/End to the first/last, Left closes
 * an open directory or goes to the parent, Right opens a directory or goes to
 * its first child. Returns the row to focus and a directory to toggle, if any.
 */
export function keyMove(list: Row[], current: string | null, key: string): { focus: string | null; toggle: string | null } {
  if (!list.length) return { focus: null, toggle: null };
  const i = list.findIndex((r) => r.path === current);
  const r = i >= 0 ? list[i] : null;
  switch (key) {
    case "ArrowDown":
      return { focus: list[Math.min(list.length - 1, i + 1)].path, toggle: null };
    case "ArrowUp":
      return { focus: list[Math.max(0, i - 1)].path, toggle: null };
    case "Home":
      return { focus: list[0].path, toggle: null };
    case "End":
      return { focus: list[list.length - 1].path, toggle: null };
    case "ArrowRight":
      if (!r) return { focus: list[0].path, toggle: null };
      if (r.dir && !r.expanded) return { focus: r.path, toggle: r.path };
      if (r.dir && r.expanded && list[i + 1]?.depth === r.depth + 1) return { focus: list[i + 1].path, toggle: null };
      return { focus: r.path, toggle: null };
    case "ArrowLeft": {
      if (!r) return { focus: list[0].path, toggle: null };
      if (r.dir && r.expanded) return { focus: r.path, toggle: r.path };
      for (let j = i - 1; j >= 0; j--) if (list[j].depth === r.depth - 1) return { focus: list[j].path, toggle: null };
      return { focus: r.path, toggle: null };
    }
  }
  return { focus: current, toggle: null };
}
