// A chart of any two columns of the result: x and y picked in two selects;
// numbers and times on x are drawn as a line (points when few), categories as
// bars in row order.

import { useMemo, useState } from "preact/hooks";
import { PALETTE, themedAxes, UChart } from "../../lib/uchart";
import { series } from "./plot";

export function ColumnChart({ columns, rows, count }: { columns: string[]; rows: string[][]; count: number }) {
  const [x, setX] = useState(0);
  const [y, setY] = useState(columns.length > 1 ? 1 : 0);
  const xi = Math.min(x, columns.length - 1);
  const yi = Math.min(y, columns.length - 1);
  const s = useMemo(() => series(rows, xi, yi), [rows, count, xi, yi]);
  const data = useMemo(() => [s.xs, s.ys] as [number[], (number | null)[]], [s]);
  if (columns.length === 0) return <p class="muted pad">No columns to chart.</p>;
  const few = s.xs.length <= 2000;
  return (
    <div class="sqlchart">
      <div class="sqlchart-pick">
        <label>
          x <select aria-label="x column" value={xi} onChange={(e) => setX(Number((e.target as HTMLSelectElement).value))}>
            {columns.map((c, j) => (
              <option value={j} key={j}>
                {c}
              </option>
            ))}
          </select>
        </label>
        <label>
          y <select aria-label="y column" value={yi} onChange={(e) => setY(Number((e.target as HTMLSelectElement).value))}>
            {columns.map((c, j) => (
              <option value={j} key={j}>
                {c}
              </option>
            ))}
          </select>
        </label>
        <span class="muted">
          {s.kind === "category" ? "x as categories" : s.kind === "time" ? "x as time" : "x as numbers"}
          {s.skipped > 0 && ` · ${s.skipped} row(s) without an x left out`}
          {s.noY > 0 && ` · ${s.noY} row(s) whose y is not a number`}
        </span>
      </div>
      {s.noY === s.ys.length && s.ys.length > 0 ? (
        <p class="warn pad">The y column “{columns[yi]}” has no numbers: pick another.</p>
      ) : (
        <UChart
          label={`Chart of ${columns[yi]} by ${columns[xi]}`}
          height={300}
          data={data}
          deps={[xi, yi, s.kind, few, columns.join("\t")]}
          options={(c, uPlot) => ({
            // One point: a range around it (uPlot would stretch a single time over years).
            scales: { x: { time: s.kind === "time", ...(s.xs.length === 1 ? { range: [s.xs[0] - (s.kind === "time" ? 86_400 : 1), s.xs[0] + (s.kind === "time" ? 86_400 : 1)] as [number, number] } : {}) } },
            legend: { show: true },
            cursor: { points: { show: true } },
            axes: themedAxes(
              c,
              s.kind === "category" ? { values: (_u: unknown, ticks: number[]) => ticks.map((t) => (Number.isInteger(t) ? (s.labels[t] ?? "") : "")) } : {},
              {},
            ),
            series: [
              { label: columns[xi], value: s.kind === "category" ? (_u: unknown, v: number) => s.labels[v] ?? "" : undefined },
              s.kind === "category"
                ? { label: columns[yi], stroke: PALETTE[0], fill: PALETTE[0] + "99", paths: uPlot.paths.bars!({ size: [0.7, 60] }), points: { show: false } }
                : { label: columns[yi], stroke: PALETTE[0], width: 1.5, points: { show: few, size: 4 }, spanGaps: false },
            ],
          })}
        />
      )}
    </div>
  );
}
