import { createTwoFilesPatch } from "diff";
import { describe, expect, it } from "vitest";
import { ApiError } from "../lib/api";
import { chipText, promptLine, type TurnChanges } from "../lib/journal";
import { parsePatch } from "../lib/patch";
import { opFailure, restoreCandidates, reverseDiff, reverseFileDiff, turnByNumber, undoPreview, undoPreviewNow, undoTarget, versionDiff, type UndoFileState } from "../panes/changes/model";

const modified = `diff --git a/a.txt b/a.txt
index 1111111..2222222 100644
--- a/a.txt
+++ b/a.txt
@@ -1,3 +1,4 @@
 one
-two
+deux
+zwei
 three
`;

const created = `diff --git a/c.txt b/c.txt
new file mode 100644
index 0000000..3333333
--- /dev/null
+++ b/c.txt
@@ -0,0 +1,2 @@
+hello
+world
\\ No newline at end of file
`;

function turn(commit: string, n: number, over: Partial<TurnChanges> = {}): TurnChanges {
  return { commit, parents: ["p" + commit], time: `2026-11-27T03:0${n}:00Z`, subject: `turn ${n}: x`, kind: "turn", session_id: "S", turn_number: n, turn_id: `S:${n * 10}`, diffs: [], ...over };
}

describe("undoTarget", () => {
  it("is the newest turn no undo names, whatever turn is asked about", () => {
    const t1 = turn("c1", 1);
    const t2 = turn("c2", 2);
    const t3 = turn("c3", 3);
    expect(undoTarget([t1, t2, t3])?.commit).toBe("c3");
    const u3 = { ...turn("u3", 3), kind: "undo", undoes: "c3" } as TurnChanges;
    expect(undoTarget([t1, t2, t3, u3])?.commit).toBe("c2");
    const u2 = { ...turn("u2", 2), kind: "undo", undoes: "c2" } as TurnChanges;
    // A restore is not an undo: turn 1 is next.
    const r = { ...turn("r1", 4), kind: "restore" } as TurnChanges;
    expect(undoTarget([t1, t2, t3, u3, u2, r])?.commit).toBe("c1");
    const u1 = { ...turn("u1", 1), kind: "undo", undoes: "c1" } as TurnChanges;
    expect(undoTarget([t1, t2, t3, u3, u2, r, u1])).toBeNull();
    expect(undoTarget([])).toBeNull();
  });
});

describe("reverseDiff", () => {
  it("swaps the sides of a modification, removed lines first", () => {
    const r = parsePatch(reverseDiff(modified)).files[0];
    expect(r.path).toBe("a.txt");
    expect(r.additions).toBe(1);
    expect(r.deletions).toBe(2);
    expect(r.hunks[0].header).toBe("@@ -1,4 +1,3 @@");
    expect(r.hunks[0].lines.map((l) => `${l.kind}:${l.text}`)).toEqual(["ctx:one", "del:deux", "del:zwei", "add:two", "ctx:three"]);
    // old line numbers are the new file's of the turn
    expect(r.hunks[0].lines[3]).toMatchObject({ kind: "add", new: 2 });
  });

  it("turns a creation into a deletion", () => {
    const text = reverseDiff(created);
    expect(text).toContain("deleted file mode 100644");
    expect(text).toContain("index 3333333..0000000");
    expect(text).toContain("--- a/c.txt\n+++ /dev/null");
    expect(text).toContain("@@ -1,2 +0,0 @@");
    const r = parsePatch(text).files[0];
    expect(r.path).toBe("c.txt");
    expect(r.deletions).toBe(2);
    expect(r.additions).toBe(0);
    // the no-newline marker stays after the line it belongs to
    expect(text.trimEnd().split("\n").slice(-2)).toEqual(["-world", "\\ No newline at end of file"]);
  });

  it("is its own inverse on the lines", () => {
    const twice = parsePatch(reverseDiff(reverseDiff(modified))).files[0];
    const once = parsePatch(modified).files[0];
    expect(twice.hunks[0].header).toBe(once.hunks[0].header);
    expect(twice.additions).toBe(once.additions);
    expect(twice.deletions).toBe(once.deletions);
  });
});

describe("undoPreview", () => {
  it("lists every file of the turn with its status and counts turned around", () => {
    const t = turn("c1", 1, {
      diffs: [
        { path: "a.txt", status: "M", additions: 2, deletions: 1, diff: modified },
        { path: "c.txt", status: "A", additions: 2, deletions: 0, diff: created },
        { path: "gone.txt", status: "D", additions: 0, deletions: 4, diff: "" },
      ],
    });
    const p = undoPreview(t);
    expect(p.map((d) => `${d.status} ${d.path} +${d.additions} -${d.deletions}`)).toEqual(["M a.txt +1 -2", "D c.txt +0 -2", "A gone.txt +4 -0"]);
    expect(reverseFileDiff(p[1]).status).toBe("A");
  });
});

