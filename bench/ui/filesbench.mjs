// @ts-check
// filesbench: the files pane with a 10 000-line file (issue 18), in Chromium
// through playwright-core and its CDP session. It starts a stack as the e2e
// tests do (or uses the one in E2E_STACK), writes a TypeScript file of 10 000
// lines into a session's directory, and measures, each the median of 5 runs
// with the app's files cached:
//   - view: navigation start (a reload of /s/{id}/files?path=big.ts) to the
//     whole text in the page (every line numbered, every block of text
//     present), then to the end of Shiki's colouring, and the longest task
//     (PerformanceObserver "longtask") from navigation to that end;
//   - editor: the click on Edit to CodeMirror showing the file's first line
//     (its chunk cached), then Ctrl+End to its line 10 000 shown.
// It writes its section of BENCHMARKS.md (between <!-- bench:files:start -->
// and <!-- bench:files:end -->).
//
//   node bench/ui/filesbench.mjs [-write=false]
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ROOT, until } from '../../web/e2e/lib/stack.mjs';
import { openBench, writeSection } from './lib.mjs';

const run = promisify(execFile);
const write = !process.argv.includes('-write=false');
const LINES = 10_000;
const RUNS = 5;
const log = (s) => process.stderr.write(`filesbench: ${s}\n`);

const { info, stop, browser, newSession } = await openBench();

/** A TypeScript file of n lines: functions, comments, strings, template literals. */
function bigSource(n) {
  const out = [];
  for (let i = 1; out.length < n; i++) {
    out.push(`/** Computes item ${i}: a block comment spanning`, ` * two lines. */`, `export function item${i}(x: number, name = "item-${i}"): string {`,
      `  const total = x * ${i} + Math.floor(x / 3); // a line comment`, '  return `${name}: ${total}`;', '}', '');
  }
  return out.slice(0, n).join('\n') + '\n';
}

async function session() {
  const s = await newSession('filesbench', 'fb-');
  await writeFile(path.join(s.cwd, 'big.ts'), bigSource(LINES));
  return s;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Records, in every page load, when the text shows, when the colouring ends, and the longest task. */
const watcher = (lines) => {
  const w = /** @type {any} */ (window);
  w.__fb = { text: null, colour: null, longest: 0, longestBoot: 0 };
  try {
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) {
        if (w.__fb.colour !== null) continue;
        // Tasks that began before the text showed are the app's start and the file's reading.
        if (w.__fb.text === null || e.startTime < w.__fb.text) w.__fb.longestBoot = Math.max(w.__fb.longestBoot, e.duration);
        else w.__fb.longest = Math.max(w.__fb.longest, e.duration);
      }
    }).observe({ type: 'longtask', buffered: true });
  } catch { /* no longtask timing */ }
  const check = () => {
    const g = document.querySelector('.fgutter');
    const chunks = document.querySelectorAll('.fcode .fv-chunk');
    if (w.__fb.text === null && g && g.textContent?.endsWith(`\n${lines}`) && chunks.length === Math.ceil(lines / 250)) w.__fb.text = performance.now();
    if (w.__fb.text !== null && w.__fb.colour === null && chunks.length && chunks[chunks.length - 1].querySelector('span')) w.__fb.colour = performance.now();
  };
  new MutationObserver(check).observe(document, { childList: true, subtree: true });
};

