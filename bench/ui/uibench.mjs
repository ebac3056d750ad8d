// @ts-check
// uibench: the browser UI benchmark (issue 16). It starts a stack as the e2e
// tests do (web/e2e/lib/stack.mjs: run.sh, a temporary HOME, free ports, the fake
// agent), drives Debian's chromium through playwright-core and its CDP session,
// and writes its section of BENCHMARKS.md (between <!-- bench:ui:start --> and
// <!-- bench:ui:end -->), like the Go programs of bench/cmd.
//
// Measures:
//   - JavaScript shipped for the first load of a session: every script response
//     of a fresh browser context until the session shows its last line, gzipped
//     here (level 9), and what loads after (lazy chunks) until the network is idle;
//   - time to open a session of 10 000 messages (navigation start to the last
//     line's [data-sid] in the page, median of 5 warm loads) and the JS heap it
//     holds (CDP Runtime.getHeapUsage after HeapProfiler.collectGarbage);
//   - frames per second (requestAnimationFrame) while the fake agent streams 50
//     messages a second (fakeclaude FLOOD), in a fresh session and in the 10 000-
//     message one.
//
//   node bench/ui/uibench.mjs [-write=false]     (make bench-ui)
import { execFile } from 'node:child_process';
import { gzipSync } from 'node:zlib';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { ROOT, until } from '../../web/e2e/lib/stack.mjs';
import { openBench, writeSection } from './lib.mjs';

const run = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));
const write = !process.argv.includes('-write=false');

const SEED_LINES = 10_000;
const OPEN_RUNS = 5;
const FLOOD = 500; // messages, 20 ms apart: 10 s
const FPS_WINDOWS = 3; // consecutive windows of FPS_WINDOW_MS; the median is reported
const FPS_WINDOW_MS = 2500;

const log = (s) => process.stderr.write(`uibench: ${s}\n`);

const { info, stop, browser, api, newSession } = await openBench();



/** A signed-in context; fresh (no cache, no service worker) each time. */
async function context(viewport = { width: 1280, height: 800 }) {
  const ctx = await browser.newContext({ baseURL: info.baseURL, viewport });
  const res = await ctx.request.post('/api/login', { data: { password: info.password } });
  if (!res.ok()) throw new Error(`login: ${res.status()}`);
  return ctx;
}

/**
 * A page of the gateway's origin that is not the app, for play(): the web app
 * manifest (the login page's CSP forbids sockets; a page the browser makes up
 * itself would fail Chromium's local-network checks).
 * @param {import('playwright-core').BrowserContext} ctx
 */
async function blankPage(ctx) {
  const page = await ctx.newPage();
  await page.goto('/manifest.json');
  return page;
}

/**
 * Plays prompts on a session over its /chat socket, from inside a signed-in
 * page (the app is not involved): allows every permission request and waits for
 * each turn's result.
 * @param {import('playwright-core').Page} page
 * @param {string} id
 * @param {string[]} prompts
 * @param {boolean} [wait] wait for the last turn's result
 */
async function play(page, id, prompts, wait = true) {
  await page.evaluate(async ({ id, prompts, wait }) => {
    const ws = new WebSocket(`${location.origin.replace(/^http/, 'ws')}/chat?session=${id}`);
    /** @type {(v?: unknown) => void} */
    let turnDone = () => {};
    ws.onmessage = (ev) => {
      const f = JSON.parse(ev.data);
      if (f.type === 'permission_request' && !f.replay) ws.send(JSON.stringify({ type: 'permission_response', request_id: f.request_id, behavior: 'allow' }));
      if (f.type === 'agent_message' && f.data?.type === 'result') turnDone();
    };
    await new Promise((resolve, reject) => { ws.onopen = resolve; ws.onerror = reject; });
    for (const [i, p] of prompts.entries()) {
      const done = new Promise((r) => { turnDone = r; });
      ws.send(JSON.stringify({ type: 'user_message', content: p }));
      if (wait || i < prompts.length - 1) await done;
    }
    /** @type {any} */ (window).__benchSocket = ws;
  }, { id, prompts, wait });
}

