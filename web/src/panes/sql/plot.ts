// The data of the two-column chart: a column's kind (numbers, times, or
// categories) and the (x, y) points, sorted by x, that uPlot draws.

export type ColumnKind = "number" | "time" | "category";

const TIME_RE = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}(:?\d{2})?)?)?$/;

/** A value as a number, or null (empty, or not a number). */
export function num(v: string): number | null {
  if (v === "") return null;
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
}

/** A value as seconds since the epoch (dates and timestamps the server prints), or null. */
export function time(v: string): number | null {
  if (!TIME_RE.test(v)) return null;
  const t = Date.parse(v.length === 10 ? v + "T00:00:00Z" : v);
  return Number.isFinite(t) ? t / 1000 : null;
}

/** What the non-empty values of column j (of the first `sample` rows) are. */
export function columnKind(rows: string[][], j: number, sample = 1000): ColumnKind {
  let nums = 0;
  let times = 0;
  let seen = 0;
  for (let i = 0; i < rows.length && seen < sample; i++) {
    const v = rows[i][j] ?? "";
    if (v === "") continue;
    seen++;
    if (num(v) !== null) nums++;
    else if (time(v) !== null) times++;
  }
  if (seen === 0) return "category";
  if (nums === seen) return "number";
  if (times === seen) return "time";
  return "category";
}

export interface Series {
  kind: ColumnKind;
  xs: number[];
  ys: (number | null)[];
  /** For categories: the label of each x (0, 1, ...). */
  labels: string[];
  /** Rows left out: x not readable. */
  skipped: number;
  /** Rows whose y is not a number (drawn as a gap). */
  noY: number;
}

/** The points of columns x and y of rows: numbers and times sorted by x; categories in row order. */
export function series(rows: string[][], x: number, y: number): Series {
  const kind = columnKind(rows, x);
  const pts: [number, number | null][] = [];
  const labels: string[] = [];
  let skipped = 0;
  let noY = 0;
  for (const r of rows) {
    const yv = num(r[y] ?? "");
    if (yv === null) noY++;
    if (kind === "category") {
      pts.push([labels.length, yv]);
      labels.push(r[x] ?? "");
      continue;
    }
    const xv = kind === "number" ? num(r[x] ?? "") : time(r[x] ?? "");
    if (xv === null) {
      skipped++;
      continue;
    }
    pts.push([xv, yv]);
  }
  if (kind !== "category") pts.sort((a, b) => a[0] - b[0]);
  return { kind, xs: pts.map((p) => p[0]), ys: pts.map((p) => p[1]), labels, skipped, noY };
}
