// A uPlot chart as a component, shared by the Costs and SQL panes. uPlot (and
// its stylesheet) is imported on first use, so neither pane's first paint and
// nothing of the chat path carries it. The chart follows the theme: axis, grid
// and series colours are read from the CSS variables (--fg, --muted, --border,
// --accent ...) and the chart is rebuilt when the theme or the colour scheme
// changes, and resized with its box.

import type uPlotT from "uplot";
import { useEffect, useRef, useState } from "preact/hooks";
import { theme } from "../state/app";
import "./uchart.css";

type UPlot = typeof uPlotT;
let loading: Promise<UPlot> | null = null;

/** Loads uPlot and its stylesheet once. */
export function loadUPlot(): Promise<UPlot> {
  loading ??= Promise.all([import("uplot"), import("uplot/dist/uPlot.min.css")]).then(([m]) => m.default);
  return loading;
}

/** Series colours that read on both backgrounds. */
export const PALETTE = ["#4c8dff", "#e5534b", "#3fb950", "#d29922", "#a371f7", "#39c5cf", "#f778ba", "#8b949e", "#db6d28", "#6e7681"];

export interface ThemeColors {
  fg: string;
  muted: string;
  border: string;
  accent: string;
}

/** The theme's colours, from the CSS variables of the root element. */
export function themeColors(): ThemeColors {
  const cs = getComputedStyle(document.documentElement);
  const v = (n: string, d: string) => cs.getPropertyValue(n).trim() || d;
  return { fg: v("--fg", "#1b1f24"), muted: v("--muted", "#5c6670"), border: v("--border", "#d5d9df"), accent: v("--accent", "#2f6feb") };
}

/** Themed axes: the x axis and one y axis, with formatters. */
export function themedAxes(c: ThemeColors, x: Partial<uPlotT.Axis> = {}, y: Partial<uPlotT.Axis> = {}): uPlotT.Axis[] {
  const base = { stroke: c.muted, grid: { stroke: c.border, width: 1 }, ticks: { stroke: c.border, width: 1 }, font: "11px system-ui, sans-serif" };
  // The y axis is as wide as its longest label.
  const ySize = (_u: uPlotT, values: string[]) => (values?.length ? Math.max(...values.map((v) => String(v).length)) * 7 + 18 : 40);
  return [
    { ...base, ...x },
    { ...base, size: ySize, ...y },
  ];
}

/** An x axis of UTC days: "Nov 21", ticks on whole days. */
export const dayAxis: Partial<uPlotT.Axis> = {
  space: 56,
  incrs: [86400, 2 * 86400, 7 * 86400, 14 * 86400, 30 * 86400, 91 * 86400, 365 * 86400],
  values: (_u, ticks) => ticks.map((t) => new Date(t * 1000).toLocaleDateString("en", { month: "short", day: "numeric", timeZone: "UTC" })),
};

/** A number that changes when the theme or the system colour scheme does. */
function useThemeVersion(): number {
  const [v, setV] = useState(0);
  useEffect(() => {
    const mq = matchMedia("(prefers-color-scheme: dark)");
    const bump = () => setV((x) => x + 1);
    mq.addEventListener("change", bump);
    const off = theme.subscribe(bump);
    return () => {
      mq.removeEventListener("change", bump);
      off();
    };
  }, []);
  return v;
}

export interface ChartProps {
  /** Builds the options for a width and the theme's colours (height is the box's). */
  options: (c: ThemeColors, uPlot: UPlot) => Omit<uPlotT.Options, "width" | "height">;
  data: uPlotT.AlignedData;
  height: number;
  /** The chart's accessible name (the canvas is an image to assistive technology). */
  label: string;
  /** Anything that, when it changes, rebuilds the chart (e.g. a column choice). */
  deps?: unknown[];
}

/** A uPlot chart in a box that fills its parent's width. */
export function UChart({ options, data, height, label, deps = [] }: ChartProps) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlotT | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const tv = useThemeVersion();
  useEffect(() => {
    let live = true;
    loadUPlot().then(
      (uPlot) => {
        if (!live || !box.current) return;
        plot.current?.destroy();
        const width = Math.max(200, box.current.clientWidth);
        plot.current = new uPlot({ ...options(themeColors(), uPlot), width, height }, data, box.current);
      },
      (e) => live && setErr(`The chart could not be loaded: ${(e as Error).message}`),
    );
    return () => {
      live = false;
    };
  }, [tv, height, ...deps]);
  // New data for the same chart: setData keeps the options.
  useEffect(() => {
    plot.current?.setData(data);
  }, [data]);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const ro = new ResizeObserver(() => {
      const w = el.clientWidth;
      if (plot.current && w > 0 && Math.abs(plot.current.width - w) > 1) plot.current.setSize({ width: w, height });
    });
    ro.observe(el);
    return () => {
      ro.disconnect();
      plot.current?.destroy();
      plot.current = null;
    };
  }, []);
  return (
    <div class="uchart" role="img" aria-label={label} ref={box} style={{ minHeight: height }}>
      {err && <p class="error">{err}</p>}
    </div>
  );
}
