import { describe, expect, it } from "vitest";
import { conflicted, dirty, edit, openDoc, resolve, saved, saveRequest, versionInMessage } from "../panes/files/doc";

const V1 = "sha256:" + "1".repeat(64);
const V2 = "sha256:" + "2".repeat(64);
const V3 = "sha256:" + "3".repeat(64);

describe("editing a file against its version", () => {
  it("saves against the version it read, and is clean afterwards", () => {
    let d = openDoc("/p/a.txt", "one\n", V1);
    expect(dirty(d)).toBe(false);
    d = edit(d, "one\ntwo\n");
    expect(dirty(d)).toBe(true);
    expect(saveRequest(d)).toEqual({ path: "/p/a.txt", content: "one\ntwo\n", expected_version: V1 });
    d = saved(d, "one\ntwo\n", V2);
    expect(dirty(d)).toBe(false);
    expect(saveRequest(d).expected_version).toBe(V2);
  });

  it("keeps what was typed during a save dirty", () => {
    let d = edit(openDoc("/p/a", "a", V1), "ab");
    d = edit(d, "abc"); // typed while "ab" was being written
    d = saved(d, "ab", V2);
    expect(dirty(d)).toBe(true);
    expect(d.text).toBe("abc");
  });

  const conflict = () => conflicted(edit(openDoc("/p/a", "base", V1), "mine"), "mine", { content: "theirs", version: V2 });

  it("keep mine writes mine against their version (never blindly)", () => {
    const r = resolve(conflict(), "mine");
    expect(r.write).toEqual({ path: "/p/a", content: "mine", expected_version: V2 });
    expect(r.doc.conflict).toBeNull();
    expect(r.doc.text).toBe("mine");
  });

  it("take theirs writes nothing and makes theirs the clean buffer", () => {
    const r = resolve(conflict(), "theirs");
    expect(r.write).toBeNull();
    expect(r.doc.text).toBe("theirs");
    expect(r.doc.version).toBe(V2);
    expect(dirty(r.doc)).toBe(false);
  });

  it("merge by hand writes the merged text against their version", () => {
    const r = resolve(conflict(), "manual", "mine+theirs");
    expect(r.write).toEqual({ path: "/p/a", content: "mine+theirs", expected_version: V2 });
    const done = saved({ ...r.doc, conflict: null }, "mine+theirs", V3);
    expect(dirty(done)).toBe(false);
    expect(done.version).toBe(V3);
  });

  it("a deleted file: keep mine creates it only if still absent, take theirs is impossible", () => {
    const d = conflicted(edit(openDoc("/p/a", "base", V1), "mine"), "mine", null);
    expect(resolve(d, "mine").write).toEqual({ path: "/p/a", content: "mine", expected_version: "" });
    expect(() => resolve(d, "theirs")).toThrow();
  });

  it("refuses to resolve without a conflict", () => {
    expect(() => resolve(openDoc("/p/a", "", V1), "mine")).toThrow();
  });

  it("reads the version a 409 names", () => {
    expect(versionInMessage(`/p/a changed since it was read: its version is now ${V2}`)).toBe(V2);
    expect(versionInMessage("no version")).toBeNull();
  });
});
