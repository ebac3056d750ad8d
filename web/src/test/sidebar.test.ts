import { describe, expect, it } from "vitest";
import type { SessionSummary } from "../protocol/types";
import { fileSession, groupByProject, sidebarSessions } from "../state/sidebar";

const sess = (id: string, at: string, more: Partial<SessionSummary> = {}): SessionSummary => ({
  session_id: id,
  title: id,
  cwd: "/p",
  provider: "agent-sdk",
  updated_at: `2026-11-26T10:${at}:00Z`,
  archived: false,
  ...more,
});
const ids = (l: SessionSummary[]) => l.map((s) => s.session_id);

describe("sidebarSessions", () => {
  const live = [sess("A", "05"), sess("B", "01")];
  const archived = [sess("X", "03", { archived: true }), sess("Y", "00", { archived: true })];

  it("hides archived sessions by default", () => {
    expect(ids(sidebarSessions(live, archived, false))).toEqual(["A", "B"]);
  });
  it("drops an archived entry that reached the live list", () => {
    expect(ids(sidebarSessions([...live, sess("Z", "09", { archived: true })], [], false))).toEqual(["A", "B"]);
  });
  it("shows them, marked and in time order, when asked", () => {
    const got = sidebarSessions(live, archived, true);
    expect(ids(got)).toEqual(["A", "X", "B", "Y"]);
    expect(got.map((s) => !!s.archived)).toEqual([false, true, false, true]);
  });
  it("lists a session in both lists once, as the live list has it", () => {
    const got = sidebarSessions(live, [sess("A", "05", { archived: true })], true);
    expect(ids(got)).toEqual(["A", "B"]);
    expect(got[0].archived).toBe(false);
  });
  it("does not change its inputs", () => {
    const l = [sess("B", "01"), sess("A", "05")];
    sidebarSessions(l, archived, true);
    expect(ids(l)).toEqual(["B", "A"]);
  });
});

describe("groupByProject", () => {
  it("groups by cwd with favourites first", () => {
    const g = groupByProject([sess("A", "05"), sess("B", "04", { cwd: "/q" }), sess("C", "03", { is_favorite: true }), sess("D", "02")], new Set(["D"]));
    expect([...g.keys()]).toEqual(["/p", "/q"]);
    expect(ids(g.get("/p")!)).toEqual(["C", "D", "A"]);
  });
});

describe("fileSession", () => {
  it("moves an archived session out of the live list, keeping its live counts", () => {
    const got = fileSession([sess("A", "05", { pending_permissions: 1, agent_running: true }), sess("B", "01")], [], sess("A", "06", { archived: true }));
    expect(ids(got.live)).toEqual(["B"]);
    expect(got.archived).toHaveLength(1);
    expect(got.archived[0]).toMatchObject({ session_id: "A", archived: true, pending_permissions: 1, agent_running: true });
  });
  it("moves an unarchived session back", () => {
    const got = fileSession([sess("B", "01")], [sess("A", "05", { archived: true, title: "old" })], sess("A", "07", { archived: false }));
    expect(ids(got.live)).toEqual(["A", "B"]);
    expect(got.live[0].title).toBe("A");
    expect(got.archived).toEqual([]);
  });
  it("updates a session in place", () => {
    const got = fileSession([sess("A", "05"), sess("B", "01")], [], sess("B", "02", { title: "renamed" }));
    expect(got.live.map((s) => s.title)).toEqual(["A", "renamed"]);
  });
});
