// @ts-check
// terminalbench: the terminal pane's benchmark (issue 18). It starts a stack as
// the e2e tests do (web/e2e/lib/stack.mjs), drives Debian's chromium over a bare
// DevTools pipe (bench/ui/rawcdp.mjs; -driver=playwright: through playwright-core,
// whose Network domain copies every WebSocket frame to the driver; -driver=raw,playwright
// measures both), and writes its section of BENCHMARKS.md (between
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
// Renderers (-renderers=, default dom,dom-noskip,webgl): dom or webgl (localStorage
// svc-term-renderer), and the variants -noskip (svc-term-skip=off: the pane
// parses every byte, the server does not skip plain-text floods for it) and
// -nobatch (svc-term-batch=off: a write per frame), e.g. webgl-noskip, dom-nobatch.
//
//   node bench/ui/terminalbench.mjs [-write=false] [-size=MB] [-runs=N] [-echoes=N] [-termbench=false]
//     [-renderers=dom,dom-noskip,webgl] [-driver=raw|playwright|raw,playwright] [-profile=true]
import { execFile } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { readFile, writeFile, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ROOT, until } from '../../web/e2e/lib/stack.mjs';
import { openBench, openDriver, writeSection } from './lib.mjs';
import { processTree } from './rawcdp.mjs';

const run = promisify(execFile);

/** @param {string} name @param {string} def */
const arg = (name, def) => process.argv.find((a) => a.startsWith(`-${name}=`))?.split('=')[1] ?? def;
const write = arg('write', 'true') !== 'false';
const SIZE_MB = Number(arg('size', '128'));
const ECHOES = Number(arg('echoes', '500'));
const INTERRUPTS = Number(arg('interrupts', '5'));
const CAT_RUNS = Number(arg('runs', '3'));
const withTermbench = arg('termbench', 'true') !== 'false';
const RENDERERS = arg('renderers', 'dom,dom-noskip,webgl').split(',').filter((r) => r && r !== 'none');
const DRIVERS = /** @type {('raw' | 'playwright')[]} */ (arg('driver', 'raw').split(',').filter(Boolean));
for (const d of DRIVERS) if (d !== 'raw' && d !== 'playwright') throw new Error(`-driver=${d}: raw or playwright`);
const PROFILE = arg('profile', 'false') !== 'false';
const GOAL_MBS = 30;
const VIEWPORT = { width: 1280, height: 800 };
/** The pane's scrollback (TermView.tsx): the rows a flood leaves in the buffer above the screen. */
const SCROLLBACK = 5000;

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

const { info, stop, api, newSession } = await openBench({ browser: false });

/**
 * A renderer's name (dom, webgl, with -noskip and -nobatch variants) as the
 * pane's localStorage; skip: whether the server may skip plain-text floods for
 * the page (its output then only partly reaches it).
 * @param {string} name
 */
function variant(name) {
  const [renderer, ...flags] = name.split('-');
  for (const f of flags) if (f !== 'noskip' && f !== 'nobatch') throw new Error(`renderer ${name}: unknown variant ${f} (noskip, nobatch)`);
  return {
    skip: !flags.includes('noskip'),
    storage: {
      'svc-term-renderer': renderer,
      // a write per frame, the pane before gathering
      'svc-term-batch': flags.includes('nobatch') ? 'off' : null,
      // every byte sent and parsed, the pane before the server's skip of plain-text floods
      'svc-term-skip': flags.includes('noskip') ? 'off' : null,
    },
  };
}

/** FNV-1a (32 bits) of s's characters (ASCII) from h on, as the page's capture hashes bytes. @param {number} h @param {string} s */
function fnv(h, s) {
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/**
 * A file of base64 lines of 76 characters between BEGIN-tag and END-tag lines;
 * the bytes the terminal sends for it after BEGIN-tag through END-tag (LF as CR LF),
 * their hash (as the page's capture), and the file's last lines (at least the
 * pane's scrollback and screen).
 * @param {string} file @param {string} tag @param {number} mb
 */
async function makeFile(file, tag, mb) {
  const out = createWriteStream(file);
  let sent = 0;
  let hash = fnv(0x811c9dc5, '\r\n');
  /** @type {string[]} */
  let last = [];
  /** @param {string} s */
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
    hash = fnv(hash, lines.join('\r\n') + '\r\n');
    last = [...last.slice(-4096), ...lines];
    await put(chunk);
  }
  await put(`END-${tag}\n`);
  out.end();
  await once(out, 'finish');
  return { fileBytes: n, termBytes: sent + 2 + `END-${tag}`.length, hash: fnv(hash, `END-${tag}`), last };
}

