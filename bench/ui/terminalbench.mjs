// @ts-check
// terminalbench: the terminal pane's benchmark (issue 18). It starts a stack as
// the e2e tests do (web/e2e/lib/stack.mjs), drives Debian's chromium through
// playwright-core, and writes its section of BENCHMARKS.md (between
// <!-- bench:termui:start --> and <!-- bench:termui:end -->).
//
// Measures, on one shell of the stack (through the gateway, flow=1):
//   - `cat` of a file of base64 lines rendered through the page: bytes from the
//     keystroke until xterm.js has drawn the file's last line (the page's test
//     hook window.__svcTerm: a capture between two markers of the file, and the
//     write callbacks), as MB/s; beside it the same socket read by a page that
//     does not render (it acks each frame at once), and the terminal service's
//     own figure through the gateway from `make bench-terminal` (bench/cmd/
//     termbench, run here just before with -wetty=false);
//   - keystroke echo through the page: a key typed into xterm.js (its input(),
//     as the keyboard does) until its echo is drawn, p50 and p99.
//
//   node bench/ui/terminalbench.mjs [-write=false] [-size=MB] [-echoes=N] [-termbench=false]
import { execFile } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { readFile, writeFile, mkdtemp, rm, readdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ROOT, until } from '../../web/e2e/lib/stack.mjs';
import { openBench, writeSection } from './lib.mjs';

const run = promisify(execFile);

/** @param {string} name @param {string} def */
const arg = (name, def) => process.argv.find((a) => a.startsWith(`-${name}=`))?.split('=')[1] ?? def;
const write = arg('write', 'true') !== 'false';
const SIZE_MB = Number(arg('size', '128'));
const ECHOES = Number(arg('echoes', '500'));
const CAT_RUNS = Number(arg('runs', '3'));
const withTermbench = arg('termbench', 'true') !== 'false';
const RENDERERS = arg('renderers', 'webgl,dom').split(',').filter((r) => r && r !== 'none');
const PROFILE = arg('profile', 'false') !== 'false';
const GOAL_MBS = 30;

const log = (s) => process.stderr.write(`terminalbench: ${s}\n`);

/** The terminal service's own figures: `make bench-terminal` without WeTTY, one round, into a scratch file. */
async function termbench() {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'terminalbench-'));
  const out = path.join(dir, 'BENCHMARKS.md');
  await writeFile(out, '');
  const args = ['run', './bench/cmd/termbench', '-wetty=false', '-r', '1', '-size', String(Math.max(64, SIZE_MB)), '-echoes', '500', '-interrupts', '1', '-quiet-wait', '5s', '-o', out];
  log(`go ${args.join(' ')}`);
  await run('go', args, { cwd: ROOT, maxBuffer: 64 << 20, timeout: 1_200_000 });
  const md = await readFile(out, 'utf8');
  await rm(dir, { recursive: true, force: true });
  const row = (name) => {
    const line = md.split('\n').find((l) => l.startsWith(`| ${name}`));
    const cells = line?.split('|').map((c) => c.trim()) ?? [];
    return { mbs: parseFloat(cells[2]), p50: cells[4], p99: cells[5] };
  };
  return { gateway: row('through the gateway'), direct: row('terminal service, direct'), raw: row('raw PTY') };
}

const service = withTermbench ? await termbench() : null;
if (service) log(`termbench: gateway ${service.gateway.mbs} MB/s, echo p99 ${service.gateway.p99}`);

const { info, stop, browser, api, newSession } = await openBench();



/** A signed-in context; renderer: the terminal's (localStorage svc-term-renderer). */
async function context(renderer = 'auto', viewport = { width: 1280, height: 800 }) {
  const ctx = await browser.newContext({ baseURL: info.baseURL, viewport });
  // "dom-nobatch": the DOM renderer with a write per frame (localStorage svc-term-batch=off), the pane before gathering.
  const [r, nobatch] = renderer.split('-');
  await ctx.addInitScript(([r, off]) => {
    localStorage.setItem('svc-term-renderer', r);
    if (off) localStorage.setItem('svc-term-batch', 'off');
  }, [r, nobatch === 'nobatch' ? '1' : '']);
  const res = await ctx.request.post('/api/login', { data: { password: info.password } });
  if (!res.ok()) throw new Error(`login: ${res.status()}`);
  return ctx;
}

