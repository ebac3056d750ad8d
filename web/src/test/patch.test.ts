import { describe, expect, it } from "vitest";
import { parsePatch } from "../lib/patch";

const two = `diff --git a/a.txt b/a.txt
index 1111111..2222222 100644
--- a/a.txt
+++ b/a.txt
@@ -1,3 +1,3 @@
 one
-two
+deux
 three
\\ No newline at end of file
diff --git a/new.go b/new.go
new file mode 100644
--- /dev/null
+++ b/new.go
@@ -0,0 +1,2 @@
+package x
+
diff --git a/img.png b/img.png
Binary files a/img.png and b/img.png differ
`;

describe("parsePatch", () => {
  it("splits files, numbers lines and counts", () => {
    const p = parsePatch(" a.txt | 2 +-\n 1 file changed\n\n" + two);
    expect(p.preamble).toContain("1 file changed");
    expect(p.files.map((f) => f.path)).toEqual(["a.txt", "new.go", "img.png"]);
    const a = p.files[0];
    expect([a.additions, a.deletions]).toEqual([1, 1]);
    expect(a.hunks[0].lines.map((l) => [l.kind, l.old, l.new])).toEqual([
      ["ctx", 1, 1],
      ["del", 2, undefined],
      ["add", undefined, 2],
      ["ctx", 3, 3],
      ["meta", undefined, undefined],
    ]);
    expect(p.files[1].additions).toBe(2);
    expect(p.files[1].hunks[0].lines[0].new).toBe(1);
    expect(p.files[2].binary).toBe(true);
  });
  it("takes a bare unified diff and a rename", () => {
    const bare = parsePatch("--- a/x\n+++ b/x\n@@ -5 +5 @@\n-a\n+b\n");
    expect(bare.files[0].path).toBe("x");
    expect(bare.files[0].hunks[0].lines[0].old).toBe(5);
    const ren = parsePatch("diff --git a/old name.txt b/new name.txt\nsimilarity index 100%\nrename from old name.txt\nrename to new name.txt\n");
    expect(ren.files[0].path).toBe("new name.txt");
    expect(ren.files[0].oldPath).toBe("old name.txt");
  });
});