/**
 * Waits in the page until terminal id has drawn the capture's end (or, skip: the
 * end line is in its buffer, the server may have sent the screen rather than
 * the bytes) and nothing is pending; returns performance.now() and info.
 * @param {import('./lib.mjs').DriverPage} page @param {string} id @param {string} end @param {boolean} skip
 */
function drawnAll(page, id, end, skip) {
  return page.call(
    async ({ id, end, skip }) => {
      const h = /** @type {any} */ (window).__svcTerm;
      for (;;) {
        const i = h.info(id);
        if (i.pending === 0 && (i.capture?.state === 'done' || (skip && h.lines(id, i.rows).includes(end)))) return { t: performance.now(), info: i };
        await new Promise((r) => setTimeout(r, 5));
      }
    },
    { id, end, skip },
  );
}

/** @param {import('./lib.mjs').DriverPage} page @param {string} id @param {string} tag @param {string} file @param {boolean} skip */
async function catThroughPage(page, id, tag, file, skip) {
  await page.call(({ id, tag }) => /** @type {any} */ (window).__svcTerm.capture(id, `BEGIN-${tag}`, `END-${tag}`), { id, tag });
  const t0 = await page.call(
    ({ id, file }) => {
      const h = /** @type {any} */ (window).__svcTerm;
      const t = performance.now();
      h.input(id, `clear; cat ${file}\r`);
      return t;
    },
    { id, file },
  );
  const { t, info: i } = await drawnAll(page, id, `END-${tag}`, skip);
  return { secs: (t - t0) / 1000, bytes: i.capture.bytes, hash: i.capture.hash, info: i };
}

/**
 * Ctrl-C in a flood, through the page: `yes` runs for FLOOD_MS, then Ctrl-C and
 * `echo <tag>` are typed (xterm.js input(), as the keyboard does); the time runs
 * until the page has drawn the line the echo prints, the shell's answer after the
 * interrupt. Output the page has not drawn yet when the key is pressed stands
 * before it.
 * @param {import('./lib.mjs').DriverPage} page @param {string} id @param {number} n
 */
async function interruptThroughPage(page, id, n) {
  const FLOOD_MS = 1500;
  const out = [];
  for (let i = 0; i < n; i++) {
    const tag = `int${i}-${Math.random().toString(36).slice(2, 8)}`;
    await page.call(({ id }) => /** @type {any} */ (window).__svcTerm.input(id, 'clear; yes "a line of a flood that goes on until Ctrl-C"\r'), { id });
    await new Promise((r) => setTimeout(r, FLOOD_MS)); // the flood's length, not a synchronisation
    out.push(
      await page.call(
        async ({ id, tag }) => {
          const h = /** @type {any} */ (window).__svcTerm;
          const t0 = performance.now();
          h.input(id, '\x03');
          h.input(id, `echo ${tag}\r`);
          for (;;) {
            if (h.lines(id, 60).includes(tag)) return performance.now() - t0;
            await new Promise((r) => setTimeout(r, 2));
          }
        },
        { id, tag },
      ),
    );
  }
  return out.sort((a, b) => a - b);
}

/**
 * What the flood left in the page's buffer, against the file: every row above
 * END-tag is the file's line as far up as the buffer goes (its scrollback full),
 * and the prompt follows. Returns what differs, or null.
 * @param {import('./lib.mjs').DriverPage} page @param {string} id @param {string} tag @param {string[]} fileLines @param {number} cols
 */
