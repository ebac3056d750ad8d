import { describe, expect, it } from "vitest";
import { escapeTSV, toJSON, toTSV, TSVDecoder, unescapeTSV, type Result } from "../panes/sql/result";

const nasty = ["plain", "tab\there", "line\nbreak", "cr\rhere", "back\\slash", "\\t literal", "", "ünï 😀", "\\!error\tlooks like a trailer"];

describe("TSV", () => {
  it("escapes the four characters the server escapes, and nothing else", () => {
    expect(escapeTSV("a\tb\nc\rd\\e")).toBe("a\\tb\\nc\\rd\\\\e");
    expect(escapeTSV('quote " and , comma')).toBe('quote " and , comma');
    expect(escapeTSV("\\t")).toBe("\\\\t");
  });

  it("round-trips any value", () => {
    for (const v of nasty) expect(unescapeTSV(escapeTSV(v))).toBe(v);
  });

  it("writes a header, one line per row, each ending in \\n", () => {
    const r: Result = { columns: ["a", "b\tc"], rows: [["1", "x"], ["2", "y\nz"]] };
    expect(toTSV(r)).toBe("a\tb\\tc\n1\tx\n2\ty\\nz\n");
    expect(toTSV({ columns: ["g"], rows: [] })).toBe("g\n");
  });

  it("ends a result cut short with the server's trailer", () => {
    const r: Result = { columns: ["g"], rows: [["1"]], error: { code: "INTERRUPT", message: "past\tits deadline" } };
    expect(toTSV(r)).toBe("g\n1\n\\!error\tINTERRUPT\tpast\\tits deadline\n");
  });

  it("decodes what it writes, chunked anywhere, values with tabs and newlines included", () => {
    const r: Result = { columns: ["k", "v"], rows: nasty.map((v, i) => [String(i), v]) };
    const text = toTSV(r);
    for (const size of [1, 2, 3, 7, 64, text.length]) {
      const d = new TSVDecoder();
      const rows: string[][] = [];
      for (let i = 0; i < text.length; i += size) rows.push(...d.push(text.slice(i, i + size)));
      rows.push(...d.end());
      expect(d.columns).toEqual(r.columns);
      expect(rows).toEqual(r.rows);
      expect(d.error).toBeNull();
    }
  });

  it("reads the trailer of a cut result as its error, not as a row", () => {
    const d = new TSVDecoder();
    const rows = d.push("g\n1\n2\n\\!error\tpayload_too_large\tcut after 2 rows\n");
    d.end();
    expect(rows).toEqual([["1"], ["2"]]);
    expect(d.error).toEqual({ code: "payload_too_large", message: "cut after 2 rows" });
  });

  it("says when the answer stops in the middle of a line", () => {
    const d = new TSVDecoder();
    const rows = [...d.push("g\n1\n2"), ...d.end()];
    expect(rows).toEqual([["1"], ["2"]]);
    expect(d.error?.code).toBe("truncated");
  });

  it("keeps empty values (NULL) and rows of a result without columns", () => {
    const d = new TSVDecoder();
    expect(d.push("a\tb\n\t\nx\t\n")).toEqual([["", ""], ["x", ""]]);
    const z = new TSVDecoder();
    expect(z.push("\n\n\n")).toEqual([[], []]);
    expect(z.columns).toEqual([]);
  });
});

describe("JSON", () => {
  it("writes the server's shape: columns, rows, count", () => {
    const r: Result = { columns: ["a", "a"], rows: [["1", "2"], ["", "x\ty"]] };
    expect(JSON.parse(toJSON(r))).toEqual({ columns: ["a", "a"], rows: [["1", "2"], ["", "x\ty"]], count: 2 });
  });

  it("adds error and message for a result cut short", () => {
    const r: Result = { columns: ["g"], rows: [["1"]], error: { code: "INTERRUPT", message: "m" } };
    expect(JSON.parse(toJSON(r))).toEqual({ columns: ["g"], rows: [["1"]], count: 1, error: "INTERRUPT", message: "m" });
  });

  it("keeps every character of a value", () => {
    const r: Result = { columns: ["v"], rows: nasty.map((v) => [v]) };
    expect(JSON.parse(toJSON(r)).rows.map((x: string[]) => x[0])).toEqual(nasty);
  });
});
