// @ts-check
// The terminal pane (issue 18 item 1): echo through the page, the pane's size
// reaching the shell, the scrollback replayed after a reload, a second terminal
// and its close, the phone's key bar; screenshots at both sizes.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, signedInContext, createSession, uniqueTitle, STEP_MS, PHONE, screenshots, screenshot, api, until, e2e } from '../lib/app.mjs';
import { openTerminal, termInfo, waitConnected, waitScreen, screenText, typeLine } from '../lib/terminal.mjs';

/** @type {import('playwright-core').Browser} */
let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

const rnd = () => Math.random().toString(36).slice(2, 8);

e2e('terminal: echo, the size reaches the shell, a reload replays the output', async () => {
  const s = await createSession(uniqueTitle('e2e term'));
  const context = await signedInContext(browser);
  const page = await context.newPage();
  await openTerminal(page, s.session_id);
  const id = s.session_id;

  // Echo: typed in the page, run by the shell, drawn by xterm.js.
  const word = `hi-${rnd()}`;
  await typeLine(page, `echo ${word}`);
  await waitScreen(page, id, new RegExp(`^${word}$`, 'm'));
  const info = await termInfo(page, id);
  assert.equal(info.state, 'connected');
  assert.ok(info.rows > 10 && info.cols > 80, `fitted to the pane: ${info.rows}x${info.cols}`);

  // The shell starts in the session's directory.
  await typeLine(page, 'pwd');
  await waitScreen(page, id, new RegExp(`^${s.cwd.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'));

  // Resize: the pane's size is the shell's (stty size: rows cols), before and after the window changes.
  const stty = async () => {
    const mark = `sz-${rnd()}`;
    await typeLine(page, `echo ${mark} $(stty size)`);
    const text = await waitScreen(page, id, new RegExp(`^${mark} \\d+ \\d+$`, 'm'));
    const m = new RegExp(`^${mark} (\\d+) (\\d+)$`, 'm').exec(text);
    return { rows: Number(m?.[1]), cols: Number(m?.[2]) };
  };
  const a = await stty();
  const ia = await termInfo(page, id);
  assert.deepEqual(a, { rows: ia.rows, cols: ia.cols });
  await page.setViewportSize({ width: 900, height: 600 });
  const ib = await until(async () => {
    const i = await termInfo(page, id);
    return i.cols < ia.cols && i.rows < ia.rows && i;
  }, { timeoutMs: STEP_MS, what: 'the terminal refitted to a smaller window' });
  const b = await stty();
  assert.deepEqual(b, { rows: ib.rows, cols: ib.cols }, 'the shell has the new size');
  await page.setViewportSize({ width: 1280, height: 800 });

  // A reload: the scrollback is replayed, nothing twice.
  const before = `before-${rnd()}`;
  await typeLine(page, `echo ${before}`);
  await waitScreen(page, id, new RegExp(`^${before}$`, 'm'));
  const streamBefore = (await termInfo(page, id)).stream;
  await page.reload();
  await waitConnected(page, id);
  const text = await waitScreen(page, id, new RegExp(`^${before}$`, 'm'));
  assert.equal(text.split('\n').filter((l) => l === before).length, 1, 'the replayed output is shown once');
  assert.equal((await termInfo(page, id)).stream, streamBefore, 'the same shell');
  await typeLine(page, `echo after-reload`);
  await waitScreen(page, id, /^after-reload$/m);

  // A dropped socket: the output printed meanwhile comes with the reattach, once and in order.
  const tick = `tick-${rnd()}`;
  await typeLine(page, `clear; for i in 1 2 3 4 5 6 7 8; do echo ${tick}-$i; sleep 0.25; done`);
  await waitScreen(page, id, new RegExp(`^${tick}-1$`, 'm'));
  const connects = (await termInfo(page, id)).stats.connects;
  await page.evaluate((id) => /** @type {any} */ (window).__svcTerm.disconnect(id), id);
  const after = await waitScreen(page, id, new RegExp(`^${tick}-8$`, 'm'));
  await waitConnected(page, id);
  const i2 = await termInfo(page, id);
  assert.ok(i2.stats.connects > connects, 'the socket was dialed again');
  assert.equal(i2.stream, streamBefore, 'the same shell');
  const ticks = after.split('\n').filter((l) => l.startsWith(`${tick}-`));
  assert.deepEqual(ticks, [1, 2, 3, 4, 5, 6, 7, 8].map((i) => `${tick}-${i}`), 'every line once, in order');
  await screenshots(page, 'terminal');
});

e2e('terminal: a second terminal, listed, closed after a confirmation; exit shows its code and Restart', async () => {
  const s = await createSession(uniqueTitle('e2e term2'));
  const context = await signedInContext(browser);
  const page = await context.newPage();
  await openTerminal(page, s.session_id);
  const region = page.getByRole('region', { name: 'Terminal', exact: true });
  await region.getByRole('button', { name: 'New terminal', exact: true }).click();
  const id2 = `${s.session_id}:2`;
  await waitConnected(page, id2);
  await typeLine(page, 'echo in-two');
  await waitScreen(page, id2, /^in-two$/m);
  const listed = await until(async () => {
    const r = await api('GET', '/api/terminals');
    const ids = r.terminals.map((/** @type {any} */ t) => t.session);
    return ids.includes(s.session_id) && ids.includes(id2) && ids;
  }, { timeoutMs: STEP_MS, what: 'both terminals in /api/terminals' });
  assert.ok(listed);

  // Close terminal 2: confirmed in a dialog, then gone from the list.
  await region.getByRole('button', { name: 'Close Terminal 2', exact: true }).click();
  const dialog = page.getByRole('dialog', { name: 'Close Terminal 2?' });
  await dialog.getByRole('button', { name: 'Confirm', exact: true }).click();
  await until(async () => !(await page.evaluate((id) => /** @type {any} */ (window).__svcTerm.ids().includes(id), id2)), { timeoutMs: STEP_MS, what: 'the tab closed' });
  await until(async () => !(await api('GET', '/api/terminals')).terminals.some((/** @type {any} */ t) => t.session === id2), { timeoutMs: STEP_MS, what: 'terminal 2 ended' });

  // exit 3 in terminal 1: its code and a Restart button, which starts a new shell.
  await region.getByRole('tab', { name: 'Terminal 1' }).click();
  const stream = (await termInfo(page, s.session_id)).stream;
  await typeLine(page, 'exit 3');
  const status = page.getByRole('status', { name: 'Terminal 1 status' });
  await until(async () => /exited with code 3/.test(await status.innerText()), { timeoutMs: STEP_MS, what: 'the exit shown' });
  await screenshot(page, 'terminal-exited');
  await status.getByRole('button', { name: 'Restart', exact: true }).click();
  await waitConnected(page, s.session_id);
  assert.notEqual((await termInfo(page, s.session_id)).stream, stream, 'a new shell');
  await typeLine(page, 'echo restarted');
  await waitScreen(page, s.session_id, /^restarted$/m);
});

e2e('terminal on a phone: the key bar (sticky Ctrl, arrows, Tab) types into the shell', async () => {
  const s = await createSession(uniqueTitle('e2e term phone'));
  const context = await signedInContext(browser, { phone: true });
  const page = await context.newPage();
  await openTerminal(page, s.session_id);
  const id = s.session_id;
  const bar = page.getByRole('toolbar', { name: 'Terminal keys' });
  await bar.waitFor({ timeout: STEP_MS });
  for (const name of ['Esc', 'Tab', 'Ctrl', 'Left', 'Up', 'Down', 'Right', 'Shift+Tab', 'Pipe', 'Tilde', 'Slash', 'Paste']) {
    assert.ok(await bar.getByRole('button', { name, exact: true }).isVisible(), `${name} in the key bar`);
  }
  const info = await termInfo(page, id);
  assert.ok(info.cols >= 30 && info.cols < 60, `fitted to the phone: ${info.cols} columns`);
  const scrollWidth = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(scrollWidth <= PHONE.width, `no sideways scrolling (${scrollWidth}px wide)`);

  // Up brings back the last command; Ctrl then c interrupts a line being typed.
  await typeLine(page, 'echo key-bar-ok');
  await waitScreen(page, id, /^key-bar-ok$/m);
  await bar.getByRole('button', { name: 'Up', exact: true }).tap();
  await page.keyboard.press('Enter');
  await until(async () => (await screenText(page, id)).split('\n').filter((l) => l === 'key-bar-ok').length === 2, { timeoutMs: STEP_MS, what: 'the command run again by Up' });
  await page.keyboard.type('sleep 1000');
  await bar.getByRole('button', { name: 'Ctrl', exact: true }).tap();
  assert.equal(await bar.getByRole('button', { name: 'Ctrl', exact: true }).getAttribute('aria-pressed'), 'true');
  await page.keyboard.type('c');
  await typeLine(page, 'echo after-ctrl-c');
  await waitScreen(page, id, /sleep 1000\^C/);
  await waitScreen(page, id, /^after-ctrl-c$/m);
  await bar.getByRole('button', { name: 'Pipe', exact: true }).tap();
  await page.keyboard.type(' tr a-z A-Z');
  await screenshot(page, 'terminal-phone');
  await page.keyboard.press('Control+U');
  await typeLine(page, 'echo done | tr a-z A-Z');
  await waitScreen(page, id, /^DONE$/m);
});