/** A file of base64 lines of 76 characters between BEGIN-tag and END-tag lines; the bytes the terminal sends for it (LF as CR LF). */
async function makeFile(file, tag, mb) {
  const out = createWriteStream(file);
  let sent = 0;
  const put = async (s) => {
    if (!out.write(s)) await once(out, 'drain');
  };
  await put(`BEGIN-${tag}\n`);
  let n = 0;
  while (n < mb * 1e6) {
    const lines = [];
    for (let i = 0; i < 4096; i++) lines.push(randomBytes(57).toString('base64'));
    const chunk = lines.join('\n') + '\n';
    n += chunk.length;
    sent += chunk.length + lines.length;
    await put(chunk);
  }
  await put(`END-${tag}\n`);
  out.end();
  await once(out, 'finish');
  return { fileBytes: n, termBytes: sent + 2 + `END-${tag}`.length };
}

/** Waits in the page until terminal id has drawn the capture's end and nothing is pending; returns performance.now(). */
function drawnAll(page, id) {
  return page.evaluate(async (id) => {
    const h = /** @type {any} */ (window).__svcTerm;
    for (;;) {
      const i = h.info(id);
      if (i.capture?.state === 'done' && i.pending === 0) return { t: performance.now(), info: i };
      await new Promise((r) => setTimeout(r, 5));
    }
  }, id);
}

async function catThroughPage(page, id, tag, file) {
  await page.evaluate(({ id, tag }) => /** @type {any} */ (window).__svcTerm.capture(id, `BEGIN-${tag}`, `END-${tag}`), { id, tag });
  const t0 = await page.evaluate(({ id, file }) => {
    const h = /** @type {any} */ (window).__svcTerm;
    const t = performance.now();
    h.input(id, `clear; cat ${file}\r`);
    return t;
  }, { id, file });
  const { t, info: i } = await drawnAll(page, id);
  return { secs: (t - t0) / 1000, bytes: i.capture.bytes, hash: i.capture.hash, info: i };
}

/** The same socket in a page that does not render: counts bytes until the marker, acks every frame at once. */
async function catSocketOnly(ctx, id, tag, file, cwd) {
  const page = await ctx.newPage();
  await page.goto('/manifest.json');
  const c0 = await browserCPU();
  const out = await page.evaluate(async ({ id, tag, file, cwd }) => {
    const ws = new WebSocket(`${location.origin.replace(/^http/, 'ws')}/ws/terminal?session=${encodeURIComponent(id)}&flow=1&cwd=${encodeURIComponent(cwd)}`);
    ws.binaryType = 'arraybuffer';
    const end = new TextEncoder().encode(`END-${tag}`);
    let offset = 0;
    let bytes = 0;
    let t0 = 0;
    let started = false;
    let tail = '';
    let frames = 0;
    /** @type {any} */
    let screen = null;
    return await new Promise((resolve, reject) => {
      ws.onerror = () => reject(new Error('socket error'));
      ws.onmessage = (ev) => {
        if (typeof ev.data === 'string') {
          const f = JSON.parse(ev.data);
          // A screen (the ring has moved past where this socket starts): its
          // bytes are not output; the stream goes on at its offset.
          if (f.type === 'screen') screen = f;
          if (f.type === 'connected') {
            offset = f.offset;
            // Skip the replay: start once the command is typed.
            setTimeout(() => {
              started = true;
              t0 = performance.now();
              ws.send(new TextEncoder().encode(`cat ${file}\r`));
            }, 300);
          }
          return;
        }
        const b = new Uint8Array(ev.data);
        if (screen) {
          offset = screen.offset;
          screen = null;
          ws.send(JSON.stringify({ type: 'ack', offset }));
          return;
        }
        offset += b.length;
        // Every frame is acked, the replay before the command too: unacked, the
        // replay would fill the window and hold the shell (flow control).
        ws.send(JSON.stringify({ type: 'ack', offset }));
        if (!started) return;
        bytes += b.length;
        frames++;
        const s = tail + new TextDecoder('latin1').decode(b.subarray(Math.max(0, b.length - 1024)));
        if (s.includes(`END-${tag}`) && bytes > 1000) {
          ws.close();
          resolve({ secs: (performance.now() - t0) / 1000, bytes, frames });
        }
        tail = s.slice(-end.length);
      };
    });
  }, { id, tag, file, cwd });
  out.cpu = (await browserCPU()) - c0;
  await page.close();
  return out;
}

