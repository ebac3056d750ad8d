// The SQL pane (issue 18 item 6): a console over POST /api/shadow-db/sql.
// CodeMirror (the textbox "SQL") with completion from /api/shadow-db/schema;
// "Run query" or Ctrl+Enter; the result streams into a virtualised grid (the
// table "Query result"); "Download TSV" and "Download JSON" write what is
// shown; saved queries live in this browser (saved.ts); the validator's
// refusal, PostgreSQL's errors, INTERRUPT (the deadline) and a result cut
// short are said plainly; a chart of any two columns.

import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError, get } from "../../lib/api";
import type { PaneProps } from "../../ui/Panes";
import { ColumnChart } from "./Chart";
import { SqlEditor, type EditorHandle, type SchemaTable } from "./Editor";
import { Grid } from "./Grid";
import { toJSON, toTSV, type Result } from "./result";
import { runQuery } from "./run";
import { deleteQuery, saveQuery, savedQueries } from "./saved";
import "./sql.css";

const DRAFT = "svc-sql-draft";
const START = "SELECT day, model, count(*) AS turns, sum(cost) AS cost\nFROM turn_costs\nGROUP BY 1, 2\nORDER BY 1, 2";

type Outcome =
  | { kind: "idle" }
  | { kind: "running"; started: number }
  | { kind: "done"; ms: number }
  | { kind: "cancelled"; ms: number }
  | { kind: "failed"; code: string; message: string; status: number };

/** The file name of a download: query-20261127-031502.tsv */
function fileName(ext: string): string {
  const d = new Date();
  const p = (n: number) => String(n).padStart(2, "0");
  return `query-${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}.${ext}`;
}

function download(text: string, type: string, name: string) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** What went wrong, in words: the validator's refusal, the deadline, PostgreSQL. */
export function explain(code: string, message: string): { title: string; detail: string } {
  switch (code) {
    case "forbidden":
      return { title: "Refused by the validator: nothing ran", detail: message };
    case "INTERRUPT":
      return { title: "INTERRUPT: stopped at the deadline, cancelled in PostgreSQL", detail: message };
    case "sql_error":
      return { title: "PostgreSQL error", detail: message };
    case "payload_too_large":
      return { title: "Too large", detail: message };
    case "unavailable":
      return { title: "The SQL endpoint is disabled", detail: message };
    case "bad_request":
      return { title: "Bad request", detail: message };
    default:
      return { title: `Error (${code})`, detail: message };
  }
}

