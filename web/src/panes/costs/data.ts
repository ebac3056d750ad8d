// The Costs pane's data: the answers of /api/costs/*, /api/turns and
// /api/prompts/* (docs/api.md, "Analytics"), and the range filter they share.

import { get } from "../../lib/api";

export interface Tokens {
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_creation_tokens: number;
}
export interface ModelCost extends Tokens {
  model: string;
  turns: number;
  cost: number;
}
export interface Summary extends Tokens {
  turns: number;
  cost: number;
  errors: number;
  by_model: ModelCost[];
}
export interface SessionCost extends Tokens {
  session_id: string;
  project: string;
  first_at: string;
  last_at: string;
  turns: number;
  cost: number;
}
export interface ToolCost {
  name: string;
  calls: number;
  errors: number;
  denied: number;
  total_duration_ms: number;
  avg_duration_ms: number;
  turns: number;
  turns_cost: number;
  attributed_cost: number;
}
export interface Trend extends Tokens {
  day: string;
  model: string;
  turns: number;
  cost: number;
}
export interface Turn extends Tokens {
  id: string;
  session_id: string;
  turn_number: number | null;
  started_at: string;
  ended_at: string | null;
  duration_ms: number | null;
  user_prompt: string;
  model: string;
  provider: string;
  cost: number;
  tool_calls: number;
  is_error: boolean;
  stop_reason: string;
  project: string;
}
export interface PromptHit {
  turn_id?: string;
  session_id?: string;
  project?: string;
  started_at?: string;
  prompt: string;
  snippet?: string;
  count?: number;
  sessions?: number;
  last_at?: string;
}

export type Range = "7" | "30" | "90" | "365" | "all";
export const RANGES: { value: Range; label: string }[] = [
  { value: "7", label: "Last 7 days" },
  { value: "30", label: "Last 30 days" },
  { value: "90", label: "Last 90 days" },
  { value: "365", label: "Last year" },
  { value: "all", label: "All time" },
];

/** The first UTC day of the range (today counts as one of its days), as the routes' `since`. */
export function sinceOf(range: Range, now = new Date()): string {
  const days = range === "all" ? 0 : Number(range);
  if (!days) return "2000-01-01";
  const d = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - (days - 1)));
  return d.toISOString().slice(0, 10);
}

export interface Dashboard {
  summary: Summary;
  trends: Trend[];
  sessions: SessionCost[];
  tools: ToolCost[];
}

/** Everything the charts and tables need for a range, at once. */
export async function loadDashboard(range: Range): Promise<Dashboard> {
  const s = `since=${sinceOf(range)}`;
  const [summary, trends, sessions, tools] = await Promise.all([
    get<Summary>(`/api/costs?${s}`),
    get<{ trends: Trend[] }>(`/api/costs/trends?${s}`),
    get<{ sessions: SessionCost[] }>(`/api/costs/sessions?${s}&limit=100`),
    get<{ tools: ToolCost[] }>(`/api/costs/tools?${s}`),
  ]);
  return { summary, trends: trends.trends ?? [], sessions: sessions.sessions ?? [], tools: tools.tools ?? [] };
}

export interface DaySeries {
  /** Each day (UTC midnight, seconds). */
  days: number[];
  models: string[];
  /** Cost per day of each model (index as models), 0 when none. */
  byModel: number[][];
  total: number[];
}

/** The trends as one row per day (every day of the range, empty ones 0) and a column per model. */
export function daySeries(trends: Trend[], since: string, today = new Date()): DaySeries {
  const models = [...new Set(trends.map((t) => t.model || "(unknown)"))].sort();
  const start = Date.parse(since + "T00:00:00Z");
  const first = trends.length ? Math.min(start, ...trends.map((t) => Date.parse(t.day + "T00:00:00Z"))) : start;
  const end = Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate());
  // "All time" starts at the first day with data, not in 2000.
  const from = since === "2000-01-01" && trends.length ? Math.min(...trends.map((t) => Date.parse(t.day + "T00:00:00Z"))) : first;
  const days: number[] = [];
  for (let t = from; t <= end; t += 86_400_000) days.push(t / 1000);
  const index = new Map(days.map((d, i) => [d, i]));
  const byModel = models.map(() => days.map(() => 0));
  const total = days.map(() => 0);
  for (const t of trends) {
    const i = index.get(Date.parse(t.day + "T00:00:00Z") / 1000);
    if (i === undefined) continue;
    const m = models.indexOf(t.model || "(unknown)");
    byModel[m][i] += t.cost;
    total[i] += t.cost;
  }
  return { days, models, byModel, total };
}
