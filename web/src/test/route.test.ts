import { describe, expect, it } from "vitest";
import { panePath, parseRoute } from "../state/app";

const id = "K7QZ3XH2M4A5B6C7D2E3F4G5H6";

describe("routes", () => {
  it("maps paths to panes, keeping the query", () => {
    expect(parseRoute(`/s/${id}`)).toEqual({ session: id, view: "session", pane: "chat", search: "" });
    expect(parseRoute(`/s/${id}/files`, "?path=a.go&line=3")).toEqual({ session: id, view: "session", pane: "files", search: "?path=a.go&line=3" });
    expect(parseRoute("/sql")).toMatchObject({ session: null, view: "pane", pane: "sql" });
    expect(parseRoute("/settings/")).toMatchObject({ view: "pane", pane: "settings" });
    expect(parseRoute("/new")).toMatchObject({ view: "new" });
  });
  it("maps the terminal sessions' paths", () => {
    expect(parseRoute("/cli")).toEqual({ session: null, view: "cli", pane: "chat", search: "" });
    expect(parseRoute("/cli/claude/3f2b9c1e-8d7a", "?x=1")).toEqual({ session: null, view: "cli", pane: "chat", search: "?x=1", cli: { provider: "claude", id: "3f2b9c1e-8d7a" } });
    expect(parseRoute("/cli/codex/0199a1b2.c3")).toMatchObject({ view: "cli", cli: { provider: "codex", id: "0199a1b2.c3" } });
    for (const p of ["/cli/gemini/x", "/cli/claude/", "/cli/claude/a/b", "/cli/claude/..", "/clix"]) expect(parseRoute(p)).toMatchObject({ view: "home" });
  });
  it("sends what it does not know home", () => {
    for (const p of [`/s/${id}/settings`, "/s/lower/terminal", "/costs/x", "/nope"]) expect(parseRoute(p)).toMatchObject({ view: "home", session: null });
  });
  it("builds pane paths", () => {
    expect(panePath("terminal", id)).toBe(`/s/${id}/terminal`);
    expect(panePath("chat", id)).toBe(`/s/${id}`);
    expect(panePath("costs", null)).toBe("/costs");
    expect(panePath("files", null)).toBeNull();
  });
});
