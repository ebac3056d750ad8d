import { render } from "@testing-library/preact";
import { describe, expect, it } from "vitest";
import { columnWidths, Grid, ROW_HEIGHT } from "../panes/sql/Grid";
import { gridWindow, MAX_SPACER_PX, spacerHeight } from "../panes/sql/window";
import { columnKind, series } from "../panes/sql/plot";

describe("gridWindow", () => {
  const base = { viewport: 260, rowHeight: 26, overscan: 5 };

  it("renders the visible rows and the overscan at the top", () => {
    const w = gridWindow({ ...base, scrollTop: 0, total: 100_000 });
    expect(w.start).toBe(0);
    expect(w.end).toBe(0 + 11 + 5); // 10 visible + a partial one, then 5 below
    expect(w.offset).toBe(0);
    expect(w.height).toBe(2_600_000);
  });

  it("follows the scroll position, with overscan on both sides", () => {
    const w = gridWindow({ ...base, scrollTop: 26 * 5000 + 13, total: 100_000 });
    expect(w.start).toBe(4995);
    expect(w.end).toBe(5000 + 11 + 5);
    expect(w.offset).toBe(4995 * 26);
  });

  it("ends at the last row and clamps a scroll past the end", () => {
    const w = gridWindow({ ...base, scrollTop: 10_000_000, total: 100_000 });
    expect(w.end).toBe(100_000);
    expect(w.start).toBeLessThan(100_000 - 10);
    // The last row's bottom is the spacer's bottom.
    expect(w.offset + (w.end - w.start) * 26).toBe(w.height);
  });

  it("keeps the rendered rows bounded whatever the total", () => {
    for (const total of [1, 10, 1000, 100_000, 5_000_000]) {
      const w = gridWindow({ ...base, scrollTop: 123_456, total });
      expect(w.end - w.start).toBeLessThanOrEqual(21);
      expect(w.start).toBeGreaterThanOrEqual(0);
      expect(w.end).toBeLessThanOrEqual(total);
    }
  });

  it("handles an empty result and a zero viewport", () => {
    expect(gridWindow({ ...base, scrollTop: 0, total: 0 })).toEqual({ start: 0, end: 0, offset: 0, height: 0 });
    const w = gridWindow({ ...base, viewport: 0, scrollTop: 0, total: 50 });
    expect(w.end).toBeGreaterThan(0);
  });

  it("scales past the browsers' height cap, every row still reachable", () => {
    const total = 5_000_000;
    expect(spacerHeight(total, 26)).toBe(MAX_SPACER_PX);
    const top = gridWindow({ ...base, scrollTop: 0, total });
    expect(top.start).toBe(0);
    const end = gridWindow({ ...base, scrollTop: MAX_SPACER_PX, total });
    expect(end.end).toBe(total);
    const mid = gridWindow({ ...base, scrollTop: (MAX_SPACER_PX - 260) / 2, total });
    const first = mid.start + 5;
    expect(Math.abs(first - total / 2)).toBeLessThan(10);
    // The first visible row is drawn at the top of the view.
    expect(mid.offset + 5 * 26).toBeCloseTo((MAX_SPACER_PX - 260) / 2);
  });
});

describe("Grid", () => {
  it("puts only the window's rows in the DOM, with aria-rowcount and aria-rowindex", () => {
    const rows = Array.from({ length: 100_000 }, (_, i) => [String(i + 1), "v" + i]);
    const { getByRole } = render(<Grid columns={["n", "v"]} rows={rows} count={rows.length} />);
    const table = getByRole("table", { name: "Query result" });
    expect(table.getAttribute("aria-rowcount")).toBe("100001");
    expect(table.getAttribute("aria-colcount")).toBe("2");
    const rendered = table.querySelectorAll('[role="row"]');
    expect(rendered.length).toBeLessThan(60);
    expect(rendered[0].getAttribute("aria-rowindex")).toBe("1"); // the header
    expect(rendered[1].getAttribute("aria-rowindex")).toBe("2");
    expect(rendered[1].textContent).toContain("v0");
    expect(table.querySelectorAll('[role="columnheader"]').length).toBe(2);
    expect(ROW_HEIGHT).toBeGreaterThan(0);
  });

  it("sizes columns from the header and the first rows, within bounds", () => {
    const w = columnWidths(["id", "a long column name"], [["1", "x".repeat(1000)]]);
    expect(w[0]).toBeGreaterThanOrEqual(56);
    expect(w[1]).toBe(360);
  });
});

describe("chart data", () => {
  it("tells numbers, times and categories apart", () => {
    const rows = [
      ["1", "2026-03-01", "a"],
      ["2.5", "2026-03-02T10:00:00Z", "b"],
      ["", "", ""],
    ];
    expect(columnKind(rows, 0)).toBe("number");
    expect(columnKind(rows, 1)).toBe("time");
    expect(columnKind(rows, 2)).toBe("category");
  });

  it("sorts numeric x and leaves gaps for y that is not a number", () => {
    const s = series([["3", "30"], ["1", "x"], ["2", "20"]], 0, 1);
    expect(s.xs).toEqual([1, 2, 3]);
    expect(s.ys).toEqual([null, 20, 30]);
    expect(s.noY).toBe(1);
  });

  it("keeps categories in row order", () => {
    const s = series([["b", "1"], ["a", "2"]], 0, 1);
    expect(s.kind).toBe("category");
    expect(s.labels).toEqual(["b", "a"]);
    expect(s.xs).toEqual([0, 1]);
  });
});
