// Runs one query: POST /api/shadow-db/sql?format=tsv, decoded as it streams
// (result.ts). An error before the first row is the server's envelope with a
// 4xx/5xx status (forbidden: the validator's refusal; INTERRUPT: past the
// deadline; sql_error: PostgreSQL's message); one after it is the TSV trailer,
// kept as the result's error (a result cut short).
//
// Cancelling aborts the request. The server ends the statement when it next
// writes rows to the closed connection; a statement that has sent nothing yet
// runs on until its deadline (docs/api.md, "Limits"), which the console says.

import { ApiError, onUnauthorized } from "../../lib/api";
import { TSVDecoder, type Result } from "./result";

export interface RunHandlers {
  /** The header arrived. */
  columns(cols: string[]): void;
  /** More rows arrived (appended in order). */
  rows(rows: string[][]): void;
}

/** Runs sql; resolves to the result (its error set when it was cut short), or rejects with an ApiError. */
export async function runQuery(sqlText: string, h: RunHandlers, signal: AbortSignal): Promise<Result> {
  let resp: Response;
  try {
    resp = await fetch("/api/shadow-db/sql?format=tsv", {
      method: "POST",
      headers: { "Content-Type": "text/plain; charset=utf-8" },
      body: sqlText,
      credentials: "same-origin",
      signal,
    });
  } catch (e) {
    if (signal.aborted) throw e;
    throw new ApiError(0, "network", "the server cannot be reached: " + (e as Error).message);
  }
  if (!resp.ok) {
    if (resp.status === 401) onUnauthorized();
    const text = await resp.text();
    let data: any;
    try {
      data = JSON.parse(text);
    } catch {
      data = undefined;
    }
    throw new ApiError(resp.status, data?.error ?? "http_" + resp.status, data?.message || data?.error || `${resp.status} ${resp.statusText}`, data);
  }
  const dec = new TSVDecoder();
  const all: string[][] = [];
  let announced = false;
  const take = (rows: string[][]) => {
    if (!announced && dec.columns) {
      announced = true;
      h.columns(dec.columns);
    }
    if (rows.length) {
      for (const r of rows) all.push(r);
      h.rows(rows);
    }
  };
  const reader = resp.body!.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    take(dec.push(value));
  }
  take(dec.end());
  return { columns: dec.columns ?? [], rows: all, ...(dec.error ? { error: dec.error } : {}) };
}