describe("undoPreviewNow", () => {
  const make = (p: string, a: string, b: string) => createTwoFilesPatch("a/" + p, "b/" + p, a, b, "", "", { context: 3 });
  const text = (t: string) => ({ kind: "text" as const, text: t });
  it("keeps the turned diff for files as the turn left them, and diffs the others from now, naming them", () => {
    const t = turn("c1", 1, {
      diffs: [
        { path: "a.txt", status: "M", additions: 2, deletions: 1, diff: modified },
        { path: "c.txt", status: "A", additions: 2, deletions: 0, diff: created },
      ],
    });
    const states = new Map<string, UndoFileState>([
      ["a.txt", { now: text("one\ndeux\nzwei\nthree\n"), after: text("one\ndeux\nzwei\nthree\n") }],
      ["c.txt", { now: text("by hand\n"), after: text("hello\nworld"), before: { kind: "absent" } }],
    ]);
    const { files, changedSince } = undoPreviewNow(t, states, make);
    expect(changedSince).toEqual(["c.txt"]);
    expect(files[0]).toMatchObject({ path: "a.txt", status: "M", additions: 1, deletions: 2 });
    expect(files[0].diff).toBe(reverseDiff(modified));
    // c.txt: what is there now ("by hand") is removed, not the turn's text.
    expect(files[1]).toMatchObject({ path: "c.txt", status: "D", additions: 0, deletions: 1 });
    expect(parsePatch(files[1].diff).files[0].hunks[0].lines.map((l) => l.kind + ":" + l.text)).toEqual(["del:by hand"]);
  });
  it("a file already back as before the turn is named, with nothing to write", () => {
    const t = turn("c1", 1, { diffs: [{ path: "a.txt", status: "M", additions: 1, deletions: 1, diff: modified }] });
    const states = new Map<string, UndoFileState>([["a.txt", { now: text("old\n"), after: text("new\n"), before: text("old\n") }]]);
    expect(undoPreviewNow(t, states, make)).toEqual({ files: [], changedSince: ["a.txt"] });
  });
});

describe("restore preview", () => {
  it("takes the paths of every commit at or after the turn, and the turn's own", () => {
    const t = turn("c2", 2, { diffs: [{ path: "t.txt", status: "M", additions: 1, deletions: 1, diff: "" }] });
    const log = [
      { commit: "old", parents: [], time: "2026-11-27T03:01:00Z", subject: "", files: [{ status: "M", path: "before.txt" }] },
      { commit: "c2", parents: ["x"], time: t.time, subject: "", files: [{ status: "M", path: "t.txt" }] },
      { commit: "later", parents: ["c2"], time: "2026-11-27T03:05:00Z", subject: "", files: [{ status: "A", path: "z.txt" }, { status: "M", path: "a.txt" }] },
    ];
    expect(restoreCandidates(t, log)).toEqual(["a.txt", "t.txt", "z.txt"]);
  });

  it("diffs now against the version the restore writes", () => {
    const make = (p: string, a: string, b: string) => createTwoFilesPatch("a/" + p, "b/" + p, a, b, "", "", { context: 3 });
    expect(versionDiff("x", { kind: "text", text: "same\n" }, { kind: "text", text: "same\n" }, make)).toBeNull();
    expect(versionDiff("x", { kind: "absent" }, { kind: "absent" }, make)).toBeNull();
    const m = versionDiff("x", { kind: "text", text: "now\n" }, { kind: "text", text: "then\n" }, make)!;
    expect(m).toMatchObject({ status: "M", additions: 1, deletions: 1 });
    expect(parsePatch(m.diff).files[0].hunks[0].lines.map((l) => l.kind + ":" + l.text)).toEqual(["del:now", "add:then"]);
    expect(versionDiff("x", { kind: "text", text: "new\n" }, { kind: "absent" }, make)).toMatchObject({ status: "D", deletions: 1, additions: 0 });
    expect(versionDiff("x", { kind: "absent" }, { kind: "text", text: "back\n" }, make)).toMatchObject({ status: "A", additions: 1 });
    expect(versionDiff("x", { kind: "opaque", why: "binary" }, { kind: "text", text: "t" }, make)).toMatchObject({ status: "M", binary: true });
  });
});

describe("opFailure", () => {
  it("reads a 409 with its list as conflicts, anything else as a refusal", () => {
    const body = { error: "conflict", message: "files changed", conflicts: [{ path: "a.txt", reason: "modified" }] };
    expect(opFailure(new ApiError(409, "conflict", "files changed", body))).toEqual({ kind: "conflicts", conflicts: body.conflicts, message: "files changed" });
    expect(opFailure(new ApiError(409, "conflict", "turn 1 is the journal's first commit", { error: "conflict" }))).toEqual({ kind: "refused", message: "turn 1 is the journal's first commit" });
    expect(opFailure(new ApiError(404, "not_found", "no turn left"))).toEqual({ kind: "refused", message: "no turn left" });
  });
});

describe("chips", () => {
  it("sums a turn's diffs", () => {
    const d = (a: number, r: number) => ({ path: "p", status: "M", additions: a, deletions: r, diff: "" });
    expect(chipText([d(10, 1), d(2, 2), d(0, 0), d(0, 0)])).toBe("+12 −3 in 4 files");
    expect(chipText([d(1, 0)])).toBe("+1 −0 in 1 file");
  });
  it("reads the prompt line from turn_id, and finds a turn by number", () => {
    expect(promptLine(turn("c", 1, { turn_id: "ABC:41" }))).toBe(41);
    expect(promptLine(turn("c", 1, { turn_id: undefined }))).toBe(0);
    const ts = [turn("c1", 1), turn("c2", 2)];
    expect(turnByNumber(ts, 2)?.commit).toBe("c2");
    expect(turnByNumber(ts, 3)).toBeNull();
  });
});
