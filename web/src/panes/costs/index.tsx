// The Costs pane (issue 18 item 6): what the turns cost, over a range: per day
// (/api/costs/trends), per model (/api/costs), per session
// (/api/costs/sessions), per tool (/api/costs/tools), as uPlot charts and
// tables; the recent turns (/api/turns); recent, frequent and searched prompts
// with "Send again" (Prompts.tsx). Read when shown (and again on Refresh, or
// when shown after more than a minute away).

import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { get, q } from "../../lib/api";
import { baseName, fmtAgo, fmtCost, fmtDuration, fmtTokens } from "../../lib/format";
import { navigate, sessions } from "../../state/app";
import type { PaneProps } from "../../ui/Panes";
import { BarChart, DayChart } from "./Charts";
import { daySeries, loadDashboard, RANGES, sinceOf, type Dashboard, type Range, type Turn } from "./data";
import { Prompts } from "./Prompts";
import "./costs.css";

const RANGE_KEY = "svc-costs-range";

export default function CostsPane({ visible }: PaneProps) {
  const [range, setRange] = useState<Range>(() => (RANGES.some((r) => r.value === localStorage.getItem(RANGE_KEY)) ? (localStorage.getItem(RANGE_KEY) as Range) : "30"));
  const [d, setD] = useState<Dashboard | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [stamp, setStamp] = useState(0);
  const loadedAt = useRef(0);

  useEffect(() => {
    if (!visible) return;
    if (stamp === 0 || Date.now() - loadedAt.current > 60_000) setStamp((s) => s + 1);
  }, [visible]);
  useEffect(() => {
    if (stamp === 0) return;
    let on = true;
    setBusy(true);
    loadDashboard(range).then(
      (x) => {
        if (!on) return;
        setD(x);
        setErr(null);
        loadedAt.current = Date.now();
      },
      (e) => on && setErr((e as Error).message),
    ).finally(() => on && setBusy(false));
    return () => {
      on = false;
    };
  }, [range, stamp]);

  const titles = useMemo(() => new Map(sessions.value.map((s) => [s.session_id, s.title])), [sessions.value]);
  const days = useMemo(() => (d ? daySeries(d.trends, sinceOf(range)) : null), [d, range]);
  const s = d?.summary;

  return (
    <div class="costspane">
      <div class="costs-top">
        <h1>Costs</h1>
        <label>
          <span class="sr-only">Range</span>
          <select
            aria-label="Range"
            value={range}
            onChange={(e) => {
              const v = (e.target as HTMLSelectElement).value as Range;
              setRange(v);
              localStorage.setItem(RANGE_KEY, v);
              setStamp((x) => x + 1);
            }}
          >
            {RANGES.map((r) => (
              <option key={r.value} value={r.value}>
                {r.label}
              </option>
            ))}
          </select>
        </label>
        <button type="button" onClick={() => setStamp((x) => x + 1)} disabled={busy}>
          {busy ? "Loading…" : "Refresh"}
        </button>
        {err && (
          <p class="error" role="alert">
            The costs could not be read: {err}
          </p>
        )}
      </div>
      {s && (
        <dl class="costs-sum" aria-label="Summary">
          <div>
            <dt>Cost</dt>
            <dd>{fmtCost(s.cost)}</dd>
          </div>
          <div>
            <dt>Turns</dt>
            <dd>{s.turns.toLocaleString("en")}</dd>
          </div>
          <div>
            <dt>Failed turns</dt>
            <dd>{s.errors.toLocaleString("en")}</dd>
          </div>
          <div>
            <dt>Tokens in / out</dt>
            <dd>
              {fmtTokens(s.input_tokens)} / {fmtTokens(s.output_tokens)}
            </dd>
          </div>
          <div>
            <dt>Cache read / written</dt>
            <dd>
              {fmtTokens(s.cache_read_tokens)} / {fmtTokens(s.cache_creation_tokens)}
            </dd>
          </div>
        </dl>
      )}
      {d && days && (
        <div class="costs-grid">
          <section class="costs-card costs-wide" aria-labelledby="costs-day-h">
            <h2 id="costs-day-h">Cost per day</h2>
            {d.trends.length === 0 ? <p class="muted">No ended turn in this range.</p> : <DayChart s={days} />}
          </section>
          <section class="costs-card" aria-labelledby="costs-model-h">
            <h2 id="costs-model-h">Per model</h2>
            {d.summary.by_model.length > 0 && <BarChart name="cost" label="Cost per model" labels={d.summary.by_model.map((m) => m.model || "(unknown)")} values={d.summary.by_model.map((m) => m.cost)} />}
            <Table
              name="Cost per model"
              num={[1, 2, 3, 4]}
              head={["Model", "Turns", "Cost", "In", "Out"]}
              rows={d.summary.by_model.map((m) => [m.model || "(unknown)", m.turns.toLocaleString("en"), fmtCost(m.cost), fmtTokens(m.input_tokens), fmtTokens(m.output_tokens)])}
            />
          </section>
          <section class="costs-card" aria-labelledby="costs-tool-h">
            <h2 id="costs-tool-h">Per tool</h2>
            {d.tools.length > 0 && <BarChart name="attributed cost" label="Cost attributed to each tool" labels={d.tools.slice(0, 12).map((t) => t.name)} values={d.tools.slice(0, 12).map((t) => t.attributed_cost)} />}
            <Table
              name="Cost per tool"
              num={[1, 2, 3, 4, 5]}
              head={["Tool", "Calls", "Errors", "Denied", "Avg time", "Attributed"]}
              rows={d.tools.map((t) => [t.name, t.calls.toLocaleString("en"), String(t.errors), String(t.denied), fmtDuration(t.avg_duration_ms), fmtCost(t.attributed_cost)])}
              note="Attributed: each turn's cost split evenly over its tool calls."
            />
          </section>
          <section class="costs-card costs-wide" aria-labelledby="costs-session-h">
            <h2 id="costs-session-h">Per session</h2>
            {d.sessions.length > 0 && (
              <BarChart name="cost" label="Cost of the costliest sessions" labels={d.sessions.slice(0, 12).map((x) => titles.get(x.session_id) || x.session_id.slice(0, 8))} values={d.sessions.slice(0, 12).map((x) => x.cost)} />
            )}
            <Table
              name="Cost per session"
              num={[2, 3]}
              head={["Session", "Project", "Turns", "Cost", "Last turn"]}
              rows={d.sessions.map((x) => [
                <a href={`/s/${x.session_id}`} onClick={(e) => (e.preventDefault(), navigate(`/s/${x.session_id}`))}>
                  {titles.get(x.session_id) || x.session_id}
                </a>,
                baseName(x.project),
                x.turns.toLocaleString("en"),
                fmtCost(x.cost),
                fmtAgo(x.last_at),
              ])}
            />
          </section>
          <Turns range={range} stamp={stamp} titles={titles} />
          <Prompts range={range} visible={visible} stamp={stamp} />
        </div>
      )}
      {!d && !err && (
        <p class="muted pad" role="status">
          Loading…
        </p>
      )}
    </div>
  );
}

