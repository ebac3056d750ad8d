// The Costs pane's charts (uPlot, through lib/uchart): cost per day (bars of
// the day's total, a line per model) and horizontal-free bar charts of a
// labelled list (per model, per tool, per session).

import { useMemo } from "preact/hooks";
import { fmtCost } from "../../lib/format";
import { dayAxis, PALETTE, themedAxes, UChart } from "../../lib/uchart";
import type { DaySeries } from "./data";

const money = (_u: unknown, ticks: number[]) => ticks.map((t) => fmtCost(t));

export function DayChart({ s }: { s: DaySeries }) {
  const data = useMemo(() => [s.days, s.total, ...s.byModel] as [number[], ...number[][]], [s]);
  return (
    <UChart
      label={`Cost per day: ${fmtCost(s.total.reduce((a, b) => a + b, 0))} over ${s.days.length} days`}
      height={240}
      data={data}
      deps={[s.models.join("\t"), s.days.length]}
      options={(c, uPlot) => ({
        // Half a day either side, so the first and last days' bars show whole.
        scales: { x: { time: true, range: (_u, min, max) => [min - 43_200, max + 43_200] } },
        axes: themedAxes(c, dayAxis, { values: money }),
        series: [
          { label: "Day", value: (_u: unknown, v: number) => (v ? new Date(v * 1000).toISOString().slice(0, 10) : "") },
          { label: "total", stroke: c.muted, fill: c.muted + "40", paths: uPlot.paths.bars!({ size: [0.8, 40] }), points: { show: false }, value: (_u, v) => fmtCost(v ?? 0) },
          ...s.models.map((m, i) => ({ label: m, stroke: PALETTE[i % PALETTE.length], width: 2, value: (_u: unknown, v: number) => fmtCost(v ?? 0) })),
        ],
      })}
    />
  );
}

/** Bars of values, one per label, in the order given. */
export function BarChart({ labels, values, name, label, format = fmtCost }: { labels: string[]; values: number[]; name: string; label: string; format?: (v: number) => string }) {
  const data = useMemo(() => [labels.map((_, i) => i), values] as [number[], number[]], [labels, values]);
  const short = (s: string) => (s.length > 16 ? s.slice(0, 15) + "…" : s);
  return (
    <UChart
      label={label}
      height={200}
      data={data}
      deps={[labels.join("\t")]}
      options={(c, uPlot) => ({
        scales: { x: { time: false, range: [-0.5, Math.max(0.5, labels.length - 0.5)] } },
        legend: { show: false },
        axes: themedAxes(
          c,
          { values: (_u: unknown, ticks: number[]) => ticks.map((t) => (Number.isInteger(t) ? short(labels[t] ?? "") : "")), rotate: labels.length > 4 ? -30 : 0, size: labels.length > 4 ? 70 : 40 } as any,
          { values: (_u: unknown, ticks: number[]) => ticks.map((t) => format(t)) },
        ),
        series: [{ label: "", value: (_u: unknown, v: number) => labels[v] ?? "" }, { label: name, stroke: c.accent, fill: c.accent + "b0", paths: uPlot.paths.bars!({ size: [0.7, 64] }), points: { show: false } }],
      })}
    />
  );
}