let failed = false;
try {
  const s = await session();
  const url = `/s/${s.session_id}/files?path=big.ts`;
  const ctx = await browser.newContext({ baseURL: info.baseURL, viewport: { width: 1280, height: 800 } });
  const login = await ctx.request.post('/api/login', { data: { password: info.password } });
  if (!login.ok()) throw new Error(`login: ${login.status()}`);
  const page = await ctx.newPage();
  await page.addInitScript(watcher, LINES);
  await page.goto(url); // warms the cache: the pane's, Shiki's and the editor's chunks
  await until(() => page.evaluate(() => /** @type {any} */ (window).__fb.colour), { timeoutMs: 120_000, what: 'the first colouring' });
  await page.getByRole('button', { name: 'Edit', exact: true }).click();
  await page.locator('.cm-content').waitFor({ timeout: 60_000 });

  const view = [];
  for (let i = 0; i < RUNS; i++) {
    await page.reload();
    const r = await until(() => page.evaluate(() => { const f = /** @type {any} */ (window).__fb; return f.colour !== null && f; }), { timeoutMs: 120_000, what: 'the view and its colouring' });
    view.push(r);
    log(`view ${i + 1}: text ${r.text.toFixed(0)} ms (longest task ${r.longestBoot.toFixed(0)} ms), coloured ${r.colour.toFixed(0)} ms (longest task after the text ${r.longest.toFixed(0)} ms)`);
  }

  const edit = [];
  for (let i = 0; i < RUNS; i++) {
    await page.reload();
    await until(() => page.evaluate(() => /** @type {any} */ (window).__fb.text), { timeoutMs: 60_000, what: 'the view' });
    const open = await page.evaluate(() => new Promise((resolve) => {
      const t0 = performance.now();
      const done = () => {
        const l = document.querySelector('.cm-content .cm-line');
        if (l && l.textContent?.includes('Computes item 1:')) return resolve(performance.now() - t0), true;
        return false;
      };
      new MutationObserver((_, o) => done() && o.disconnect()).observe(document.body, { childList: true, subtree: true, characterData: true });
      /** @type {HTMLButtonElement} */ (Array.from(document.querySelectorAll('button')).find((b) => b.textContent?.trim() === 'Edit')).click();
    }));
    await page.locator('.cm-content').click();
    const end = await page.evaluate((n) => new Promise((resolve) => {
      const t0 = performance.now();
      const done = () => {
        const g = Array.from(document.querySelectorAll('.cm-lineNumbers .cm-gutterElement')).some((e) => e.textContent === String(n));
        if (g) return resolve(performance.now() - t0), true;
        return false;
      };
      new MutationObserver((_, o) => done() && o.disconnect()).observe(document.body, { childList: true, subtree: true, characterData: true });
      const c = /** @type {HTMLElement} */ (document.querySelector('.cm-content'));
      c.dispatchEvent(new KeyboardEvent('keydown', { key: 'End', code: 'End', ctrlKey: true, bubbles: true, cancelable: true }));
    }), LINES);
    edit.push({ open: /** @type {number} */ (open), end: /** @type {number} */ (end) });
    log(`editor ${i + 1}: open ${Number(open).toFixed(0)} ms, to line ${LINES} ${Number(end).toFixed(0)} ms`);
  }
  const nodes = await page.evaluate(() => document.getElementsByTagName('*').length);
  await ctx.close();

  const { stdout: commit } = await run('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT });
  const { stdout: dirty } = await run('git', ['status', '--porcelain', '--', 'web'], { cwd: ROOT });
  const when = new Date().toISOString().replace('T', ' ').slice(0, 16);
  const load = os.loadavg().map((l) => l.toFixed(1)).join(' ');
  const size = (await readFile(path.join(s.cwd, 'big.ts'))).length;
  const ms = (xs) => `${median(xs).toFixed(0)} ms (${xs.map((x) => x.toFixed(0)).join(', ')})`;
  const md = `## Files pane: a 10 000-line file

Run ${when} UTC on ${os.cpus()[0]?.model ?? 'unknown CPU'}, nproc ${os.cpus().length}, Chromium ${browser.version()} (headless, Debian's package), the app built from commit ${commit.trim()}${dirty.trim() ? ' plus uncommitted changes' : ''}; load average at the end ${load} (the machine is shared). Reproduce with \`node bench/ui/filesbench.mjs\` (\`-write=false\` prints without writing here). The file: TypeScript, ${LINES.toLocaleString('en')} lines, ${(size / 1024).toFixed(0)} KiB (functions with block and line comments, strings and template literals). Each figure is the median of ${RUNS} runs with the app's files cached (the runs in brackets).

| Measure | svc-code |
|---|---|
| View: navigation to the whole text shown, numbered | ${ms(view.map((v) => v.text))} |
| View: longest task until then (the app's start, reading and placing the text) | ${ms(view.map((v) => v.longestBoot))} |
| View: navigation to the end of the colouring (Shiki, a few lines at a time when idle) | ${ms(view.map((v) => v.colour))} |
| View: longest task while colouring (the grammar's first use included) | ${ms(view.map((v) => v.longest))} |
| Editor: click on Edit to the file shown in CodeMirror | ${ms(edit.map((e) => e.open))} |
| Editor: Ctrl+End to line ${LINES.toLocaleString('en')} shown | ${ms(edit.map((e) => e.end))} |

- View: the time runs from navigation start (a reload of \`/s/{id}/files?path=big.ts\`) to the moment the gutter numbers every line and every block of 250 lines is in the page (plain text; blocks off screen are not laid out, \`content-visibility: auto\`), then to the moment the last block holds Shiki's colours; the longest tasks are Chromium's \`longtask\` timings, split at the moment the text shows (the colouring tokenizes 40 lines at a time, as many steps as fit in an idle period, carrying the grammar state across steps; its first step also compiles the grammar's expressions). On a machine this loaded, a task's duration includes the time the renderer waited for a CPU.
- Editor: from the click (in the page) to CodeMirror's first line in the page (the editor's chunk and the TypeScript grammar cached), then from Ctrl+End to the line number ${LINES.toLocaleString('en')} in its gutter (CodeMirror draws only the lines in view). ${nodes.toLocaleString('en')} DOM elements in the page with the editor open.
`;
  process.stdout.write(`${md}\n`);
  if (write) {
    await writeSection('files', md);
    log('wrote the files section of BENCHMARKS.md');
  }
} catch (err) {
  failed = true;
  log(`failed: ${err instanceof Error ? err.stack : err}`);
} finally {
  await browser.close();
  await stop();
}
process.exit(failed ? 1 : 0);