/** A table; the columns in num (numbers) are aligned to the end. */
function Table({ name, head, rows, note, num = [] }: { name: string; head: string[]; rows: (string | preact.JSX.Element)[][]; note?: string; num?: number[] }) {
  if (rows.length === 0) return <p class="muted">Nothing in this range.</p>;
  return (
    <div class="costs-tablewrap">
      <table class="costs-table" aria-label={name}>
        <thead>
          <tr>
            {head.map((h, i) => (
              <th key={i} scope="col" class={num.includes(i) ? "n" : undefined}>
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r, i) => (
            <tr key={i}>
              {r.map((c, j) =>
                j === 0 ? (
                  <th scope="row" key={j}>
                    {c}
                  </th>
                ) : (
                  <td key={j} class={num.includes(j) ? "n" : undefined}>
                    {c}
                  </td>
                ),
              )}
            </tr>
          ))}
        </tbody>
      </table>
      {note && <p class="muted costs-note">{note}</p>}
    </div>
  );
}

function Turns({ range, stamp, titles }: { range: Range; stamp: number; titles: Map<string, string> }) {
  const [turns, setTurns] = useState<Turn[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const load = (cursor: string | null) => {
    get<{ turns: Turn[]; next_cursor: string | null }>(`/api/turns?since=${sinceOf(range)}&limit=25${cursor ? `&cursor=${q(cursor)}` : ""}`).then(
      (r) => {
        setTurns((old) => (cursor ? [...old, ...r.turns] : r.turns));
        setNext(r.next_cursor);
        setErr(null);
      },
      (e) => setErr((e as Error).message),
    );
  };
  useEffect(() => load(null), [range, stamp]);
  return (
    <section class="costs-card costs-wide" aria-labelledby="costs-turns-h">
      <h2 id="costs-turns-h">Recent turns</h2>
      {err && <p class="error">{err}</p>}
      <Table
        name="Recent turns"
        num={[3, 4, 5]}
        head={["Prompt", "Session", "Model", "Tools", "Time", "Cost", "When"]}
        rows={turns.map((t) => [
          <span class="costs-clip" title={t.user_prompt}>
            {t.is_error ? "⚠ " : ""}
            {t.user_prompt.slice(0, 120)}
          </span>,
          <a href={`/s/${t.session_id}`} onClick={(e) => (e.preventDefault(), navigate(`/s/${t.session_id}`))}>
            {titles.get(t.session_id) || t.session_id.slice(0, 10)}
            {t.turn_number ? ` #${t.turn_number}` : ""}
          </a>,
          t.model,
          String(t.tool_calls),
          t.ended_at ? fmtDuration(t.duration_ms ?? undefined) : "running",
          fmtCost(t.cost),
          fmtAgo(t.started_at),
        ])}
      />
      {next && (
        <button type="button" onClick={() => load(next)}>
          More turns
        </button>
      )}
    </section>
  );
}
