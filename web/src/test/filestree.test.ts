import { describe, expect, it } from "vitest";
import { expand, failed, initTree, keyMove, loaded, parent, relative, resolvePath, reveal, rows, toggle, within, type Entry } from "../panes/files/tree";

const f = (name: string): Entry => ({ name, type: "file", size: 1, mtime: "" });
const d = (name: string): Entry => ({ name, type: "dir", size: 1, mtime: "" });

describe("file tree state", () => {
  it("starts rooted at the working directory, loading it", () => {
    const s = initTree("/home/u/proj/");
    expect(s.root).toBe("/home/u/proj");
    expect(s.loading).toEqual(["/home/u/proj"]);
    expect(rows(s)).toEqual([]);
  });

  it("lists the root, then a directory's entries under it once opened and loaded", () => {
    let s = loaded(initTree("/p"), "/p", [d("src"), f("README.md")]);
    expect(rows(s).map((r) => [r.path, r.depth, r.dir, r.expanded])).toEqual([
      ["/p/src", 1, true, false],
      ["/p/README.md", 1, false, false],
    ]);
    const t = toggle(s, "/p/src");
    expect(t.load).toBe("/p/src");
    s = t.state;
    expect(rows(s)[0].loading).toBe(true);
    s = loaded(s, "/p/src", [f("a.go")]);
    expect(rows(s).map((r) => r.path)).toEqual(["/p/src", "/p/src/a.go", "/p/README.md"]);
    expect(rows(s)[1].depth).toBe(2);
  });

  it("reads a directory once: closing and opening again needs no load", () => {
    let s = loaded(initTree("/p"), "/p", [d("src")]);
    s = loaded(toggle(s, "/p/src").state, "/p/src", [f("a")]);
    s = toggle(s, "/p/src").state; // closed
    expect(rows(s).map((r) => r.path)).toEqual(["/p/src"]);
    const again = toggle(s, "/p/src");
    expect(again.load).toBeNull();
    expect(rows(again.state).map((r) => r.path)).toEqual(["/p/src", "/p/src/a"]);
  });

  it("does not ask twice for a directory being read", () => {
    const s = loaded(initTree("/p"), "/p", [d("src")]);
    const a = expand(s, "/p/src");
    expect(a.load).toBe("/p/src");
    expect(expand(a.state, "/p/src").load).toBeNull();
  });

  it("shows a failed listing on its row, and retries when opened again", () => {
    let s = loaded(initTree("/p"), "/p", [d("secret")]);
    s = failed(toggle(s, "/p/secret").state, "/p/secret", "forbidden");
    expect(rows(s)[0].error).toBe("forbidden");
    s = toggle(s, "/p/secret").state; // close
    const r = toggle(s, "/p/secret");
    expect(r.load).toBe("/p/secret");
    expect(rows(r.state)[0].error).toBeUndefined();
  });

  it("treats a link to a directory as a directory", () => {
    const s = loaded(initTree("/p"), "/p", [{ name: "docs", type: "symlink", target: "dir", size: 7, mtime: "" }, { name: "x", type: "symlink", target: "file", size: 1, mtime: "" }]);
    expect(rows(s).map((r) => r.dir)).toEqual([true, false]);
  });

  it("reveals a deep file: opens its ancestors below the root, outermost first, and selects it", () => {
    const s = loaded(initTree("/p"), "/p", [d("a")]);
    const r = reveal(s, "/p/a/b/c.txt");
    expect(r.load).toEqual(["/p/a", "/p/a/b"]);
    expect(r.state.expanded).toContain("/p/a/b");
    expect(r.state.selected).toBe("/p/a/b/c.txt");
    expect(reveal(s, "/elsewhere/x").load).toEqual([]);
  });

  it("resolves deep-link paths relative to the root, and keeps absolute ones", () => {
    expect(resolvePath("/p", "src/a.go")).toBe("/p/src/a.go");
    expect(resolvePath("/p", "./src//a.go")).toBe("/p/src/a.go");
    expect(resolvePath("/p", "/etc/hosts")).toBe("/etc/hosts");
    expect(resolvePath("/p", "")).toBe("/p");
    expect(relative("/p", "/p/src/a.go")).toBe("src/a.go");
    expect(relative("/p", "/px/a")).toBe("/px/a");
    expect(within("/home/u", "/home/user2")).toBe(false);
    expect(within("/", "/x")).toBe(true);
    expect(parent("/x")).toBe("/");
  });

  it("moves the focus as the WAI-ARIA tree pattern says", () => {
    let s = loaded(initTree("/p"), "/p", [d("src"), f("z")]);
    s = loaded(toggle(s, "/p/src").state, "/p/src", [f("a"), f("b")]);
    const list = rows(s); // src, src/a, src/b, z
    expect(keyMove(list, "/p/src", "ArrowDown").focus).toBe("/p/src/a");
    expect(keyMove(list, "/p/z", "ArrowDown").focus).toBe("/p/z");
    expect(keyMove(list, "/p/src/a", "ArrowUp").focus).toBe("/p/src");
    expect(keyMove(list, "/p/src/b", "ArrowLeft")).toEqual({ focus: "/p/src", toggle: null });
    expect(keyMove(list, "/p/src", "ArrowLeft")).toEqual({ focus: "/p/src", toggle: "/p/src" });
    expect(keyMove(list, "/p/src", "ArrowRight")).toEqual({ focus: "/p/src/a", toggle: null });
    expect(keyMove(list, null, "End").focus).toBe("/p/z");
    const closed = rows(toggle(s, "/p/src").state);
    expect(keyMove(closed, "/p/src", "ArrowRight")).toEqual({ focus: "/p/src", toggle: "/p/src" });
  });
});
