// @ts-check
// clibench: opening a 100 MB Claude Code transcript in the terminal-session
// view (issue 19 item 2; goal: under a second), in Chromium through
// playwright-core. It starts a stack as the e2e tests do (or uses the one in
// E2E_STACK), writes into the stack's HOME (~/.claude/projects/...) two
// synthetic transcripts made of the real records of the test fixture
// (services/chat/internal/clisessions/testdata/claude, Claude Code 2.1.330:
// prompts, answers, a Bash call and its result, and its many bookkeeping
// records) repeated with their prompts and answers numbered, each ending with
// a distinct assistant record: one of 100 MiB and, as the baseline of the same
// run, one of 1 MiB. It measures, the median of 5 runs after one warm-up:
//   - open: navigation start (page.goto /cli/claude/{id}) to the last record's
//     text in the transcript;
//   - follow: a line appended to the file (by this program) to its text in
//     the page (the page long-polls ?after=).
// It writes its section of BENCHMARKS.md (<!-- bench:cli:start --> ... end).
//
//   node bench/ui/clibench.mjs [-write=false]
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { appendFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ROOT, until } from '../../web/e2e/lib/stack.mjs';
import { openBench, writeSection } from './lib.mjs';

const run = promisify(execFile);
const write = !process.argv.includes('-write=false');
const RUNS = 5;
const MiB = 1024 * 1024;
const log = (s) => process.stderr.write(`clibench: ${s}\n`);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const FIXTURES = path.join(ROOT, 'services/chat/internal/clisessions/testdata/claude');
const FIXTURE_ID = '4f76bc7a-af23-4a3d-9b3e-05f8f0f1c03b';
const FIXTURE_CWD = '/tmp/cliwork/proj';

async function fixture() {
  const entries = await readdir(FIXTURES, { recursive: true });
  const f = entries.find((e) => e.endsWith('.jsonl'));
  if (!f) throw new Error(`no .jsonl fixture under ${FIXTURES}`);
  return readFile(path.join(FIXTURES, f), 'utf8');
}

/** An assistant text record as Claude Code writes it. */
function assistantText(id, cwd, text) {
  return JSON.stringify({
    parentUuid: null, isSidechain: false, type: 'assistant', uuid: randomUUID(), timestamp: new Date().toISOString(),
    message: { id: `msg_${randomUUID()}`, type: 'message', role: 'assistant', model: 'claude-opus-5-5', content: [{ type: 'text', text }], stop_reason: 'end_turn', usage: { input_tokens: 1, output_tokens: 1 } },
    userType: 'external', cwd, sessionId: id, version: '2.1.330',
  }) + '\n';
}

/**
 * Writes a transcript of about `bytes` into the stack's HOME: the fixture's
 * records again and again (its prompts and answers numbered), then a last
 * assistant record whose text is returned.
 */
async function writeTranscript(home, cwd, bytes) {
  const id = randomUUID();
  const src = (await fixture()).replace(/\n?$/, '\n').replaceAll(FIXTURE_ID, id).replaceAll(FIXTURE_CWD, cwd);
  const dir = path.join(process.env.CLAUDE_CONFIG_DIR || path.join(home, '.claude'), 'projects', cwd.replace(/[^A-Za-z0-9]/g, '-'));
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, `${id}.jsonl`);
  await writeFile(file, '');
  let size = 0;
  let lines = 0;
  const batch = [];
  for (let i = 1; size < bytes; i++) {
    const rep = i === 1 ? src : src.replaceAll('Say hello', `Say hello (turn ${i})`).replaceAll('Hello from the fake model.', `Hello from the fake model (turn ${i}).`).replaceAll('RUN_BASH please', `RUN_BASH please (turn ${i})`);
    batch.push(rep);
    size += Buffer.byteLength(rep);
    lines += rep.split('\n').length - 1;
    if (batch.length >= 50) await appendFile(file, batch.splice(0).join(''));
  }
  const last = `clibench: the last record of ${id}`;
  const tail = assistantText(id, cwd, last);
  batch.push(tail);
  await appendFile(file, batch.join(''));
  return { id, file, last, size: size + Buffer.byteLength(tail), lines: lines + 1, cwd };
}

/** Records in the page when a text first shows in the transcript (Date.now, shared with this program). */
const watcher = () => {
  const w = /** @type {any} */ (window);
  // want: the text waited for; until it is set, the last record of any
  // transcript (only one is opened per page load).
  w.__cb = { want: null, at: null, nav: null };
  const check = () => {
    const t = document.querySelector('[aria-label="Terminal session transcript"]');
    const text = t?.textContent;
    if (!text) return;
    if (w.__cb.nav === null && text.includes('clibench: the last record of ')) w.__cb.nav = performance.now();
    if (w.__cb.want && w.__cb.at === null && text.includes(w.__cb.want)) w.__cb.at = Date.now();
  };
  w.__cbCheck = check;
  new MutationObserver(check).observe(document, { childList: true, subtree: true, characterData: true });
};

