// @ts-check
// Terminal output is never lost or garbled (issue 18 item 2): a 200 MB `cat`
// on one shell with a fast page and a deliberately slow one attached (the slow
// page's renderer CPU throttled through CDP). The fast page gets every byte
// (counted and hashed in the page between two markers of the file, against the
// same over the file here, newlines as the terminal sends them: CR LF) and never
// a gap; the slow page falls behind, is resynchronised, and its final screen
// equals the fast page's (the serialize addon's output of the screen).
// Then plain floods left out (skip_lines): a page that keeps every byte and one
// the server leaves the flood out for end with the same screen AND scrollback.
//
// Serial: it runs the stack's shell, terminal service and gateway flat out.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { launch, signedInContext, createSession, uniqueTitle, STEP_MS, until, e2e } from '../../lib/app.mjs';
import { openTerminal, termInfo, waitScreen, typeLine } from '../../lib/terminal.mjs';

/** @type {import('playwright-core').Browser} */
let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

const TOTAL = Number(process.env.E2E_TERM_FLOW_BYTES || 200_000_000);
const THROTTLE = Number(process.env.E2E_TERM_THROTTLE || 8);

/**
 * Writes about `total` bytes of base64 lines (76 characters) between the lines
 * BEGIN-<tag> and END-<tag> to file, and returns the count and FNV-1a hash of
 * what the page's capture sees: from after "BEGIN-<tag>" through "END-<tag>",
 * every LF as CR LF.
 * @param {string} file @param {string} tag @param {number} total
 */
async function writeFile(file, tag, total) {
  const out = createWriteStream(file);
  let h = 0x811c9dc5;
  let bytes = 0;
  const add = (/** @type {Buffer} */ b) => {
    for (let i = 0; i < b.length; i++) h = Math.imul(h ^ b[i], 0x01000193);
    bytes += b.length;
  };
  const put = async (/** @type {string} */ s) => {
    if (!out.write(s)) await once(out, 'drain');
  };
  await put(`BEGIN-${tag}\n`);
  add(Buffer.from('\r\n'));
  let written = 0;
  while (written < total) {
    // 57 random bytes make one 76-character base64 line.
    const lines = [];
    for (let i = 0; i < 4096 && written < total; i++) {
      const line = randomBytes(57).toString('base64');
      lines.push(line);
      written += line.length + 1;
    }
    const chunk = lines.join('\n') + '\n';
    add(Buffer.from(lines.join('\r\n') + '\r\n'));
    await put(chunk);
  }
  await put(`END-${tag}\n`);
  add(Buffer.from(`END-${tag}`));
  out.end();
  await once(out, 'finish');
  return { bytes, hash: h >>> 0, fileBytes: written };
}

/**
 * Two pages on terminal id, each in a browser context of its own: one that asks
 * for every byte (localStorage svc-term-skip=off), one as the pane is by default.
 * @param {string} id
 */
async function twoPages(id) {
  const everyCtx = await signedInContext(browser);
  await everyCtx.addInitScript(() => localStorage.setItem('svc-term-skip', 'off'));
  const every = await everyCtx.newPage();
  await openTerminal(every, id);
  const skipCtx = await signedInContext(browser);
  const skipping = await skipCtx.newPage();
  await openTerminal(skipping, id);
  return { every, skipping, skipCtx };
}

