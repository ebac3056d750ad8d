import { describe, expect, it } from "vitest";
import { fieldOf, knownProjects } from "../panes/settings/common";
import { changes } from "../panes/settings/Helpers";

describe("settings: the field a server message names", () => {
  const fields = ["model", "permission_mode", "approval_policy", "sandbox"];
  it("takes the message's first word when it is a field", () => {
    expect(fieldOf('permission_mode "yolo": use one of [default acceptEdits bypassPermissions plan]', fields)).toBe("permission_mode");
    expect(fieldOf("shadow_db.sql_timeout_s: want an integer from 1 to 3600, not 0", ["extra_dirs", "shadow_db.sql_timeout_s"])).toBe("shadow_db.sql_timeout_s");
  });
  it("finds a field named later in the message, else none (the form's)", () => {
    expect(fieldOf("approval_policy and sandbox apply to app-server only", fields)).toBe("approval_policy");
    expect(fieldOf("send at least one of", ["x"])).toBe("");
  });
});

describe("settings: what a helpers install changed", () => {
  const f = (name: string, installed: boolean, up: boolean, h: string | null) => ({ name, target: "/t/" + name, installed, up_to_date: up, hash: "new", installed_hash: h });
  it("says installed, replaced or unchanged per file", () => {
    const before = [f("a", false, false, null), f("b", true, false, "old"), f("c", true, true, "new")];
    const after = [f("a", true, true, "new"), f("b", true, true, "new"), f("c", true, true, "new")];
    expect(changes(before, after)).toEqual(["a: installed at /t/a", "b: replaced (a local edit or an older version was overwritten)", "c: unchanged"]);
  });
});

describe("settings: known projects", () => {
  it("lists each working directory once, sorted", () => {
    expect(knownProjects([{ cwd: "/b" }, { cwd: "/a" }, { cwd: "/b" }, { cwd: null }, {}])).toEqual(["/a", "/b"]);
  });
});