const { info, stop, browser } = await openBench();
let failed = false;
try {
  const projects = path.join(info.home, 'projects');
  await mkdir(projects, { recursive: true });
  const cwd = path.join(projects, 'clibench');
  await mkdir(cwd, { recursive: true });
  const t0 = Date.now();
  const big = await writeTranscript(info.home, cwd, 100 * MiB);
  log(`wrote ${(big.size / MiB).toFixed(1)} MiB, ${big.lines.toLocaleString('en')} records in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  const small = await writeTranscript(info.home, cwd, 1 * MiB);

  const ctx = await browser.newContext({ baseURL: info.baseURL, viewport: { width: 1280, height: 800 } });
  const login = await ctx.request.post('/api/login', { data: { password: info.password } });
  if (!login.ok()) throw new Error(`login: ${login.status()}`);
  const page = await ctx.newPage();
  await page.addInitScript(watcher);

  /** Opens t's page and returns navigation start to its last record shown, in ms. */
  async function open(t) {
    await page.goto('about:blank');
    await page.goto(`/cli/claude/${t.id}`, { waitUntil: 'commit' });
    await page.getByText(t.last, { exact: true }).waitFor({ timeout: 60_000 });
    const r = await until(() => page.evaluate(() => /** @type {any} */ (window).__cb.nav), { timeoutMs: 60_000, what: `the last record of ${t.id}` });
    return /** @type {number} */ (r);
  }
  /** Appends a record to t and returns the time until the page shows it, in ms. */
  async function follow(t, i) {
    const text = `clibench: appended record ${i} ${randomUUID()}`;
    await page.evaluate((want) => { const w = /** @type {any} */ (window); w.__cb.want = want; w.__cb.at = null; }, text);
    // The page follows the file once its first page is shown: give its long poll a moment to be in place.
    await page.getByRole('status', { name: 'Following' }).filter({ hasText: 'following the file' }).waitFor({ timeout: 30_000 });
    const before = Date.now();
    await appendFile(t.file, assistantText(t.id, t.cwd, text));
    const at = await until(() => page.evaluate(() => /** @type {any} */ (window).__cb.at), { timeoutMs: 60_000, what: `appended record ${i}` });
    return /** @type {number} */ (at) - before;
  }

  const results = {};
  for (const [name, t] of /** @type {const} */ ([['big', big], ['small', small]])) {
    await open(t); // warm-up: the app's files cached, the file's newlines counted once, the page cache warm
    const opens = [];
    for (let i = 0; i < RUNS; i++) {
      opens.push(await open(t));
      log(`${name} open ${i + 1}: ${opens[i].toFixed(0)} ms`);
    }
    await follow(t, 0); // warm-up
    const follows = [];
    for (let i = 1; i <= RUNS; i++) {
      follows.push(await follow(t, i));
      log(`${name} follow ${i}: ${follows[i - 1].toFixed(0)} ms`);
    }
    results[name] = { opens, follows };
  }
  const nodes = await page.evaluate(() => document.getElementsByTagName('*').length);
  await ctx.close();

  const { stdout: commit } = await run('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT });
  const { stdout: dirty } = await run('git', ['status', '--porcelain', '--', 'web', 'services'], { cwd: ROOT });
  const when = new Date().toISOString().replace('T', ' ').slice(0, 16);
  const load = os.loadavg().map((l) => l.toFixed(1)).join(' ');
  const ms = (xs) => `${median(xs).toFixed(0)} ms (${xs.map((x) => x.toFixed(0)).join(', ')})`;
  const ratio = (a, b) => (median(a) / median(b)).toFixed(2);
  const md = `## Terminal sessions: opening a 100 MB Claude Code transcript

Run ${when} UTC on ${os.cpus()[0]?.model ?? 'unknown CPU'}, nproc ${os.cpus().length}, Chromium ${browser.version()} (headless, Debian's package), the app built from commit ${commit.trim()}${dirty.trim() ? ' plus uncommitted changes' : ''}; load average at the end ${load} (the machine is shared with other builds and tests: figures vary with it). Reproduce with \`node bench/ui/clibench.mjs\` (\`-write=false\` prints without writing here; \`make bench-ui\` runs it with the others). Goal (issue 19): open in under a second.

The transcripts, written into the stack's \`~/.claude/projects/\`: the records of the test fixture (Claude Code 2.1.330: prompts, answers, a Bash call and its result, and the bookkeeping records it writes, attachments and API request shapes of up to 57 KB) repeated with their prompts and answers numbered, then one assistant record: ${(big.size / MiB).toFixed(1)} MiB, ${big.lines.toLocaleString('en')} records, and as the baseline of the same run ${(small.size / MiB).toFixed(1)} MiB, ${small.lines.toLocaleString('en')} records. Each figure is the median of ${RUNS} runs after one warm-up (the runs in brackets), the file in the page cache.

| Measure | 100 MiB | 1 MiB (baseline) | ratio |
|---|---|---|---|
| Open: navigation to /cli/claude/{id} to the last record's text in the page | ${ms(results.big.opens)} | ${ms(results.small.opens)} | ${ratio(results.big.opens, results.small.opens)} |
| Follow: a line appended to the file to its text in the page | ${ms(results.big.follows)} | ${ms(results.small.follows)} | ${ratio(results.big.follows, results.small.follows)} |

- Open: from a navigation (after about:blank, so the whole app starts again) to the moment a MutationObserver sees the last record's text in the transcript: the app's start, the session's entry and its newest page (\`GET /api/cli-sessions/claude/{id}/messages?limit=100\`, read backwards from the end of the file), rendered with the live session's blocks. A ratio near 1 says the opening does not grow with the file.
- Follow: from this program's append (Date.now, the same clock as the page's) to the text in the page, through the page's long poll (\`?after=<offset>&wait=\`); the server looks at the file every 100 ms while it waits (\`clisessions.PollEvery\`), so this is up to 100 ms of polling phase plus the request and the render, whatever the file's size: its ratio is that phase, not the size. ${nodes.toLocaleString('en')} DOM elements in the page at the end.
`;
  process.stdout.write(`${md}\n`);
  if (write) {
    await writeSection('cli', md);
    log('wrote the cli section of BENCHMARKS.md');
  }
} catch (err) {
  failed = true;
  log(`failed: ${err instanceof Error ? err.stack : err}`);
} finally {
  await browser.close();
  await stop();
}
process.exit(failed ? 1 : 0);
