// @ts-check
// sqlbench: the SQL pane's result grid at 100 000 rows (issue 18). It starts a
// stack as the e2e tests do (web/e2e/lib/stack.mjs), or uses the one given in
// E2E_STACK, drives Debian's chromium through playwright-core and its CDP
// session, and writes its section of BENCHMARKS.md (between
// <!-- bench:sql:start --> and <!-- bench:sql:end -->).
//
// Measures, on a query of 100 000 rows and four columns run from the pane
// (POST /api/shadow-db/sql, streamed as TSV into the virtualised grid):
//   - time to first paint of the result: from the click on "Run query" to the
//     frame after the first data row entered the grid (two requestAnimationFrame
//     callbacks later, so the frame that shows it has been produced), median
//     of RUNS runs; and to the whole result (the status says "100,000 rows");
//   - scroll frame rate: requestAnimationFrame callbacks per second while the
//     grid's scrollTop moves every frame, for SCROLL_MS: a steady fast scroll
//     (FLICK_PX a frame) and jumps to random positions (a scrollbar dragged);
//     the p99 frame time, frames over 50 ms, and the most rows in the DOM;
//   - the JS heap holding the result (after a GC) and the page's element count.
//
//   node bench/ui/sqlbench.mjs [-write=false]
import { execFile } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ROOT, until } from '../../web/e2e/lib/stack.mjs';
import { openBench, writeSection } from './lib.mjs';

const run = promisify(execFile);
const write = !process.argv.includes('-write=false');

const ROWS = 100_000;
const RUNS = 5;
const SCROLL_MS = 4000;
const FLICK_PX = 1200;
const QUERY = `SELECT g, 'row ' || g AS label, md5(g::text) AS hash, g * 0.5 AS half FROM generate_series(1, ${ROWS}) g`;

const log = (s) => process.stderr.write(`sqlbench: ${s}\n`);

const { info, stop, browser, api, newSession } = await openBench();

/** A signed-in context. */
async function context(viewport = { width: 1280, height: 800 }) {
  const ctx = await browser.newContext({ baseURL: info.baseURL, viewport });
  const res = await ctx.request.post('/api/login', { data: { password: info.password } });
  if (!res.ok()) throw new Error(`login: ${res.status()}`);
  return ctx;
}

/** @param {import('playwright-core').Page} page */
async function setSQL(page, text) {
  const box = page.getByRole('textbox', { name: 'SQL', exact: true });
  await box.click();
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Delete');
  await page.keyboard.insertText(text);
}

/**
 * One run: click Run query, time the first data row's frame and the whole result.
 * @param {import('playwright-core').Page} page
 */
async function runOnce(page) {
  await page.evaluate(() => {
    const w = /** @type {any} */ (window);
    w.__sqlFirst = null;
    w.__sqlAll = null;
    w.__sqlClick = null;
    const btn = Array.from(document.querySelectorAll('button')).find((b) => b.textContent?.trim() === 'Run query');
    btn?.addEventListener('click', () => { w.__sqlClick = performance.now(); }, { once: true, capture: true });
    const obs = new MutationObserver(() => {
      if (w.__sqlFirst === null && w.__sqlClick !== null && document.querySelector('[role="table"][aria-label="Query result"] [aria-rowindex="2"]')) {
        w.__sqlFirst = -1;
        requestAnimationFrame(() => requestAnimationFrame(() => { w.__sqlFirst = performance.now(); }));
      }
      const st = document.querySelector('[aria-label="Query status"]')?.textContent ?? '';
      if (w.__sqlAll === null && w.__sqlClick !== null && /100,000 rows in/.test(st)) w.__sqlAll = performance.now();
      if (w.__sqlFirst > 0 && w.__sqlAll !== null) obs.disconnect();
    });
    obs.observe(document.body, { childList: true, subtree: true, characterData: true });
  });
  await page.getByRole('button', { name: 'Run query', exact: true }).click();
  const r = await until(() => page.evaluate(() => {
    const w = /** @type {any} */ (window);
    return w.__sqlFirst > 0 && w.__sqlAll !== null ? { first: w.__sqlFirst - w.__sqlClick, all: w.__sqlAll - w.__sqlClick } : null;
  }), { timeoutMs: 60_000, what: 'the result of 100 000 rows' });
  return r;
}