async function bufferDiffers(page, id, tag, fileLines, cols) {
  const end = `END-${tag}`;
  /** @type {string[]} */
  let lines = [];
  let at = -1;
  // The prompt may come a moment after the end line.
  for (let tries = 0; tries < 40; tries++) {
    lines = await page.call(({ id, n }) => /** @type {any} */ (window).__svcTerm.lines(id, n), { id, n: 100_000 });
    at = lines.lastIndexOf(end);
    if (at >= 0 && lines.slice(at + 1).some((l) => l.trim())) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  if (at < 0) return `no ${end} line in the buffer`;
  const above = lines.slice(0, at);
  if (cols < 76) return `the buffer is ${cols} columns: the file's 76-character lines wrap (check not made)`;
  for (let k = 1; k <= Math.min(above.length, fileLines.length); k++)
    if (above[above.length - k] !== fileLines[fileLines.length - k]) return `the buffer's line ${k} above ${end} is not the file's: ${JSON.stringify(above[above.length - k].slice(0, 80))}`;
  if (above.length < SCROLLBACK) return `only ${above.length} lines above ${end} in the buffer (its scrollback holds ${SCROLLBACK})`;
  if (!lines.slice(at + 1).some((l) => l.trim())) return `no prompt after ${end}`;
  return null;
}

/**
 * The same socket in a page that does not render: counts bytes until the marker, acks every frame at once.
 * @param {import('./lib.mjs').Driver} driver @param {string} id @param {string} tag @param {string} file @param {string} cwd
 */
async function catSocketOnly(driver, id, tag, file, cwd) {
  const page = await driver.open('/manifest.json');
  const c0 = await browserCPU(driver);
  const out = await page.call(async ({ id, tag, file, cwd }) => {
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
  const cpu = (await browserCPU(driver)) - c0;
  await page.close();
  return { ...out, cpu };
}

/** @param {import('./lib.mjs').DriverPage} page @param {string} id @param {number} n */
async function echoThroughPage(page, id, n) {
  return page.call(async ({ id, n }) => {
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
 * CPU seconds (user + system) used so far by the browser the driver launched
 * (its process tree: the browser, renderers, GPU process): a figure the
 * machine's other load does not change much, unlike the wall clock.
 * @param {import('./lib.mjs').Driver} driver
 */
async function browserCPU(driver) {
  const procs = await processTree(driver.roots);
  let sum = 0;
  for (const p of procs.values()) sum += p.cpu;
  if (process.env.TB_CPU_DETAIL) {
    /** @type {Record<string, number>} */
    const by = {};
    for (const [p, v] of procs) {
      const t = (await readFile(`/proc/${p}/cmdline`, 'utf8').catch(() => '')).match(/--type=([a-z-]+)/)?.[1] ?? 'browser';
      by[t] = (by[t] ?? 0) + v.cpu;
    }
    log(`cpu by process: ${JSON.stringify(by)}`);
  }
  return sum;
}

/**
 * The page's main-thread JavaScript profile (CDP Profiler) while fn runs: the functions with the most self time.
 * @template T @param {import('./lib.mjs').DriverPage} page @param {() => Promise<T>} fn @returns {Promise<T>}
 */
async function profiled(page, fn) {
  if (!PROFILE) return fn();
  await page.cdp('Profiler.enable');
  await page.cdp('Profiler.setSamplingInterval', { interval: 500 });
  await page.cdp('Profiler.start');
  const out = await fn();
  const { profile } = await page.cdp('Profiler.stop');
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
  await page.cdp('Profiler.disable');
  return out;
}

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];


/** The page's counters as printed: all of them (the server's skip adds its own). @param {any} stats */
const statsText = (stats) => Object.entries(stats ?? {}).map(([k, v]) => `${k} ${v}`).join(', ');

/**
 * cat runs and echoes through the page with renderer r, in a window of its own.
 * @param {import('./lib.mjs').Driver} driver @param {string} r
 */
async function measurePage(driver, r) {
  const { skip, storage } = variant(r);
  const s = await newSession(`terminalbench ${r}`);
  const id = s.session_id;
  const page = await driver.open(`/s/${id}/terminal`, storage);
  await until(async () => page.call((id) => /** @type {any} */ (window).__svcTerm?.info(id).state === 'connected', id).catch(() => false), { timeoutMs: 30_000, what: 'the terminal connected' });
  const runs = [];
  const lost = [];
  // The page's counters add up over its runs: each run's skips are the difference.
  let before = { skips: 0, skippedPlain: 0 };
  for (let n = 0; n < CAT_RUNS; n++) {
    const tag = `${n}-${Math.random().toString(36).slice(2, 8)}`;
    const file = `big-${n}.txt`;
    const want = await makeFile(path.join(s.cwd, file), tag, SIZE_MB);
    const c0 = await browserCPU(driver);
    const got = await profiled(page, () => catThroughPage(page, id, tag, file, skip));
    const cpu = (await browserCPU(driver)) - c0;
    // Every byte must have been drawn, unless the server skipped part of the
    // flood: then what the page shows (its scrollback and screen) must be the file's end.
    const whole = got.bytes === want.termBytes && got.hash === want.hash;
    const differs = await bufferDiffers(page, id, tag, want.last, got.info.cols);
    if (!skip && !whole) lost.push(`run ${n + 1}: ${got.bytes} of ${want.termBytes} bytes drawn${got.bytes === want.termBytes ? ', their hash differs' : ''}`);
    if (differs) lost.push(`run ${n + 1}: ${differs}`);
    // MB: the cat's output (what the shell wrote), all of it parsed by the page or not.
    const mb = want.termBytes / 1e6;
    const st = got.info.stats ?? {};
    const skips = { skips: (st.skips ?? 0) - before.skips, skippedPlain: (st.skippedPlain ?? 0) - before.skippedPlain, known: st.skips !== undefined };
    before = { skips: st.skips ?? 0, skippedPlain: st.skippedPlain ?? 0 };
    runs.push({ ...got, cpu, mbs: mb / got.secs, cpuMB: mb / cpu, mb, skips });
    log(
      `${driver.name} ${r} page run ${n}: ${mb.toFixed(1)} MB in ${got.secs.toFixed(2)} s = ${(mb / got.secs).toFixed(1)} MB/s, browser CPU ${cpu.toFixed(1)} s = ${(mb / cpu).toFixed(1)} MB per CPU-second` +
        ` (${got.info.renderer}, ${got.info.rows}x${got.info.cols}, flow ${got.info.flow}; ${whole ? 'every byte drawn' : `${(got.bytes / 1e6).toFixed(1)} MB parsed by the page`}; buffer ${differs ?? 'ends as the file'}; stats: ${statsText(got.info.stats)})`,
    );
    await rm(path.join(s.cwd, file));
  }
  // The screen cleared (only the prompt left on it, nothing pending) before keys are timed.
  await page.call(
    async (id) => {
      const h = /** @type {any} */ (window).__svcTerm;
      h.input(id, 'clear\r');
      for (;;) {
        const i = h.info(id);
        if (i.pending === 0 && h.lines(id, i.rows).filter((/** @type {string} */ l) => l.trim()).length === 1) return;
        await new Promise((r) => setTimeout(r, 5));
      }
    },
    id,
  );
  const echoes = await echoThroughPage(page, id, ECHOES);
  const interrupts = INTERRUPTS > 0 ? await interruptThroughPage(page, id, INTERRUPTS) : [];
  if (interrupts.length) log(`${driver.name} ${r} Ctrl-C in a flood: ${interrupts.map((x) => x.toFixed(0)).join(', ')} ms`);
  const echo = echoes.parsed.sort((a, b) => a - b);
  const paint = echoes.painted.sort((a, b) => a - b);
  log(`${driver.name} ${r} echo: p50 ${pct(echo, 0.5).toFixed(2)} ms, p99 ${pct(echo, 0.99).toFixed(2)} ms; to the next frame p50 ${pct(paint, 0.5).toFixed(2)} ms, p99 ${pct(paint, 0.99).toFixed(2)} ms`);
  const info = runs[0].info;
  const gl = await page.call(() => {
    const g = document.createElement('canvas').getContext('webgl2');
    const ext = g?.getExtension('WEBGL_debug_renderer_info');
    return g ? String(ext ? g.getParameter(ext.UNMASKED_RENDERER_WEBGL) : g.getParameter(g.RENDERER)) : 'none';
  });
  await page.close();
  const label = [
    `${info.renderer} renderer`,
    ...(storage['svc-term-skip'] ? ['svc-term-skip=off: every byte sent and parsed'] : []),
    ...(storage['svc-term-batch'] ? ['svc-term-batch=off: a write per frame, the pane before gathering'] : []),
  ].join(', ');
  // The server's skip counters, when the page has them.
  const skipped = runs.some((x) => x.skips.known && x.skips.skips > 0)
    ? `; the server left out ${runs.map((x) => `${(x.skips.skippedPlain / 1e6).toFixed(1)} MB in ${x.skips.skips} skips`).join(', ')}: the page parsed ${runs.map((x) => `${(x.bytes / 1e6).toFixed(1)}`).join(', ')} MB of ${runs[0].mb.toFixed(1)}`
    : '';
  return { r, gl, label, skipped, cpuMB: median(runs.map((x) => x.cpuMB)), renderer: info.renderer, flow: info.flow, rows: info.rows, cols: info.cols, runs, lost, mbs: median(runs.map((x) => x.mbs)), echo, paint, interrupts };
}

/** @param {import('./lib.mjs').Driver} driver */
async function measureSocket(driver) {
  const s = await newSession('terminalbench socket');
  const out = [];
  for (let n = 0; n < CAT_RUNS; n++) {
    const tag = `s${n}-${Math.random().toString(36).slice(2, 8)}`;
    const file = `big-${n}.txt`;
    await makeFile(path.join(s.cwd, file), tag, SIZE_MB);
    const sock = await catSocketOnly(driver, s.session_id, tag, file, s.cwd);
    const cpu = sock.cpu;
    out.push({ ...sock, mbs: sock.bytes / 1e6 / sock.secs });
    log(`${driver.name} socket run ${n}: ${(sock.bytes / 1e6).toFixed(1)} MB in ${sock.secs.toFixed(2)} s = ${(sock.bytes / 1e6 / sock.secs).toFixed(1)} MB/s, browser CPU ${cpu.toFixed(1)} s = ${(sock.bytes / 1e6 / cpu).toFixed(1)} MB per CPU-second, ${sock.frames} frames`);
    await rm(path.join(s.cwd, file));
  }
  return out;
}

/** What the drivers are called in the table. */
const DRIVER_NAME = { raw: 'a bare DevTools pipe', playwright: 'Playwright' };

let failed = false;
try {
  /** Per driver, one after the other (one browser open at a time): the pages per renderer, the socket page. */
  const measured = [];
  let chromiumVersion = '';
  for (const name of DRIVERS) {
    const driver = await openDriver(name, info, VIEWPORT);
    try {
      chromiumVersion = driver.version;
      log(`${name}: Chromium ${driver.version}, pid ${driver.roots.join(' ')}`);
      const pages = [];
      for (const r of RENDERERS) pages.push(await measurePage(driver, r));
      const socketRuns = await measureSocket(driver);
      measured.push({ name, pages, socketRuns });
    } finally {
      await driver.close();
    }
  }
  // With more than one driver, each row says which measured it.
  const by = (/** @type {string} */ name) => (DRIVERS.length > 1 ? ` (driven by ${DRIVER_NAME[/** @type {'raw' | 'playwright'} */ (name)]})` : '');
  const pages = measured.flatMap((m) => m.pages.map((p) => ({ ...p, by: by(m.name) })));
  const svc = service?.gateway.mbs ?? NaN;
  const bound = Math.min(GOAL_MBS, Number.isFinite(svc) ? svc : GOAL_MBS);
  const commit = (await run('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT })).stdout.trim();
  const dirty = (await run('git', ['status', '--porcelain', '--', 'web/src'], { cwd: ROOT })).stdout.trim() ? ' plus uncommitted changes' : '';
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  // WebGL drawn by the CPU (SwiftShader here) is measured and shown, but the pane's
  // auto never uses it: it takes the DOM renderer on such machines.
  const software = (/** @type {any} */ p) => p.renderer === 'webgl' && /swiftshader|llvmpipe|softpipe|software/i.test(p.gl ?? '');
  const verdict = (/** @type {any} */ p, /** @type {boolean} */ ok) => (ok ? 'met' : software(p) ? 'not met with WebGL drawn by the CPU, which the pane does not use (it takes the DOM renderer here)' : 'not met');
  const md = `## Terminal pane (browser)

Run ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC on ${cpu}, nproc ${os.cpus().length}, Chromium ${chromiumVersion} (headless, Debian's package), the app built from commit ${commit}${dirty}. Reproduce with \`node bench/ui/terminalbench.mjs\` (\`-write=false\` prints without writing here; \`-size=MB\`, \`-runs=N\`, \`-echoes=N\`, \`-renderers=${RENDERERS.join(',')}\`, \`-driver=raw|playwright|raw,playwright\`). The stack is started as \`make run\` does; everything shares the machine's CPUs (load average at the end of the run: ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}).

| Measure | Goal | svc-code | Verdict |
|---|---|---|---|
${pages.map((p) => `| \`cat\` rendered through the page, xterm.js ${p.label}${p.flow ? ', flow control on' : ', the server without flow control'}${p.by} | not the bottleneck below ${GOAL_MBS} MB/s: ≥ ${bound.toFixed(1)} MB/s here | ${p.mbs.toFixed(1)} MB/s (runs ${p.runs.map((x) => x.mbs.toFixed(1)).join(', ')}); ${p.cpuMB.toFixed(1)} MB per browser CPU-second${p.skipped}${p.lost.length ? `; output lost: ${p.lost.join('; ')}` : ''} | ${verdict(p, p.mbs >= bound && !p.lost.length)} |`).join('\n')}
${measured.map(({ name, socketRuns }) => `| the same socket read by a page that does not render (acks each frame)${by(name)} | – | ${median(socketRuns.map((r) => r.mbs)).toFixed(1)} MB/s (runs ${socketRuns.map((r) => r.mbs.toFixed(1)).join(', ')}); ${median(socketRuns.map((r) => r.bytes / 1e6 / r.cpu)).toFixed(1)} MB per browser CPU-second, ${Math.round(median(socketRuns.map((r) => r.bytes / r.frames)) / 1024)} KiB a frame | – |`).join('\n')}
| the terminal service through the gateway (\`make bench-terminal\`, this session, Go client, no rendering) | – | ${service ? `${service.gateway.mbs} MB/s (direct ${service.direct.mbs} MB/s, raw PTY ${service.raw.mbs} MB/s)` : 'not run (-termbench=false)'} | – |
${pages.map((p) => `| keystroke echo through the page (xterm.js ${p.label})${p.by}: the key typed into xterm.js until its echo is parsed (write callback), ${ECHOES} keys | p99 ≤ 16 ms (a frame) | p50 ${pct(p.echo, 0.5).toFixed(2)} ms, p99 ${pct(p.echo, 0.99).toFixed(2)} ms | ${verdict(p, pct(p.echo, 0.99) <= 16)} |
| the same until the next animation frame (when xterm.js paints it) | p99 ≤ 33 ms (two frames) | p50 ${pct(p.paint, 0.5).toFixed(2)} ms, p99 ${pct(p.paint, 0.99).toFixed(2)} ms | ${verdict(p, pct(p.paint, 0.99) <= 33)} |`).join('\n')}
| the same without the page (\`make bench-terminal\`, through the gateway) | – | ${service ? `p50 ${service.gateway.p50}, p99 ${service.gateway.p99}` : 'not run'} | – |
${pages.filter((p) => p.interrupts.length).map((p) => `| Ctrl-C in a flood (\`yes\`, 1.5 s) through the page (xterm.js ${p.label})${p.by}: the key until the line typed after it is drawn, ${p.interrupts.length} times | – | median ${median(p.interrupts).toFixed(0)} ms, slowest ${Math.max(...p.interrupts).toFixed(0)} ms | – |`).join('\n')}

- Driver: ${DRIVERS.map((d) => (d === 'raw' ? 'Chromium driven over a bare DevTools pipe (bench/ui/rawcdp.mjs: Target, Page and Runtime.evaluate, nothing else), as a user\'s browser runs with no driver attached' : 'Chromium driven by Playwright (playwright-core), as before: it enables CDP\'s Network domain on every page it drives, so Chromium copies each WebSocket frame\'s payload (base64) to the driver, a cost that falls on the socket and the pages measured and that a user\'s browser does not pay')).join('; and ')}${DRIVERS.includes('playwright') ? '' : ' (`-driver=playwright` measures through Playwright, whose Network domain has Chromium copy every WebSocket frame\'s payload to the driver)'}. Browser CPU is the CPU time of the browser's process tree (browser, renderers, GPU process) during the run.
- \`cat\`: a file of ${SIZE_MB} MB of base64 lines (76 characters) between two marker lines, in the page cache; the time runs from typing \`cat\` (xterm.js \`input()\`, in the page) until the page has drawn every byte up to the end marker (the test hook's capture, and no write pending in xterm.js); MB is 10^6 bytes of terminal output (CR LF line ends), the cat's whole output whether or not the page parsed it all. Median of ${CAT_RUNS} runs. The page is 1280×800 (${pages[0]?.rows}×${pages[0]?.cols} cells), one browser window per renderer (the renderer chosen with localStorage \`svc-term-renderer\`). With flow control (issue 18 item 2) the shell is paced by the page, so the figure is the slower of the page and the service; the pane asks for \`skip_lines\` (its 5000 lines of scrollback), so in a plain flood the server leaves out what the page could never show and the page no longer paces the shell at xterm.js's parsing speed (docs/api.md "Plain floods left out").
- Output checks: a renderer named \`-noskip\` sets localStorage \`svc-term-skip=off\` (the server sends every byte, the page parses it): its runs must draw every byte (the count and FNV-1a hash of the test hook's capture against the file's). Otherwise the server may skip the plain-text lines of a flood that can never reach the page's scrollback (${SCROLLBACK} lines) or screen, and when it does the end is taken from the page's buffer (the end line drawn, nothing pending). Every run's buffer is then checked: each of its rows above the end line is the file's line (its scrollback full), and the prompt follows; "output lost" says what differed.
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
  await stop();
}
process.exit(failed ? 1 : 0);
