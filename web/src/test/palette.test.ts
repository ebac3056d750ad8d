import { describe, expect, it } from "vitest";
import { filterEntries, fuzzyScore } from "../ui/paletteFilter";

const entries = [
  { id: "p:chat", label: "Chat" },
  { id: "p:terminal", label: "Terminal" },
  { id: "p:files", label: "Files" },
  { id: "p:changes", label: "Changes" },
  { id: "p:git", label: "Git" },
  { id: "p:costs", label: "Costs" },
  { id: "p:sql", label: "SQL" },
  { id: "p:settings", label: "Settings" },
  { id: "s:1", label: "Parser rewrite" },
  { id: "s:2", label: "Fix the terminal resize" },
  { id: "a:new", label: "New session" },
  { id: "a:dark", label: "Theme: dark", keywords: "night colours" },
  { id: "a:stop", label: "Stop the agent", keywords: "interrupt cancel" },
];
const ids = (q: string) => filterEntries(entries, q).map((e) => e.id);

describe("palette filter", () => {
  it("keeps every entry, in order, for an empty query", () => {
    expect(ids("")).toEqual(entries.map((e) => e.id));
    expect(ids("   ")).toEqual(entries.map((e) => e.id));
  });

  it("puts the exact name first, then prefixes, then other matches", () => {
    expect(ids("Terminal")).toEqual(["p:terminal", "s:2"]);
    expect(ids("term")[0]).toBe("p:terminal");
    expect(ids("sql")).toEqual(["p:sql"]);
  });

  it("ignores case and accents", () => {
    expect(ids("TERMINAL")[0]).toBe("p:terminal");
    expect(ids("sêttings")[0]).toBe("p:settings");
  });

  it("matches characters in order, not necessarily adjacent", () => {
    expect(ids("prw")).toEqual(["s:1"]);
    expect(ids("nwss")).toContain("a:new");
    expect(ids("trmnl")[0]).toBe("p:terminal");
  });

  it("ranks word starts above scattered letters", () => {
    expect(ids("ch").slice(0, 2)).toEqual(["p:chat", "p:changes"]);
    expect(fuzzyScore("nt", "New terminal")).toBeGreaterThan(fuzzyScore("nt", "Unbuilt"));
  });

  it("finds entries by their keywords, below label matches", () => {
    expect(ids("interrupt")).toEqual(["a:stop"]);
    expect(ids("night")).toEqual(["a:dark"]);
  });

  it("refuses a query whose letters are not all there in order", () => {
    expect(ids("zzz")).toEqual([]);
    expect(ids("lanimret")).toEqual([]);
    expect(fuzzyScore("xq", "Chat")).toBe(-1);
  });

  it("caps the list", () => {
    const many = Array.from({ length: 300 }, (_, i) => ({ id: String(i), label: `Session ${i}` }));
    expect(filterEntries(many, "session", 50)).toHaveLength(50);
    expect(filterEntries(many, "", 20)).toHaveLength(20);
  });
});