/**
 * A session of n lines: a template session plays a few turns with the fake agent
 * (text, code, a Bash tool call allowed, a streamed reply), and its stored log is
 * copied in PostgreSQL, over and over, with new message ids, up to n lines.
 */
async function seed(n) {
  const tmpl = await newSession('uibench template');
  const ctx = await context();
  const page = await blankPage(ctx);
  await play(page, tmpl.session_id, ['hello', 'CODE', 'RUN_BASH', 'SLOW 5', 'ECHO a prompt of a few words']);
  await ctx.close();
  const big = await newSession(`uibench ${n} messages`);
  const { messages } = await api('GET', `/api/sessions/${tmpl.session_id}/logs/messages?limit=5000`);
  const k = messages.length;
  const sql = `
BEGIN;
INSERT INTO session_messages (session_id, line, kind, payload)
SELECT :'big', (g - 1) * ${k} + t.line, t.kind,
	CASE WHEN t.payload #> '{message,id}' IS NOT NULL
		THEN jsonb_set(t.payload, '{message,id}', to_jsonb((t.payload #>> '{message,id}') || '_' || g))
		ELSE t.payload END
FROM generate_series(1, ${Math.ceil(n / k)}) AS g, session_messages AS t
WHERE t.session_id = :'tmpl' AND (g - 1) * ${k} + t.line <= ${n};
UPDATE sessions SET next_line = ${n}, provider_locked = true,
	turns = (SELECT count(*) FROM session_messages WHERE session_id = :'big' AND payload ->> 'type' = 'result')
WHERE id = :'big';
COMMIT;`;
  // The ids are the server's (A-Z, 2-7): safe to put in the SQL text.
  await run('psql', [info.databaseURL, '-v', 'ON_ERROR_STOP=1', '-q', '-c', sql.replace(/:'(\w+)'/g, (_, v) => `'${v === 'big' ? big.session_id : tmpl.session_id}'`)]);
  const last = await api('GET', `/api/session/${big.session_id}`);
  if (last.last_line !== n) throw new Error(`seeded session has last_line ${last.last_line}, want ${n}`);
  log(`seeded ${big.session_id} with ${n} lines (a ${k}-line template repeated)`);
  return big;
}

/** The session's URL in the app: open / and click its sidebar link. */
async function sessionURL(title) {
  const ctx = await context();
  const page = await ctx.newPage();
  await page.goto('/');
  await page.getByRole('navigation', { name: 'Sessions', exact: true }).getByRole('link', { name: new RegExp(`^${title}`) }).first().click();
  await until(async () => new URL(page.url()).pathname !== '/', { timeoutMs: 15_000, what: 'the session URL' });
  const url = page.url();
  await ctx.close();
  return url;
}

/**
 * Records, from navigation start, when the selector first matches (performance.now()).
 * @param {import('playwright-core').Page} page
 * @param {string} selector
 */
async function watchFor(page, selector) {
  await page.addInitScript((selector) => {
    const w = /** @type {any} */ (window);
    w.__benchSeen = null;
    const check = () => {
      if (w.__benchSeen === null && document.querySelector(selector)) w.__benchSeen = performance.now();
    };
    new MutationObserver(check).observe(document, { childList: true, subtree: true });
  }, selector);
  return () => until(() => page.evaluate(() => /** @type {any} */ (window).__benchSeen), { timeoutMs: 60_000, what: selector });
}