export default function SqlPane({ visible }: PaneProps) {
  const editor = useRef<EditorHandle | null>(null);
  const [schema, setSchema] = useState<SchemaTable[] | null>(null);
  const [schemaErr, setSchemaErr] = useState<string | null>(null);
  const [columns, setColumns] = useState<string[]>([]);
  const rows = useRef<string[][]>([]);
  const [count, setCount] = useState(0);
  const [cut, setCut] = useState<Result["error"] | null>(null);
  const [outcome, setOutcome] = useState<Outcome>({ kind: "idle" });
  const [tab, setTab] = useState<"result" | "chart">("result");
  const [saveName, setSaveName] = useState("");
  const [picked, setPicked] = useState("");
  const [saving, setSaving] = useState(false);
  const abort = useRef<AbortController | null>(null);
  const frame = useRef(0);
  const draft = useRef(localStorage.getItem(DRAFT) ?? START);

  useEffect(() => {
    get<{ tables: SchemaTable[] }>("/api/shadow-db/schema").then(
      (r) => setSchema(r.tables),
      (e) => setSchemaErr((e as Error).message),
    );
  }, []);
  useEffect(() => {
    // On a desktop the editor takes the keys at once; a phone keeps its keyboard down.
    if (visible && matchMedia("(pointer: fine)").matches) editor.current?.focus();
  }, [visible]);

  async function run() {
    const text = editor.current?.get() ?? "";
    if (!text.trim()) {
      setOutcome({ kind: "failed", code: "bad_request", message: "Write a query first.", status: 0 });
      return;
    }
    abort.current?.abort();
    const ac = new AbortController();
    abort.current = ac;
    const started = performance.now();
    rows.current = [];
    setColumns([]);
    setCount(0);
    setCut(null);
    setOutcome({ kind: "running", started });
    // Rows are appended to one array; the grid is told at most once a frame.
    const flush = () => {
      frame.current = 0;
      if (abort.current === ac) setCount(rows.current.length);
    };
    try {
      const r = await runQuery(
        text,
        {
          columns: (c) => abort.current === ac && setColumns(c),
          rows: (more) => {
            if (abort.current !== ac) return;
            for (const x of more) rows.current.push(x);
            if (!frame.current) frame.current = requestAnimationFrame(flush);
          },
        },
        ac.signal,
      );
      if (abort.current !== ac) return;
      setCount(rows.current.length);
      setCut(r.error ?? null);
      setOutcome({ kind: "done", ms: performance.now() - started });
    } catch (e) {
      if (abort.current !== ac) return;
      if (ac.signal.aborted) {
        setCount(rows.current.length);
        setOutcome({ kind: "cancelled", ms: performance.now() - started });
        return;
      }
      const err = e instanceof ApiError ? e : new ApiError(0, "network", (e as Error).message);
      setOutcome({ kind: "failed", code: err.code, message: err.message, status: err.status });
    } finally {
      if (abort.current === ac) abort.current = null;
    }
  }

  function cancel() {
    abort.current?.abort();
  }

  const result = (): Result => ({ columns, rows: rows.current.slice(0, count), ...(cut ? { error: cut } : {}) });
  const running = outcome.kind === "running";
  const haveResult = columns.length > 0 && !running;
  const saved = savedQueries.value;

  return (
    <div class="sqlpane">
      <div class="sqlbar" role="toolbar" aria-label="Query">
        <button type="button" class="primary" onClick={run} disabled={running} title="Ctrl+Enter">
          Run query
        </button>
        {running && (
          <button type="button" class="danger" onClick={cancel}>
            Cancel query
          </button>
        )}
        <button type="button" aria-label="Download TSV" title="Download TSV" onClick={() => download(toTSV(result()), "text/tab-separated-values;charset=utf-8", fileName("tsv"))} disabled={!haveResult}>
          <span class="sql-wide">Download </span>TSV
        </button>
        <button type="button" aria-label="Download JSON" title="Download JSON" onClick={() => download(toJSON(result()), "application/json", fileName("json"))} disabled={!haveResult}>
          <span class="sql-wide">Download </span>JSON
        </button>
        <span class="sqlbar-gap" />
        <select
          aria-label="Saved queries"
          value={picked}
          onChange={(e) => {
            const name = (e.target as HTMLSelectElement).value;
            setPicked(name);
            const q = saved.find((x) => x.name === name);
            if (q) {
              editor.current?.set(q.sql);
              setSaveName(q.name);
            }
          }}
        >
          <option value="">Saved queries ({saved.length})</option>
          {saved.map((q) => (
            <option value={q.name} key={q.name}>
              {q.name}
            </option>
          ))}
        </select>
        <button type="button" aria-expanded={saving} onClick={() => setSaving(!saving)}>
          Save…
        </button>
      </div>
      {saving && (
        <form
          class="sqlsave"
          onSubmit={(e) => {
            e.preventDefault();
            const name = saveName.trim();
            if (!name) return;
            saveQuery(name, editor.current?.get() ?? "");
            setPicked(name);
            setSaving(false);
          }}
        >
          <input aria-label="Query name" placeholder="Name of the query" value={saveName} onInput={(e) => setSaveName((e.target as HTMLInputElement).value)} maxLength={100} />
          <button type="submit" disabled={!saveName.trim()}>
            Save query
          </button>
          {picked && saved.some((q) => q.name === picked) && (
            <button
              type="button"
              class="danger"
              onClick={() => {
                deleteQuery(picked);
                setPicked("");
                setSaving(false);
              }}
            >
              Delete “{picked}”
            </button>
          )}
          <span class="muted">Kept in this browser.</span>
        </form>
      )}
      <div class="sqledit">
        <SqlEditor initial={draft.current} schema={schema} onRun={run} onChange={(s) => localStorage.setItem(DRAFT, s)} handle={editor} />
        <Schema tables={schema} error={schemaErr} />
      </div>
      <Status outcome={outcome} count={count} cut={cut ?? null} />
      {columns.length > 0 && (
        <div class="sqltabs" role="tablist" aria-label="Result view">
          <button type="button" role="tab" aria-selected={tab === "result"} onClick={() => setTab("result")}>
            Rows
          </button>
          <button type="button" role="tab" aria-selected={tab === "chart"} onClick={() => setTab("chart")} disabled={running}>
            Chart
          </button>
        </div>
      )}
      <div class="sqlout">
        {columns.length > 0 && tab === "result" && <Grid columns={columns} rows={rows.current} count={count} />}
        {columns.length > 0 && tab === "chart" && !running && <ColumnChart columns={columns} rows={rows.current} count={count} />}
      </div>
    </div>
  );
}

function Status({ outcome, count, cut }: { outcome: Outcome; count: number; cut: Result["error"] | null }) {
  const rowsText = `${count.toLocaleString("en")} row${count === 1 ? "" : "s"}`;
  if (outcome.kind === "failed") {
    const e = explain(outcome.code, outcome.message);
    return (
      <div class={`sqlerr ${outcome.code === "forbidden" ? "refused" : ""}`} role="alert">
        <strong>{e.title}</strong>
        <span class="wrap">{e.detail}</span>
      </div>
    );
  }
  return (
    <>
      <p class="sqlstatus muted" role="status" aria-label="Query status">
        {outcome.kind === "idle" && "Ctrl+Enter runs the query. Read-only: SELECT, WITH, VALUES, TABLE, SHOW, EXPLAIN."}
        {outcome.kind === "running" && `Running… ${rowsText} so far`}
        {outcome.kind === "done" && `${rowsText} in ${(outcome.ms / 1000).toFixed(2)} s${cut ? " (cut short)" : ""}`}
        {outcome.kind === "cancelled" && `Cancelled after ${(outcome.ms / 1000).toFixed(2)} s with ${rowsText} received.`}
      </p>
      {outcome.kind === "cancelled" && (
        <p class="sqlnote warn">
          The page stopped reading. The server ends the statement when it next sends rows; a statement that has sent none yet runs on until its deadline
          (30 s unless <code>shadow_db.sql_timeout_s</code> says otherwise).
        </p>
      )}
      {cut && (
        <div class="sqlerr" role="alert">
          <strong>
            {explain(cut.code, cut.message).title}: the result is cut short after {rowsText}
          </strong>
          <span class="wrap">{cut.message}</span>
        </div>
      )}
    </>
  );
}

function Schema({ tables, error }: { tables: SchemaTable[] | null; error: string | null }) {
  return (
    <details class="sqlschema" open>
      <summary>Tables</summary>
      {error && <p class="error">The schema could not be read: {error}</p>}
      {!tables && !error && <p class="muted">Loading…</p>}
      {tables?.map((t) => (
        <details key={t.name}>
          <summary title={t.description}>
            {t.name} <span class="muted">{t.kind}</span>
          </summary>
          <ul>
            {t.columns.map((c) => (
              <li key={c.name} title={c.description}>
                {c.name} <span class="muted">{c.type}</span>
              </li>
            ))}
          </ul>
        </details>
      ))}
    </details>
  );
}
