// Parses unified diffs (git's patch format) into files, hunks and numbered
// lines, for the diff views of the journal and of the project's git.

export type DiffLineKind = "ctx" | "add" | "del" | "meta";

export interface DiffLine {
  kind: DiffLineKind;
  text: string;
  /** Line numbers in the old and the new file (absent where the line is not in it). */
  old?: number;
  new?: number;
}

export interface DiffHunk {
  header: string;
  lines: DiffLine[];
}

export interface DiffFile {
  /** The path after the change (before, for a deletion). */
  path: string;
  oldPath?: string;
  /** git's header lines (index, mode, rename, "Binary files ... differ"). */
  meta: string[];
  hunks: DiffHunk[];
  additions: number;
  deletions: number;
  binary: boolean;
}

export interface ParsedPatch {
  /** What stood before the first file (git's --stat summary, a commit message). */
  preamble: string;
  files: DiffFile[];
}

const hunkRe = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/;

function unquote(p: string): string {
  if (p.startsWith('"') && p.endsWith('"')) {
    try {
      return JSON.parse(p);
    } catch {
      return p.slice(1, -1);
    }
  }
  return p;
}

function stripPrefix(p: string): string {
  p = unquote(p.trim());
  return p.startsWith("a/") || p.startsWith("b/") ? p.slice(2) : p;
}

/** Parses text, one or more files of a unified diff; lines before the first file are the preamble. */
export function parsePatch(text: string): ParsedPatch {
  const lines = text.split("\n");
  if (lines.length && lines[lines.length - 1] === "") lines.pop();
  const files: DiffFile[] = [];
  const pre: string[] = [];
  let f: DiffFile | null = null;
  let h: DiffHunk | null = null;
  let oldNo = 0;
  let newNo = 0;
  const start = (path: string) => {
    f = { path, meta: [], hunks: [], additions: 0, deletions: 0, binary: false };
    files.push(f);
    h = null;
  };
  for (const line of lines) {
    if (line.startsWith("diff --git ")) {
      const m = /^diff --git ("?a\/.*?"?) ("?b\/.*"?)$/.exec(line);
      start(m ? stripPrefix(m[2]) : line.slice(11));
      if (m && stripPrefix(m[1]) !== f!.path) f!.oldPath = stripPrefix(m[1]);
      continue;
    }
    if (!f && line.startsWith("--- ")) {
      // A bare unified diff (no "diff --git" line).
      start("");
    }
    if (!f) {
      pre.push(line);
      continue;
    }
    const cur: DiffFile = f;
    const m = hunkRe.exec(line);
    if (m) {
      h = { header: line, lines: [] };
      cur.hunks.push(h);
      oldNo = Number(m[1]);
      newNo = Number(m[2]);
      continue;
    }
    if (!h) {
      if (line.startsWith("--- ")) {
        const p = line.slice(4);
        if (p !== "/dev/null" && !cur.path) cur.path = stripPrefix(p);
      } else if (line.startsWith("+++ ")) {
        const p = line.slice(4);
        if (p !== "/dev/null") cur.path = stripPrefix(p);
      } else {
        if (line.startsWith("Binary files") || line.startsWith("GIT binary patch")) cur.binary = true;
        cur.meta.push(line);
      }
      continue;
    }
    const hunk: DiffHunk = h;
    const c = line[0];
    if (c === "+") {
      hunk.lines.push({ kind: "add", text: line.slice(1), new: newNo++ });
      cur.additions++;
    } else if (c === "-") {
      hunk.lines.push({ kind: "del", text: line.slice(1), old: oldNo++ });
      cur.deletions++;
    } else if (c === "\\") {
      hunk.lines.push({ kind: "meta", text: line });
    } else {
      hunk.lines.push({ kind: "ctx", text: line.slice(1), old: oldNo++, new: newNo++ });
    }
  }
  return { preamble: pre.join("\n").trim(), files };
}