/** JS shipped: scripts until the last line shows, then until the network is idle. */
async function measureJS(url, selector) {
  const ctx = await context();
  const page = await ctx.newPage();
  /** @type {{url: string, raw: number, gz: number, phase: string}[]} */
  const scripts = [];
  let phase = 'first';
  const pending = [];
  page.on('response', (res) => {
    const type = res.request().resourceType();
    const ct = res.headers()['content-type'] || '';
    if (type !== 'script' && !/javascript/.test(ct)) return;
    const p = phase;
    pending.push(res.body().then((b) => scripts.push({ url: new URL(res.url()).pathname, raw: b.length, gz: gzipSync(b, { level: 9 }).length, phase: p })).catch(() => {}));
  });
  const seen = await watchFor(page, selector);
  await page.goto(url);
  await seen();
  await Promise.all(pending);
  // The entry: what index.html loads itself (its module script and preloads);
  // the rest was imported on demand (e.g. the highlighter for a code block).
  const entry = new Set(await page.evaluate(() => Array.from(document.querySelectorAll('script[src], link[rel="modulepreload"]'),
    (el) => new URL(/** @type {any} */ (el).src || /** @type {any} */ (el).href).pathname)));
  phase = 'later';
  await page.waitForLoadState('networkidle');
  await Promise.all(pending);
  await ctx.close();
  const sum = (ph, k) => scripts.filter((s) => s.phase === ph).reduce((a, s) => a + s[k], 0);
  const entryGz = scripts.filter((s) => s.phase === 'first' && entry.has(s.url)).reduce((a, s) => a + s.gz, 0);
  return {
    entryGz,
    first: { count: scripts.filter((s) => s.phase === 'first').length, raw: sum('first', 'raw'), gz: sum('first', 'gz') },
    later: { count: scripts.filter((s) => s.phase === 'later').length, raw: sum('later', 'raw'), gz: sum('later', 'gz') },
    files: scripts,
  };
}

/**
 * The selector of the last line the page renders as an element of its own
 * ([data-sid] or [data-line]; a line folded into another block, such as a tool
 * result, has none): found after a full load, and checked to be near the end.
 * @param {string} url
 * @param {string} id
 * @param {number} n the session's last line
 */
async function lastRendered(url, id, n) {
  const ctx = await context();
  const page = await ctx.newPage();
  await page.goto(url);
  await page.getByRole('status', { name: 'Connection', exact: true }).filter({ hasText: new RegExp(`line ${n}\\b`) }).waitFor({ timeout: 60_000 });
  const last = await until(async () => {
    const l = await page.evaluate((id) => Math.max(0, ...Array.from(document.querySelectorAll('[data-sid], [data-line]'), (el) => {
      const sid = el.getAttribute('data-sid');
      if (sid) return sid.startsWith(`${id}:`) ? Number(sid.slice(id.length + 1)) : 0;
      return Number(el.getAttribute('data-line')) || 0;
    })), id);
    return l >= n - 10 ? l : 0;
  }, { timeoutMs: 60_000, what: `a rendered line near ${n}` });
  await ctx.close();
  return { line: last, selector: `[data-sid="${id}:${last}"], [data-line="${last}"]` };
}

/** Time to open the big session (warm: the app's files cached) and the heap it holds. */
async function measureOpen(url, selector) {
  const ctx = await context();
  const page = await ctx.newPage();
  const cdp = await ctx.newCDPSession(page);
  await page.goto(url); // warm the cache (and the service worker, if any)
  await page.locator(selector).first().waitFor({ state: 'attached', timeout: 60_000 });
  const times = [];
  const seen = await watchFor(page, selector);
  for (let i = 0; i < OPEN_RUNS; i++) {
    await page.reload();
    times.push(await seen());
  }
  await cdp.send('HeapProfiler.enable');
  await cdp.send('HeapProfiler.collectGarbage');
  const heap = await cdp.send('Runtime.getHeapUsage');
  const nodes = await page.evaluate(() => document.getElementsByTagName('*').length);
  await ctx.close();
  times.sort((a, b) => a - b);
  return { median: times[Math.floor(times.length / 2)], times, heapUsed: heap.usedSize, nodes };
}

