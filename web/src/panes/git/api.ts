// The git pane's calls: shadow's read-only views of the project's own
// repository (docs/api.md "Project git").

import { get, q } from "../../lib/api";

export interface StatusFile {
  path: string;
  orig_path?: string;
  /** git's XY codes; "." unchanged. */
  index: string;
  worktree: string;
  kind: "changed" | "renamed" | "unmerged" | "untracked";
}
export interface Status {
  root: string;
  branch: string;
  head: string;
  upstream: string;
  ahead: number;
  behind: number;
  files: StatusFile[];
}
export interface Commit {
  commit: string;
  parents: string[];
  author_name: string;
  author_email: string;
  time: string;
  subject: string;
  refs: string[] | string;
}

export const status = (cwd: string) => get<Status>(`/api/git/status?cwd=${q(cwd)}`);
export const diff = (cwd: string, opts: { staged?: boolean; path?: string } = {}) =>
  get<{ diff: string }>(`/api/git/diff?cwd=${q(cwd)}${opts.staged ? "&staged=true" : ""}${opts.path ? `&path=${q(opts.path)}` : ""}`);
export const log = (cwd: string, skip = 0, limit = 50) => get<{ commits: Commit[] }>(`/api/git/log?cwd=${q(cwd)}&limit=${limit}&skip=${skip}`);
export const show = (cwd: string, rev: string) => get<{ commit: Commit; diff: string }>(`/api/git/show?cwd=${q(cwd)}&rev=${q(rev)}`);

export interface Groups {
  staged: StatusFile[];
  unstaged: StatusFile[];
  untracked: StatusFile[];
  unmerged: StatusFile[];
}

/** Sorts status entries into what the pane lists: a file with staged and unstaged changes is in both. */
export function groupStatus(files: StatusFile[]): Groups {
  const g: Groups = { staged: [], unstaged: [], untracked: [], unmerged: [] };
  for (const f of files) {
    if (f.kind === "untracked") g.untracked.push(f);
    else if (f.kind === "unmerged") g.unmerged.push(f);
    else {
      if (f.index && f.index !== ".") g.staged.push(f);
      if (f.worktree && f.worktree !== ".") g.unstaged.push(f);
    }
  }
  return g;
}

/** What a status code means, for a screen reader and a tooltip. */
export function codeName(c: string): string {
  return ({ M: "modified", A: "added", D: "deleted", R: "renamed", C: "copied", T: "type changed", U: "unmerged", "?": "untracked" } as Record<string, string>)[c] ?? c;
}

/** The refs of a log entry as a list (the route may give a string). */
export function refList(r: Commit["refs"]): string[] {
  if (Array.isArray(r)) return r.filter(Boolean);
  return (r ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}
