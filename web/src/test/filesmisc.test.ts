import { describe, expect, it } from "vitest";
import { kindOf } from "../panes/files/api";
import { splitLines } from "../panes/files/textview";
import { groupStatus, refList, type StatusFile } from "../panes/git/api";

describe("files pane helpers", () => {
  it("splits lines: a final newline ends the last line", () => {
    expect(splitLines("a\nb\n")).toEqual(["a", "b"]);
    expect(splitLines("a\nb")).toEqual(["a", "b"]);
    expect(splitLines("")).toEqual([""]);
    expect(splitLines("\n")).toEqual([""]);
  });

  it("shows files by kind of name", () => {
    expect(kindOf("/p/a.PNG")).toBe("image");
    expect(kindOf("/p/index.html")).toBe("html");
    expect(kindOf("/p/clip.webm")).toBe("video");
    expect(kindOf("/p/a.go")).toBe("text");
  });
});

describe("git status groups", () => {
  const e = (path: string, index: string, worktree: string, kind: StatusFile["kind"] = "changed"): StatusFile => ({ path, index, worktree, kind });
  it("puts a file with staged and unstaged changes in both groups", () => {
    const g = groupStatus([e("a", "M", "M"), e("b", ".", "M"), e("c", "A", "."), e("d", "?", "?", "untracked"), e("e", "U", "U", "unmerged")]);
    expect(g.staged.map((f) => f.path)).toEqual(["a", "c"]);
    expect(g.unstaged.map((f) => f.path)).toEqual(["a", "b"]);
    expect(g.untracked.map((f) => f.path)).toEqual(["d"]);
    expect(g.unmerged.map((f) => f.path)).toEqual(["e"]);
  });
  it("reads refs given as git's decoration string", () => {
    expect(refList("HEAD -> main, tag: v1")).toEqual(["HEAD -> main", "tag: v1"]);
    expect(refList("")).toEqual([]);
  });
});