/** Frames per second in the page at url while FLOOD streams into session id. */
async function measureFPS(url, id, selector) {
  const ctx = await context();
  const page = await ctx.newPage();
  await page.goto(url);
  await page.locator(selector || 'body').first().waitFor({ state: 'attached', timeout: 60_000 });
  // The prompt goes from another context: a second tab of this one would put the
  // measured page in the background, where Chromium throttles its frames.
  const driverCtx = await context();
  const driver = await blankPage(driverCtx);
  await play(driver, id, [`FLOOD ${FLOOD}`], false);
  await page.bringToFront();
  // Start counting once the stream reaches the page, for a fixed window.
  await page.getByText(`Line 25 of ${FLOOD}`).first().waitFor({ timeout: 30_000 });
  /** @type {{frames: number, ms: number, deltas: number[]}[]} */
  const windows = await page.evaluate(({ n, windowMs }) => new Promise((resolve) => {
    const out = [];
    let deltas = [];
    let last = performance.now();
    let start = last;
    const tick = (t) => {
      deltas.push(t - last);
      last = t;
      if (t - start >= windowMs) {
        out.push({ frames: deltas.length, ms: t - start, deltas });
        deltas = [];
        start = t;
        if (out.length === n) return resolve(out);
      }
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  }), { n: FPS_WINDOWS, windowMs: FPS_WINDOW_MS });
  const fpsOf = (w) => (w.frames * 1000) / w.ms;
  const byFps = [...windows].sort((a, b) => fpsOf(a) - fpsOf(b));
  const r = byFps[Math.floor(byFps.length / 2)];
  const visible = await page.evaluate(() => document.visibilityState);
  // Let the stream end before the next measure.
  await until(async () => !(await api('GET', `/api/session/${id}`)).agent_running, { timeoutMs: 60_000, what: 'the end of the stream' });
  await driverCtx.close();
  await ctx.close();
  const sorted = [...r.deltas].sort((a, b) => a - b);
  return {
    fps: fpsOf(r),
    all: windows.map(fpsOf),
    p99: sorted[Math.floor(sorted.length * 0.99)],
    worst: sorted.at(-1),
    long: r.deltas.filter((d) => d > 50).length,
    visible,
  };
}

function kb(n) { return `${(n / 1024).toFixed(1)} KB`; }
function mb(n) { return `${(n / 1024 / 1024).toFixed(1)} MB`; }


let failed = false;
try {
  const big = await seed(SEED_LINES);
  const url = await sessionURL(big.title);
  const last = await lastRendered(url, big.session_id, SEED_LINES);
  log(`the last line rendered as an element: ${last.line}`);

  log('JavaScript shipped');
  const js = await measureJS(url, last.selector);
  log(`first load: ${js.first.count} scripts, ${kb(js.first.gz)} gzipped; later ${kb(js.later.gz)}`);
  log('opening the 10 000-message session');
  const open = await measureOpen(url, last.selector);
  log(`open: median ${open.median.toFixed(0)} ms ${JSON.stringify(open.times.map(Math.round))}, heap ${mb(open.heapUsed)}`);

  log('frames per second while 50 messages a second stream in');
  const fresh = await newSession('uibench stream');
  // The app's route for a session, learnt from the big one's.
  const freshURL = url.replace(big.session_id, fresh.session_id);
  if (freshURL === url) throw new Error(`the session's URL ${url} does not hold its id`);
  const fpsFresh = await measureFPS(freshURL, fresh.session_id, '');
  log(`fresh session: ${fpsFresh.fps.toFixed(1)} fps, p99 frame ${fpsFresh.p99.toFixed(1)} ms (page ${fpsFresh.visible})`);
  const fpsBig = await measureFPS(url, big.session_id, last.selector);
  log(`10 000-message session: ${fpsBig.fps.toFixed(1)} fps, p99 frame ${fpsBig.p99.toFixed(1)} ms`);

  const { stdout: commit } = await run('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT });
  const { stdout: dirty } = await run('git', ['status', '--porcelain', '--', 'web', 'services/gateway'], { cwd: ROOT });
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  const load = os.loadavg().map((l) => l.toFixed(1)).join(' ');
  const when = new Date().toISOString().replace('T', ' ').slice(0, 16);
  const verdict = (ok) => (ok ? 'met' : 'not met');
  const md = `## Browser UI

Run ${when} UTC on ${cpu}, nproc ${os.cpus().length}, Chromium ${browser.version()} (headless, Debian's package), the app built from commit ${commit.trim()}${dirty.trim() ? ' plus uncommitted changes' : ''}. Reproduce with \`make bench-ui\` (\`node bench/ui/uibench.mjs\`; \`-write=false\` prints without writing here). The stack is started as \`make run\` does, with the fake agent; everything shares the machine's CPUs (load average at the end of the run: ${load}).

| Measure | Goal | svc-code | Peers (shared/ui.md) | Verdict |
|---|---|---|---|---|
| JavaScript for the first load of a session, gzipped | ≤ 100 KB | ${kb(js.first.gz)} (${js.first.count} file${js.first.count === 1 ? '' : 's'}, ${kb(js.first.raw)} raw): the entry ${kb(js.entryGz)}, imported on demand for this session's content ${kb(js.first.gz - js.entryGz)} | 300 KB to several MB (React alone ~60 KB; CCUI raised Vite's chunk warning to 1 MB; Happy's Skia wasm ≥ 4 MiB); none published | ${verdict(js.first.gz <= 100 * 1024)} |
| Open a session of ${SEED_LINES.toLocaleString('en')} messages (navigation to its last line shown, median of ${OPEN_RUNS}) | ≤ 1 s | ${(open.median / 1000).toFixed(2)} s (${open.times.map((t) => (t / 1000).toFixed(2)).join(', ')}) | none published (CCUI#386: 500 messages took ~20 load cycles) | ${verdict(open.median <= 1000)} |
| JS heap holding it (after a GC) | ≤ 50 MB | ${mb(open.heapUsed)} (${open.nodes.toLocaleString('en')} DOM elements) | none published (VK#2313: a tab died at a 3.9 GB heap) | ${verdict(open.heapUsed <= 50 * 1024 * 1024)} |
| Frames per second while 50 messages a second stream in (fresh session) | 60 | ${fpsFresh.fps.toFixed(1)} (windows ${fpsFresh.all.map((f) => f.toFixed(1)).join(', ')}; median window's p99 frame ${fpsFresh.p99.toFixed(1)} ms, worst ${fpsFresh.worst.toFixed(1)} ms, ${fpsFresh.long} frame(s) over 50 ms) | none published | ${verdict(fpsFresh.fps >= 57)} |
| the same, in the ${SEED_LINES.toLocaleString('en')}-message session | 60 | ${fpsBig.fps.toFixed(1)} (windows ${fpsBig.all.map((f) => f.toFixed(1)).join(', ')}; median window's p99 frame ${fpsBig.p99.toFixed(1)} ms, worst ${fpsBig.worst.toFixed(1)} ms, ${fpsBig.long} frame(s) over 50 ms) | none published | ${verdict(fpsBig.fps >= 57)} |

- JavaScript: every script response of a fresh browser context (no cache, no service worker) from navigating to the session's URL until its last line is in the page, each body gzipped here at level 9 (as the gateway serves the app's assets). Loaded afterwards, until the network was idle (lazy chunks such as the highlighter): ${js.later.count} file${js.later.count === 1 ? '' : 's'}, ${kb(js.later.gz)} gzipped. Files: ${js.files.map((f) => `\`${f.url}\` ${kb(f.gz)}${f.phase === 'later' ? ' (later)' : ''}`).join(', ')}.
- Opening: the log is seeded in PostgreSQL by copying the stored log of a template session (text, a fenced code block, a Bash tool call and its result, a streamed reply, per turn) with fresh message ids; the time runs from navigation start (a reload, the app's files cached) to the moment the last line the app renders as an element of its own (line ${last.line} of ${SEED_LINES}: \`[data-sid]\` or \`[data-line]\`; later lines are folded into earlier blocks) is in the page; the heap is Chromium's \`Runtime.getHeapUsage\` after \`HeapProfiler.collectGarbage\`.
- Frames: \`requestAnimationFrame\` callbacks counted in ${FPS_WINDOWS} consecutive windows of ${FPS_WINDOW_MS / 1000} s (the median window is reported), starting once the 25th streamed message shows, while the fake agent's \`FLOOD ${FLOOD}\` sends one assistant message every 20 ms (sent over a second page's socket, so the measured page only renders). Headless Chromium paces frames at 60 Hz; "met" counts 57 or more.
`;
  process.stdout.write(`${md}\n`);
  if (write) {
    await writeSection('ui', md);
    log('wrote the Browser UI section of BENCHMARKS.md');
  }
} catch (err) {
  failed = true;
  console.error(err);
} finally {
  await browser.close();
  await stop();
}
process.exit(failed ? 1 : 0);