/**
 * Frames of the same page for SCROLL_MS while nothing moves: what the machine
 * gives a page at that moment (the other processes share its CPUs).
 * @param {import('playwright-core').Page} page
 */
async function idleFrames(page) {
  return page.evaluate((ms) => new Promise((resolve) => {
    const deltas = [];
    let last = performance.now();
    const start = last;
    const tick = (t) => {
      deltas.push(t - last);
      last = t;
      if (t - start >= ms) return resolve({ frames: deltas.length, ms: t - start, deltas, maxRows: 0 });
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  }), SCROLL_MS);
}

/**
 * Frames while the grid scrolls every frame (mode "flick": FLICK_PX down,
 * wrapping at the end; "jump": a random position).
 * @param {import('playwright-core').Page} page
 * @param {'flick' | 'jump'} mode
 */
async function scrollFrames(page, mode) {
  return page.evaluate(({ mode, ms, px }) => new Promise((resolve) => {
    const el = /** @type {HTMLElement} */ (document.querySelector('.sqlgrid-scroll'));
    el.scrollTop = 0;
    const deltas = [];
    let maxRows = 0;
    let last = performance.now();
    const start = last;
    let seed = 1;
    const rand = () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
    const tick = (t) => {
      deltas.push(t - last);
      last = t;
      maxRows = Math.max(maxRows, el.querySelectorAll('[role="row"]').length);
      if (t - start >= ms) return resolve({ frames: deltas.length, ms: t - start, deltas, maxRows, end: el.scrollTop, height: el.scrollHeight });
      if (mode === 'flick') el.scrollTop = el.scrollTop + px >= el.scrollHeight - el.clientHeight ? 0 : el.scrollTop + px;
      else el.scrollTop = Math.floor(rand() * (el.scrollHeight - el.clientHeight));
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  }), { mode, ms: SCROLL_MS, px: FLICK_PX });
}

/**
 * Runs fn while Chromium traces, and returns its result with the renderer main
 * thread's CPU time (the trace's thread durations of its top-level tasks):
 * unlike frames per second, this does not depend on what else the machine runs.
 * @template T
 * @param {import('playwright-core').CDPSession} cdp
 * @param {() => Promise<T>} fn
 * @returns {Promise<{result: T, cpuMs: number, wallMs: number, allMs: number}>}
 */
async function traced(cdp, fn) {
  /** @type {any[]} */
  const events = [];
  const onData = (e) => events.push(...e.value);
  cdp.on('Tracing.dataCollected', onData);
  const done = new Promise((r) => cdp.once('Tracing.tracingComplete', r));
  await cdp.send('Tracing.start', { categories: 'toplevel,__metadata', transferMode: 'ReportEvents' });
  const result = await fn();
  await cdp.send('Tracing.end');
  await done;
  cdp.off('Tracing.dataCollected', onData);
  const main = new Set(events.filter((e) => e.ph === 'M' && e.name === 'thread_name' && e.args?.name === 'CrRendererMain').map((e) => `${e.pid}:${e.tid}`));
  const renderer = new Set([...main].map((k) => k.split(':')[0]));
  const top = new Set(['ThreadControllerImpl::RunTask', 'ThreadPool_RunTask', 'TaskGraphRunner::RunTask']);
  let cpuMs = 0;
  let wallMs = 0;
  let allMs = 0;
  for (const e of events) {
    if (e.ph !== 'X' || !top.has(e.name) || !renderer.has(String(e.pid))) continue;
    allMs += (e.tdur ?? 0) / 1000;
    if (e.name === 'ThreadControllerImpl::RunTask' && main.has(`${e.pid}:${e.tid}`)) {
      cpuMs += (e.tdur ?? 0) / 1000;
      wallMs += (e.dur ?? 0) / 1000;
    }
  }
  return { result, cpuMs, wallMs, allMs };
}

function stats(r) {
  const d = r.deltas.slice(1).sort((a, b) => a - b);
  return { fps: (r.frames * 1000) / r.ms, p99: d[Math.floor(d.length * 0.99)], worst: d.at(-1), long: d.filter((x) => x > 50).length, maxRows: r.maxRows };
}


let failed = false;
try {
  const ctx = await context();
  const page = await ctx.newPage();
  const cdp = await ctx.newCDPSession(page);
  await page.goto('/sql');
  await page.getByRole('textbox', { name: 'SQL', exact: true }).waitFor({ timeout: 30_000 });
  await setSQL(page, QUERY);
  log('warming up (one run not counted)');
  await runOnce(page);
  /** @type {{first: number, all: number}[]} */
  const runs = [];
  for (let i = 0; i < RUNS; i++) {
    runs.push(await runOnce(page));
    log(`run ${i + 1}: first paint ${runs.at(-1)?.first.toFixed(0)} ms, all ${runs.at(-1)?.all.toFixed(0)} ms`);
  }
  const med = (k) => [...runs].map((r) => r[k]).sort((a, b) => a - b)[Math.floor(runs.length / 2)];
  const rowcount = await page.getByRole('table', { name: 'Query result' }).getAttribute('aria-rowcount');
  if (rowcount !== String(ROWS + 1)) throw new Error(`aria-rowcount ${rowcount}, want ${ROWS + 1}`);
  /** @param {{result: any, cpuMs: number, wallMs: number, allMs: number}} t */
  const withCPU = (t) => ({ ...stats(t.result), cpu: t.cpuMs / t.result.frames, wall: t.wallMs / t.result.frames, all: t.allMs / t.result.frames });
  const idle = withCPU(await traced(cdp, () => idleFrames(page)));
  log(`idle: ${idle.fps.toFixed(1)} fps, p99 ${idle.p99.toFixed(1)} ms, main thread ${idle.cpu.toFixed(2)} ms CPU a frame`);
  const flick = withCPU(await traced(cdp, () => scrollFrames(page, 'flick')));
  log(`flick: ${flick.fps.toFixed(1)} fps, p99 ${flick.p99.toFixed(1)} ms, main thread ${flick.cpu.toFixed(2)} ms CPU a frame (${flick.wall.toFixed(2)} ms wall), renderer ${flick.all.toFixed(2)} ms`);
  const jump = withCPU(await traced(cdp, () => scrollFrames(page, 'jump')));
  log(`jump: ${jump.fps.toFixed(1)} fps, p99 ${jump.p99.toFixed(1)} ms, main thread ${jump.cpu.toFixed(2)} ms CPU a frame (${jump.wall.toFixed(2)} ms wall)`);
  await cdp.send('HeapProfiler.enable');
  await cdp.send('HeapProfiler.collectGarbage');
  const heap = await cdp.send('Runtime.getHeapUsage');
  const nodes = await page.evaluate(() => document.getElementsByTagName('*').length);
  await ctx.close();

  const { stdout: commit } = await run('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT });
  const { stdout: dirty } = await run('git', ['status', '--porcelain', '--', 'web'], { cwd: ROOT });
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  const load = os.loadavg().map((l) => l.toFixed(1)).join(' ');
  const when = new Date().toISOString().replace('T', ' ').slice(0, 16);
  const verdict = (ok) => (ok ? 'met' : 'not met');
  const s = (ms) => `${(ms / 1000).toFixed(2)} s`;
  const md = `## SQL grid (browser)

Run ${when} UTC on ${cpu}, nproc ${os.cpus().length}, Chromium ${browser.version()} (headless, Debian's package), the app built from commit ${commit.trim()}${dirty.trim() ? ' plus uncommitted changes' : ''}. Reproduce with \`node bench/ui/sqlbench.mjs\` (\`-write=false\` prints without writing here; \`E2E_STACK\` reuses a running stack). The stack is started as \`make run\` does; everything shares the machine's CPUs (load average at the end: ${load}).

The query, typed into the SQL pane and run with its button: \`${QUERY}\` (${ROWS.toLocaleString('en')} rows, 4 columns, about ${((ROWS * 52) / 1e6).toFixed(1)} MB of TSV).

| Measure | Goal | svc-code | Verdict |
|---|---|---|---|
| Time to first paint of the result (click to the frame after the first row is in the grid, median of ${RUNS}) | ≤ 0.5 s | ${s(med('first'))} (${runs.map((r) => (r.first / 1000).toFixed(2)).join(', ')}) | ${verdict(med('first') <= 500)} |
| Time to the whole result in the grid (the status says ${ROWS.toLocaleString('en')} rows) | ≤ 3 s | ${s(med('all'))} (${runs.map((r) => (r.all / 1000).toFixed(2)).join(', ')}) | ${verdict(med('all') <= 3000)} |
| Main-thread CPU time per frame, a steady fast scroll (${FLICK_PX} px ≈ ${Math.round(FLICK_PX / 26)} rows a frame: every row new each frame) | ≤ 16.7 ms (a 60 Hz frame) | ${flick.cpu.toFixed(1)} ms (${flick.wall.toFixed(1)} ms of wall time: the rest is waiting for a CPU); the renderer's threads together (raster included) ${flick.all.toFixed(1)} ms | ${verdict(flick.cpu <= 16.7)} |
| Main-thread CPU time per frame, a jump to a random row every frame (the scrollbar dragged) | ≤ 16.7 ms | ${jump.cpu.toFixed(1)} ms (${jump.wall.toFixed(1)} ms wall); all the renderer's threads ${jump.all.toFixed(1)} ms | ${verdict(jump.cpu <= 16.7)} |
| Scroll frame rate, the steady fast scroll | 60 | ${flick.fps.toFixed(1)} fps (p99 frame ${flick.p99.toFixed(1)} ms, worst ${flick.worst.toFixed(1)} ms, ${flick.long} over 50 ms) | ${verdict(flick.fps >= 57)} |
| Scroll frame rate, the jumps | 60 | ${jump.fps.toFixed(1)} fps (p99 frame ${jump.p99.toFixed(1)} ms, worst ${jump.worst.toFixed(1)} ms, ${jump.long} over 50 ms) | ${verdict(jump.fps >= 57)} |
| The same page not scrolling, for comparison (what the machine gives a page at that moment) | 60 | ${idle.fps.toFixed(1)} fps (p99 frame ${idle.p99.toFixed(1)} ms, worst ${idle.worst.toFixed(1)} ms; main thread ${idle.cpu.toFixed(2)} ms CPU a frame) | |
| Rows in the DOM while scrolling (of ${ROWS.toLocaleString('en')}) | bounded | at most ${Math.max(flick.maxRows, jump.maxRows)} (header included) | ${verdict(Math.max(flick.maxRows, jump.maxRows) < 100)} |
| JS heap holding the result (after a GC), page elements | | ${(heap.usedSize / 1024 / 1024).toFixed(1)} MB, ${nodes.toLocaleString('en')} elements | |

- First paint: a MutationObserver in the page sees the first data row (\`aria-rowindex="2"\`) enter the table "Query result"; the time is taken two \`requestAnimationFrame\` callbacks later, so the frame showing it has been produced. The page streams the TSV answer and decodes it as it arrives (web/src/panes/sql/result.ts), so this does not wait for the last row. One warm-up run is not counted.
- CPU time: Chromium's trace (category \`toplevel\`) during each scroll run; the thread time (\`tdur\`) of the renderer main thread's top-level tasks, summed and divided by the frames counted: script, style, layout and paint of the page, whatever else runs on the machine; "the renderer's threads together" adds its worker threads' top-level tasks (raster, GC). The GPU process is not counted. Frames per second, by contrast, count what the page got of the two shared CPUs; the idle row shows what any page got then.
- Scrolling: the grid's \`scrollTop\` is moved in every \`requestAnimationFrame\` callback for ${SCROLL_MS / 1000} s and the callbacks are counted; the grid renders the rows in view plus 6 either side (web/src/panes/sql/window.ts). Headless Chromium paces frames at 60 Hz; "met" counts 57 or more.
`;
  process.stdout.write(`${md}\n`);
  if (write) {
    await writeSection('sql', md);
    log('wrote the SQL grid section of BENCHMARKS.md');
  }
} catch (err) {
  failed = true;
  console.error(err);
} finally {
  await browser.close();
  await stop();
}
process.exit(failed ? 1 : 0);