async function echoThroughPage(page, id, n) {
  return page.evaluate(async ({ id, n }) => {
    const h = /** @type {any} */ (window).__svcTerm;
    const parsed = [];
    const painted = [];
    for (let i = 0; i < n + 20; i++) {
      const drawn = h.nextDrawn(id);
      const t0 = performance.now();
      h.input(id, 'x');
      const t1 = await drawn;
      // xterm.js paints on the next animation frame.
      const t2 = await new Promise((r) => requestAnimationFrame(() => r(performance.now())));
      if (i >= 20) {
        // the first 20 warm up
        parsed.push(t1 - t0);
        painted.push(t2 - t0);
      }
      const erased = h.nextDrawn(id);
      h.input(id, '\x7f');
      await erased;
    }
    return { parsed, painted };
  }, { id, n });
}

/**
 * CPU seconds (user + system) used so far by the browser this script launched
 * (every process under a chromium child of this process): a figure the
 * machine's other load does not change much, unlike the wall clock.
 */
async function browserCPU() {
  const procs = new Map();
  for (const d of await readdir('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const st = await readFile(`/proc/${d}/stat`, 'utf8');
      const comm = st.slice(st.indexOf('(') + 1, st.lastIndexOf(')'));
      const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
      procs.set(Number(d), { comm, ppid: Number(f[1]), cpu: (Number(f[11]) + Number(f[12])) / 100 });
    } catch {
      /* gone */
    }
  }
  const mine = new Set([...procs].filter(([, v]) => v.ppid === process.pid && /chrom/i.test(v.comm)).map(([p]) => p));
  for (let grew = true; grew; ) {
    grew = false;
    for (const [p, v] of procs) if (!mine.has(p) && mine.has(v.ppid)) (mine.add(p), (grew = true));
  }
  let sum = 0;
  for (const p of mine) sum += procs.get(p)?.cpu ?? 0;
  if (process.env.TB_CPU_DETAIL) {
    const by = {};
    for (const p of mine) {
      const t = (await readFile(`/proc/${p}/cmdline`, 'utf8').catch(() => '')).match(/--type=([a-z-]+)/)?.[1] ?? 'browser';
      by[t] = (by[t] ?? 0) + (procs.get(p)?.cpu ?? 0);
    }
    log(`cpu by process: ${JSON.stringify(by)}`);
  }
  return sum;
}

/** The page's main-thread JavaScript profile (CDP Profiler) while fn runs: the functions with the most self time. */
async function profiled(page, fn) {
  if (!PROFILE) return fn();
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Profiler.enable');
  await cdp.send('Profiler.setSamplingInterval', { interval: 500 });
  await cdp.send('Profiler.start');
  const out = await fn();
  const { profile } = await cdp.send('Profiler.stop');
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const n = nodes.get(id);
    const k = `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.split('/').pop()}`;
    const dt = profile.timeDeltas[i] ?? 0;
    self.set(k, (self.get(k) ?? 0) + dt);
    total += dt;
  });
  const top = [...self].sort((a, b) => b[1] - a[1]).slice(0, 20);
  log(`profile (self time, ${(total / 1e6).toFixed(1)} s sampled):\n${top.map(([k, t]) => `  ${((100 * t) / total).toFixed(1).padStart(5)}% ${k}`).join('\n')}`);
  await cdp.detach();
  return out;
}

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];


