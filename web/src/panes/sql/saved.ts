// Saved queries: kept in this browser's localStorage (key "svc-sql-saved"),
// since the server has no route for them. A name is unique; saving under a
// name that exists replaces that query.

import { signal } from "@preact/signals";

export interface SavedQuery {
  name: string;
  sql: string;
  saved_at: string;
}

const KEY = "svc-sql-saved";

function read(): SavedQuery[] {
  try {
    const v = JSON.parse(localStorage.getItem(KEY) ?? "[]");
    return Array.isArray(v) ? v.filter((q) => q && typeof q.name === "string" && typeof q.sql === "string") : [];
  } catch {
    return [];
  }
}

export const savedQueries = signal<SavedQuery[]>(read());

function write(list: SavedQuery[]) {
  savedQueries.value = list;
  try {
    localStorage.setItem(KEY, JSON.stringify(list));
  } catch {
    /* private mode or full: kept for this page only */
  }
}

export function saveQuery(name: string, sqlText: string) {
  const q: SavedQuery = { name: name.trim(), sql: sqlText, saved_at: new Date().toISOString() };
  write([q, ...savedQueries.peek().filter((x) => x.name !== q.name)].sort((a, b) => a.name.localeCompare(b.name)));
}

export function deleteQuery(name: string) {
  write(savedQueries.peek().filter((x) => x.name !== name));
}

// Another tab saved or deleted one.
addEventListener("storage", (e) => {
  if (e.key === KEY) savedQueries.value = read();
});