e2e('terminal flow: a 200 MB cat, a fast page gets every byte, a slow page ends on the same screen', async () => {
  const s = await createSession(uniqueTitle('e2e term flow'));
  const id = s.session_id;
  const tag = Math.random().toString(36).slice(2, 10);
  const file = path.join(s.cwd, 'big.txt');
  const want = await writeFile(file, tag, TOTAL);

  // The fast page parses every byte (it does not ask the server to leave plain floods out).
  const { every: fast, skipping: slow, skipCtx: slowCtx } = await twoPages(id);
  assert.equal((await termInfo(fast, id)).flow, true, 'the server accepted flow=1');
  const cdp = await slowCtx.newCDPSession(slow);
  await cdp.send('Emulation.setCPUThrottlingRate', { rate: THROTTLE });

  for (const p of [fast, slow]) await p.evaluate(({ id, tag }) => /** @type {any} */ (window).__svcTerm.capture(id, `BEGIN-${tag}`, `END-${tag}`), { id, tag });
  const t0 = Date.now();
  await typeLine(fast, 'cat big.txt');
  const done = await until(async () => {
    const i = await termInfo(fast, id);
    return i.capture?.state === 'done' && i;
  }, { timeoutMs: 600_000, intervalMs: 500, what: 'the fast page to draw the whole file' });
  const secs = (Date.now() - t0) / 1000;
  console.log(`fast page: ${(want.bytes / 1e6).toFixed(1)} MB in ${secs.toFixed(1)} s (${(want.bytes / 1e6 / secs).toFixed(1)} MB/s), acks ${done.stats.acks}, renderer ${done.renderer}`);
  console.log(`fast page: ${JSON.stringify(done.stats)}`);
  assert.deepEqual({ screens: done.stats.screens, resyncs: done.stats.resyncs, catchups: done.stats.catchups }, { screens: 0, resyncs: 0, catchups: 0 }, 'the fast page never skipped');
  assert.deepEqual({ bytes: done.capture.bytes, hash: done.capture.hash }, { bytes: want.bytes, hash: want.hash }, 'the fast page got every byte, in order');

  // The slow page: behind, resynchronised, and at the end on the same screen.
  const mark = `settled-${tag}`;
  await typeLine(fast, `clear; echo ${mark}; tail -n 3 big.txt`);
  await waitScreen(fast, id, new RegExp(`^${mark}$`, 'm'), 60_000);
  await cdp.send('Emulation.setCPUThrottlingRate', { rate: 1 });
  await until(async () => {
    const [a, b] = await Promise.all([termInfo(fast, id), termInfo(slow, id)]);
    return a.rendered === a.offset && b.rendered === b.offset && a.offset === b.offset && b.pending === 0 && b.state === 'connected';
  }, { timeoutMs: 300_000, intervalMs: 500, what: 'the slow page to catch up with the stream' });
  const slowInfo = await termInfo(slow, id);
  console.log(`slow page: ${JSON.stringify(slowInfo.stats)}`);
  assert.ok(slowInfo.stats.screens + slowInfo.stats.catchups + slowInfo.stats.skips > 0, 'the slow page fell behind (a screen resync, a catch-up or plain output left out)');
  assert.equal(slowInfo.stats.resyncs, 0, 'no resync with a hole');
  const a = await sameSerialized(fast, slow, id, 0, "the slow page's screen equals the fast page's");
  assert.match(a, new RegExp(`END-${tag}`));
});

e2e('terminal flow: a page the server leaves a plain flood out for ends with the same screen and scrollback as a page that parsed every byte', async () => {
  const s = await createSession(uniqueTitle('e2e term skip'));
  const id = s.session_id;
  const tag = Math.random().toString(36).slice(2, 10);
  await writeFile(path.join(s.cwd, 'flood.txt'), tag, Number(process.env.E2E_TERM_SKIP_BYTES || 30_000_000));
  const { every: full, skipping } = await twoPages(id);
  // Colours, so that the pen the left-out output leaves counts too.
  await typeLine(full, `clear; printf '\\033[1;33m'; cat flood.txt; printf '\\033[0m'; echo done-${tag}`);
  await waitScreen(full, id, new RegExp(`^done-${tag}$`, 'm'), 300_000);
  await until(async () => {
    const [a, b] = await Promise.all([termInfo(full, id), termInfo(skipping, id)]);
    return a.rendered === a.offset && b.rendered === b.offset && a.offset === b.offset && a.pending === 0 && b.pending === 0;
  }, { timeoutMs: 120_000, intervalMs: 250, what: 'both pages at the end of the stream' });
  const [fi, si] = await Promise.all([termInfo(full, id), termInfo(skipping, id)]);
  console.log(`parsing every byte: ${JSON.stringify(fi.stats)}; left out: ${JSON.stringify(si.stats)}`);
  assert.equal(fi.stats.skips, 0, 'the page that asked for every byte got every byte');
  assert.ok(si.stats.skips > 0 && si.stats.skippedPlain > 0, 'plain output was left out for the other page');
  assert.equal(si.stats.screens + si.stats.resyncs, 0, 'no screen resync (which would drop scrollback)');
  // Everything: every line of scrollback (5000), the screen, the modes, the pen.
  const a = await sameSerialized(full, skipping, id, undefined, 'the same screen and scrollback');
  assert.ok(a.split('\n').length > 5000, 'the scrollback is full');
  // Still the same once more is typed: the pen and modes carried on.
  await typeLine(full, 'echo after');
  await waitScreen(skipping, id, /^after$/m, 30_000);
  await sameSerialized(full, skipping, id, 0, 'the same screen after more output');
});

/**
 * Waits until pages a and b serialize terminal id alike (both have drawn the
 * same output: the prompt may still be on its way to one of them), and
 * returns that; fails with the difference after a deadline.
 * @param {import('playwright-core').Page} a @param {import('playwright-core').Page} b @param {string} id
 * @param {number | undefined} scrollback @param {string} what
 */
async function sameSerialized(a, b, id, scrollback, what) {
  /** @type {string[]} */
  let got = [];
  const ser = (/** @type {import('playwright-core').Page} */ p) => p.evaluate(({ id, scrollback }) => /** @type {any} */ (window).__svcTerm.serialize(id, scrollback), { id, scrollback });
  await until(async () => {
    got = await Promise.all([ser(a), ser(b)]);
    return got[0] === got[1];
  }, { timeoutMs: 30_000, intervalMs: 200, what }).catch(() => {});
  assert.equal(got[1], got[0], what);
  return got[0];
}