/** cat runs and echoes through the page with renderer r, in a context (a window) of its own. */
async function measurePage(r) {
  const s = await newSession(`terminalbench ${r}`);
  const id = s.session_id;
  const ctx = await context(r);
  const page = await ctx.newPage();
  await page.goto(`/s/${id}/terminal`);
  await until(async () => page.evaluate((id) => /** @type {any} */ (window).__svcTerm?.info(id).state === 'connected', id).catch(() => false), { timeoutMs: 30_000, what: 'the terminal connected' });
  const runs = [];
  const lost = [];
  for (let n = 0; n < CAT_RUNS; n++) {
    const tag = `${n}-${Math.random().toString(36).slice(2, 8)}`;
    const file = `big-${n}.txt`;
    const want = await makeFile(path.join(s.cwd, file), tag, SIZE_MB);
    const c0 = await browserCPU();
    const got = await profiled(page, () => catThroughPage(page, id, tag, file));
    got.cpu = (await browserCPU()) - c0;
    if (got.bytes !== want.termBytes) lost.push(`run ${n + 1}: ${got.bytes} of ${want.termBytes} bytes drawn`);
    runs.push({ ...got, mbs: got.bytes / 1e6 / got.secs });
    log(`${r} page run ${n}: ${(got.bytes / 1e6).toFixed(1)} MB in ${got.secs.toFixed(2)} s = ${(got.bytes / 1e6 / got.secs).toFixed(1)} MB/s, browser CPU ${got.cpu.toFixed(1)} s = ${(got.bytes / 1e6 / got.cpu).toFixed(1)} MB per CPU-second (${got.info.renderer}, ${got.info.rows}x${got.info.cols}, flow ${got.info.flow}, screens ${got.info.stats.screens}, resyncs ${got.info.stats.resyncs}, catch-ups ${got.info.stats.catchups})`);
    await rm(path.join(s.cwd, file));
  }
  await page.evaluate((id) => /** @type {any} */ (window).__svcTerm.input(id, 'clear\r'), id);
  await new Promise((res) => setTimeout(res, 500)); // the clear drawn before timing keys
  const echoes = await echoThroughPage(page, id, ECHOES);
  const echo = echoes.parsed.sort((a, b) => a - b);
  const paint = echoes.painted.sort((a, b) => a - b);
  log(`${r} echo: p50 ${pct(echo, 0.5).toFixed(2)} ms, p99 ${pct(echo, 0.99).toFixed(2)} ms; to the next frame p50 ${pct(paint, 0.5).toFixed(2)} ms, p99 ${pct(paint, 0.99).toFixed(2)} ms`);
  const info = runs[0].info;
  const gl = await page.evaluate(() => {
    const g = document.createElement('canvas').getContext('webgl2');
    const ext = g?.getExtension('WEBGL_debug_renderer_info');
    return g ? String(ext ? g.getParameter(ext.UNMASKED_RENDERER_WEBGL) : g.getParameter(g.RENDERER)) : 'none';
  });
  await ctx.close();
  const label = `${info.renderer} renderer${r.endsWith('-nobatch') ? ', a write per frame (svc-term-batch=off: the pane before gathering)' : ''}`;
  return { r, gl, label, cpuMB: median(runs.map((x) => x.bytes / 1e6 / x.cpu)), renderer: info.renderer, flow: info.flow, rows: info.rows, cols: info.cols, runs, lost, mbs: median(runs.map((x) => x.mbs)), echo, paint };
}

async function measureSocket() {
  const s = await newSession('terminalbench socket');
  const ctx = await context();
  const out = [];
  for (let n = 0; n < CAT_RUNS; n++) {
    const tag = `s${n}-${Math.random().toString(36).slice(2, 8)}`;
    const file = `big-${n}.txt`;
    await makeFile(path.join(s.cwd, file), tag, SIZE_MB);
    const sock = await catSocketOnly(ctx, s.session_id, tag, file, s.cwd);
    const cpu = sock.cpu;
    out.push({ ...sock, mbs: sock.bytes / 1e6 / sock.secs });
    log(`socket run ${n}: ${(sock.bytes / 1e6).toFixed(1)} MB in ${sock.secs.toFixed(2)} s = ${(sock.bytes / 1e6 / sock.secs).toFixed(1)} MB/s, browser CPU ${cpu.toFixed(1)} s = ${(sock.bytes / 1e6 / cpu).toFixed(1)} MB per CPU-second, ${sock.frames} frames`);
    await rm(path.join(s.cwd, file));
  }
  await ctx.close();
  return out;
}

