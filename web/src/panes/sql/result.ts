// A query result and its two text forms.
//
// The console asks POST /api/shadow-db/sql for TSV (docs/api.md) and decodes it
// as it streams in, so the first rows show before the last arrive; the same
// escaping is used to write the "Download TSV" file, so a download reads back
// exactly as the server's own TSV would:
//
//   - a header line of column names, then one line per row, fields separated by
//     a tab, every line ending with "\n";
//   - inside a value (and a column name) four characters are escaped: backslash
//     as \\, tab as \t, newline as \n, carriage return as \r; nothing else;
//   - NULL is the empty string (the server sends it so: use coalesce in the SQL
//     to tell them apart);
//   - a result cut short by the server (its deadline, INTERRUPT; its size bound)
//     ends with the trailer line "\!error<TAB>CODE<TAB>message", which no row can
//     start with ("!" is no escape). The downloaded file keeps that trailer, so
//     a partial download says it is one.
//
// "Download JSON" writes the server's JSON shape: {"columns": [...], "rows":
// [[...]], "count": n}, plus "error" and "message" for a result cut short.

/** A result: every value a string, as the server sends them. */
export interface Result {
  columns: string[];
  rows: string[][];
  /** Set when the server cut the result short (after its rows). */
  error?: { code: string; message: string };
}

/** Escapes a value for a TSV field. */
export function escapeTSV(v: string): string {
  // The fast path: most values have nothing to escape.
  if (!/[\\\t\n\r]/.test(v)) return v;
  return v.replace(/[\\\t\n\r]/g, (c) => (c === "\\" ? "\\\\" : c === "\t" ? "\\t" : c === "\n" ? "\\n" : "\\r"));
}

/** Reverses escapeTSV (an unknown escape is kept as it is). */
export function unescapeTSV(v: string): string {
  if (v.indexOf("\\") < 0) return v;
  return v.replace(/\\(.)/g, (m, c) => (c === "\\" ? "\\" : c === "t" ? "\t" : c === "n" ? "\n" : c === "r" ? "\r" : m));
}

/** The whole result as TSV text (header, rows, the trailer of a cut result). */
export function toTSV(r: Result): string {
  const out: string[] = [r.columns.map(escapeTSV).join("\t")];
  for (const row of r.rows) out.push(row.map(escapeTSV).join("\t"));
  if (r.error) out.push(["\\!error", escapeTSV(r.error.code), escapeTSV(r.error.message)].join("\t"));
  return out.join("\n") + "\n";
}

/** The whole result as the server's JSON shape. */
export function toJSON(r: Result): string {
  const o: Record<string, unknown> = { columns: r.columns, rows: r.rows, count: r.rows.length };
  if (r.error) {
    o.error = r.error.code;
    o.message = r.error.message;
  }
  return JSON.stringify(o);
}

/**
 * Decodes a TSV answer as its chunks arrive: push() gives the rows completed
 * by the chunk; the first line is the header (columns). A line is complete at
 * its "\n"; end() checks that nothing is left over.
 */
export class TSVDecoder {
  columns: string[] | null = null;
  error: { code: string; message: string } | null = null;
  private rest = "";

  push(chunk: string): string[][] {
    const text = this.rest + chunk;
    const rows: string[][] = [];
    let from = 0;
    for (;;) {
      const nl = text.indexOf("\n", from);
      if (nl < 0) break;
      this.line(text.slice(from, nl), rows);
      from = nl + 1;
    }
    this.rest = text.slice(from);
    return rows;
  }

  /** The end of the answer: a line without its "\n" is an error (the answer was cut). */
  end(): string[][] {
    const rows: string[][] = [];
    if (this.rest !== "") {
      const last = this.rest;
      this.rest = "";
      this.line(last, rows);
      if (!this.error) this.error = { code: "truncated", message: "the answer ended in the middle of a line" };
    }
    if (this.columns === null && !this.error) this.error = { code: "truncated", message: "the answer had no header line" };
    return rows;
  }

  private line(line: string, rows: string[][]) {
    if (this.columns === null) {
      this.columns = line === "" ? [] : line.split("\t").map(unescapeTSV);
      return;
    }
    if (line.startsWith("\\!")) {
      const [, code = "", ...msg] = line.split("\t");
      this.error = { code: unescapeTSV(code), message: unescapeTSV(msg.join("\t")) };
      return;
    }
    rows.push(this.columns.length === 0 ? [] : line.split("\t").map(unescapeTSV));
  }
}
