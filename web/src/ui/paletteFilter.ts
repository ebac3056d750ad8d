// The command palette's fuzzy filter: a query matches an entry when its
// characters appear in order in the entry's label (or its keywords), case and
// accents ignored. Matches are ranked: the whole label, then a prefix, then
// characters at word starts and in runs score higher than scattered ones;
// ties keep the entries' order (panes, then sessions, then actions).

export interface PaletteEntry {
  id: string;
  label: string;
  /** Other words that find the entry (not shown). */
  keywords?: string;
}

function fold(s: string): string {
  return s.normalize("NFD").replace(/[\u0300-\u036f]/g, "").toLowerCase();
}

/** The score of query against text (higher is better), or -1 when it does not match. */
export function fuzzyScore(query: string, text: string): number {
  const q = fold(query.trim());
  const t = fold(text);
  if (!q) return 0;
  if (t === q) return 1000;
  if (t.startsWith(q)) return 800 - t.length;
  const at = t.indexOf(q);
  if (at >= 0) return 600 - at - t.length / 10 + (at === 0 || /\W/.test(t[at - 1]) ? 100 : 0);
  let score = 0;
  let ti = 0;
  let run = 0;
  for (const ch of q) {
    if (ch === " ") continue;
    const i = t.indexOf(ch, ti);
    if (i < 0) return -1;
    const wordStart = i === 0 || /[\s\-_:/.]/.test(t[i - 1]);
    run = i === ti ? run + 1 : 0;
    score += 10 + (wordStart ? 15 : 0) + run * 5 - Math.min(i - ti, 10);
    ti = i + 1;
  }
  return score;
}

/** The entries that match query, best first (all of them, in order, for an empty query). */
export function filterEntries<T extends PaletteEntry>(entries: T[], query: string, limit = 50): T[] {
  if (!query.trim()) return entries.slice(0, limit);
  const scored: { e: T; s: number; i: number }[] = [];
  entries.forEach((e, i) => {
    const s = Math.max(fuzzyScore(query, e.label), e.keywords ? fuzzyScore(query, e.keywords) - 50 : -1);
    if (s >= 0) scored.push({ e, s, i });
  });
  scored.sort((a, b) => b.s - a.s || a.i - b.i);
  return scored.slice(0, limit).map((x) => x.e);
}