let failed = false;
try {
  const pages = [];
  for (const r of RENDERERS) pages.push(await measurePage(r));
  const socketRuns = await measureSocket();
  const chromiumVersion = browser.version();
  const sockMBs = median(socketRuns.map((r) => r.mbs));
  const svc = service?.gateway.mbs ?? NaN;
  const bound = Math.min(GOAL_MBS, Number.isFinite(svc) ? svc : GOAL_MBS);
  const commit = (await run('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT })).stdout.trim();
  const dirty = (await run('git', ['status', '--porcelain', '--', 'web/src'], { cwd: ROOT })).stdout.trim() ? ' plus uncommitted changes' : '';
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  const md = `## Terminal pane (browser)

Run ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC on ${cpu}, nproc ${os.cpus().length}, Chromium ${chromiumVersion} (headless, Debian's package), the app built from commit ${commit}${dirty}. Reproduce with \`node bench/ui/terminalbench.mjs\` (\`-write=false\` prints without writing here; \`-size=MB\`, \`-runs=N\`, \`-echoes=N\`). The stack is started as \`make run\` does; everything shares the machine's CPUs (load average at the end of the run: ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}).

| Measure | Goal | svc-code | Verdict |
|---|---|---|---|
${pages.map((p) => `| \`cat\` rendered through the page, xterm.js ${p.label}${p.flow ? ', flow control on' : ', the server without flow control'} | not the bottleneck below ${GOAL_MBS} MB/s: ≥ ${bound.toFixed(1)} MB/s here | ${p.mbs.toFixed(1)} MB/s (runs ${p.runs.map((x) => x.mbs.toFixed(1)).join(', ')}); ${p.cpuMB.toFixed(1)} MB per browser CPU-second${p.lost.length ? `; output lost: ${p.lost.join('; ')}` : ''} | ${p.mbs >= bound && !p.lost.length ? 'met' : 'not met'} |`).join('\n')}
| the same socket read by a page that does not render (acks each frame) | – | ${sockMBs.toFixed(1)} MB/s (runs ${socketRuns.map((r) => r.mbs.toFixed(1)).join(', ')}); ${median(socketRuns.map((r) => r.bytes / 1e6 / r.cpu)).toFixed(1)} MB per browser CPU-second, ${Math.round(median(socketRuns.map((r) => r.bytes / r.frames)) / 1024)} KiB a frame | – |
| the terminal service through the gateway (\`make bench-terminal\`, this session, Go client, no rendering) | – | ${service ? `${service.gateway.mbs} MB/s (direct ${service.direct.mbs} MB/s, raw PTY ${service.raw.mbs} MB/s)` : 'not run (-termbench=false)'} | – |
${pages.map((p) => `| keystroke echo through the page (xterm.js ${p.label}): the key typed into xterm.js until its echo is parsed (write callback), ${ECHOES} keys | p99 ≤ 16 ms (a frame) | p50 ${pct(p.echo, 0.5).toFixed(2)} ms, p99 ${pct(p.echo, 0.99).toFixed(2)} ms | ${pct(p.echo, 0.99) <= 16 ? 'met' : 'not met'} |
| the same until the next animation frame (when xterm.js paints it) | p99 ≤ 33 ms (two frames) | p50 ${pct(p.paint, 0.5).toFixed(2)} ms, p99 ${pct(p.paint, 0.99).toFixed(2)} ms | ${pct(p.paint, 0.99) <= 33 ? 'met' : 'not met'} |`).join('\n')}
| the same without the page (\`make bench-terminal\`, through the gateway) | – | ${service ? `p50 ${service.gateway.p50}, p99 ${service.gateway.p99}` : 'not run'} | – |

- \`cat\`: a file of ${SIZE_MB} MB of base64 lines (76 characters) between two marker lines, in the page cache; the time runs from typing \`cat\` (xterm.js \`input()\`, in the page) until the page has drawn every byte up to the end marker (the test hook's capture, and no write pending in xterm.js); MB is 10^6 bytes of terminal output (CR LF line ends). Median of ${CAT_RUNS} runs. The page is 1280×800 (${pages[0]?.rows}×${pages[0]?.cols} cells), one browser window per renderer (the DOM renderer chosen with localStorage \`svc-term-renderer\`). With flow control (issue 18 item 2) the shell is paced by the page, so the figure is the slower of the page and the service.
- WebGL in this browser: ${pages[0]?.gl} (the pane's \`auto\` takes the DOM renderer where WebGL is drawn by the CPU: SwiftShader, llvmpipe).
- The page that does not render reads another session's terminal through the same gateway, in a window of its own, and acks each frame as it arrives: the socket's figure in the browser.
- Echo: a key given to xterm.js as typed (\`input()\`: onData, the socket as a binary frame, the gateway, the terminal service, the shell's echo back), until the write callback of its echo, and until the animation frame after it (xterm.js paints on frames; headless Chromium runs them at 60 Hz); the key is erased (untimed) before the next; the first 20 are not counted.
<!-- the termbench figures above come from a run started by this script just before the stack; see the Terminal section for how it measures -->
`;
  process.stdout.write(md);
  if (write) await writeSection('termui', md);
} catch (err) {
  failed = true;
  console.error(err);
} finally {
  await browser.close();
  await stop();
}
process.exit(failed ? 1 : 0);
