// The result grid: an ARIA table "Query result" that renders only the rows in
// view (window.ts), so 100 000 rows cost what 40 do. aria-rowcount is the
// whole result (plus the header row) and each rendered row carries its
// aria-rowindex, so assistive technology knows where it is. Column widths are
// measured once from the header and the first rows.

import { useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import { gridWindow } from "./window";

export const ROW_HEIGHT = 26;
const CHAR_PX = 7.4;
const MIN_COL = 56;
const MAX_COL = 360;
const GUTTER = 56;

/**
 * Column widths from the header and a sample of the rows (characters × a
 * monospace advance): the first rows, the last ones, and evenly spread ones
 * between, at most `sample` in all.
 */
export function columnWidths(columns: string[], rows: string[][], count = rows.length, sample = 600): number[] {
  const pick: number[] = [];
  const edge = Math.min(count, sample / 3);
  for (let i = 0; i < edge; i++) pick.push(i, count - 1 - i);
  const step = Math.max(1, Math.floor(count / (sample / 3)));
  for (let i = 0; i < count; i += step) pick.push(i);
  return columns.map((c, j) => {
    let n = c.length + 1;
    for (const i of pick) n = Math.max(n, (rows[i]?.[j] ?? "").length);
    return Math.round(Math.min(MAX_COL, Math.max(MIN_COL, n * CHAR_PX + 18)));
  });
}

export function Grid({ columns, rows, count }: { columns: string[]; rows: string[][]; count: number }) {
  const scroller = useRef<HTMLDivElement>(null);
  const [view, setView] = useState({ top: 0, height: 400 });
  // Measured again each time a streamed result doubles (so about 17 times for 100 000 rows).
  const widths = useMemo(() => columnWidths(columns, rows, count), [columns, Math.floor(Math.log2(count + 1))]);
  // One custom property for every row's columns: a row sets no style of its own.
  const template = `${GUTTER}px ${widths.map((w) => `${w}px`).join(" ")}`;
  const rowWidth = GUTTER + widths.reduce((a, b) => a + b, 0);

  useLayoutEffect(() => {
    const el = scroller.current;
    if (!el) return;
    let frame = 0;
    const measure = () => {
      frame = 0;
      setView({ top: el.scrollTop, height: el.clientHeight - ROW_HEIGHT });
    };
    const onScroll = () => {
      if (!frame) frame = requestAnimationFrame(measure);
    };
    measure();
    el.addEventListener("scroll", onScroll, { passive: true });
    const ro = new ResizeObserver(onScroll);
    ro.observe(el);
    return () => {
      el.removeEventListener("scroll", onScroll);
      ro.disconnect();
      if (frame) cancelAnimationFrame(frame);
    };
  }, []);
  // A new result starts at the top.
  useEffect(() => {
    if (scroller.current) scroller.current.scrollTop = 0;
  }, [columns]);

  const w = gridWindow({ scrollTop: view.top, viewport: view.height, rowHeight: ROW_HEIGHT, total: count });
  // Keys recycle: a row leaving the window hands its element to the one
  // entering it (only texts change), so a scroll creates no elements.
  const pool = Math.max(1, w.end - w.start);
  const out = [];
  for (let i = w.start; i < w.end; i++) {
    const r = rows[i];
    out.push(
      <div role="row" aria-rowindex={i + 2} class={i % 2 ? "sqlgrid-row alt" : "sqlgrid-row"} key={i % pool}>
        <span class="sqlgrid-n" aria-hidden="true">
          {i + 1}
        </span>
        {columns.map((_, j) => {
          const v = r[j] ?? "";
          return (
            <span role="cell" class="sqlgrid-cell" key={j} title={v.length > 40 ? v.slice(0, 2000) : undefined}>
              {v}
            </span>
          );
        })}
      </div>,
    );
  }
  return (
    <div class="sqlgrid" role="table" aria-label="Query result" aria-rowcount={count + 1} aria-colcount={columns.length} style={{ "--sqlgrid-cols": template }}>
      <div class="sqlgrid-scroll" ref={scroller} tabIndex={0}>
        <div role="rowgroup" class="sqlgrid-head" style={{ width: rowWidth }}>
          <div role="row" aria-rowindex={1} class="sqlgrid-row">
            <span class="sqlgrid-n" aria-hidden="true">
              #
            </span>
            {columns.map((c, j) => (
              <span role="columnheader" class="sqlgrid-cell" key={j} title={c}>
                {c}
              </span>
            ))}
          </div>
        </div>
        <div role="rowgroup" class="sqlgrid-body" style={{ height: w.height, width: rowWidth }}>
          <div class="sqlgrid-rows" style={{ transform: `translateY(${w.offset}px)` }}>
            {out}
          </div>
        </div>
      </div>
    </div>
  );
}
