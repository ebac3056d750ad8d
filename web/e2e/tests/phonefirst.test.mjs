// @ts-check
// Phone-first details (issue 19 item 3): a turn that ended while the tab was
// hidden, or closed, is summed up at the top of the session when the user is
// back (files changed from the journal, cost, duration), dismissable; the
// permission inbox answered one-handed at 390×844 (the whole command, 48 px
// actions in the lower part of the screen, Close at the sheet's foot).
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  launch, signedInContext, createSession, uniqueTitle, stack, STEP_MS, PHONE, screenshots, screenshot, openSession,
  send, waitText, waitIdle, until, api, connection, permissionCard, logMessages,
  e2e,
} from '../lib/app.mjs';

/** @type {import('playwright-core').Browser} */
let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

/** Makes the page believe it is hidden (or visible again), as a tab switch does. */
async function setVisibility(page, state) {
  await page.evaluate((state) => {
    Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => state });
    Object.defineProperty(document, 'hidden', { configurable: true, get: () => state === 'hidden' });
    document.dispatchEvent(new Event('visibilitychange'));
  }, state);
}

/**
 * Sends EDIT_THREE n as the session's turn `turn`, gated on a file, so the
 * journal holds the turn's start before the edits (see changes.test).
 */
async function startEdits(page, s, n, turn) {
  const gate = path.join(stack.home, `gate-away-${s.session_id}-${n}`);
  // A change before the turn, so the journal makes the turn's baseline commit.
  await writeFile(path.join(s.cwd, `before-${n}.txt`), `before turn ${n}\n`);
  await send(page, `EDIT_THREE ${n} after=${gate}`);
  await until(async () => {
    const { commits } = await api('GET', `/api/shadow/log?cwd=${encodeURIComponent(s.cwd)}&session=${s.session_id}&limit=20`);
    return commits.some((c) => c.kind === 'baseline' && c.turn_number === turn);
  }, { timeoutMs: STEP_MS, what: `the journal's baseline of turn ${turn}` });
  return () => writeFile(gate, '');
}

/** Waits until the log holds `results` results and the journal `edits` turn commits. */
async function turnsDone(s, results, edits) {
  await until(async () => (await logMessages(s.session_id)).filter((m) => m.kind === 'agent' && m.payload?.type === 'result').length >= results, { timeoutMs: STEP_MS, what: `result ${results} in the log` });
  await until(async () => (await api('GET', `/api/sessions/${s.session_id}/changes`)).turns.filter((t) => t.kind === 'turn').length >= edits, { timeoutMs: STEP_MS, what: `${edits} turns in the journal` });
}

const away = (page) => page.getByRole('region', { name: 'While you were away', exact: true });

e2e('away summary: a turn that ended while the tab was hidden, then one that ended while it was closed', async () => {
  const s = await createSession(uniqueTitle('e2e away'));
  const context = await signedInContext(browser);
  const page = await context.newPage();
  await page.goto(`/s/${s.session_id}`);
  await waitText(connection(page), /connected/i);

  // Sent, then the tab is hidden; the turn ends meanwhile.
  const open1 = await startEdits(page, s, 1, 1);
  await setVisibility(page, 'hidden');
  await open1();
  await turnsDone(s, 1, 1);
  assert.equal(await away(page).count(), 0, 'no summary while hidden');
  await setVisibility(page, 'visible');
  await waitText(away(page), /1 turn ended/);
  await waitText(away(page), /3 files changed/);
  await waitText(away(page), /\$/);
  await waitText(away(page), /\d+(\.\d+)? (ms|s)\b/);
  for (const f of ['edit-a.txt', 'edit-b.txt', 'edit-c.txt']) await waitText(away(page).getByRole('list', { name: 'Files changed' }), new RegExp(f.replace('.', '\\.')));
  await screenshots(page, 'away-summary');
  await page.setViewportSize(PHONE);
  await screenshot(page, 'away-summary-phone-top');
  const dismiss = away(page).getByRole('button', { name: 'Dismiss', exact: true });
  const box = await dismiss.boundingBox();
  assert.ok(box && box.height >= 44, `Dismiss is a 44 px target on a phone (${JSON.stringify(box)})`);
  await page.setViewportSize({ width: 1280, height: 800 });
  await dismiss.click();
  assert.equal(await away(page).count(), 0, 'dismissed');

  // Seen while visible: a turn watched to its end makes no summary. It edits
  // too, so that its commit says when shadow has taken its end: the change
  // startEdits makes before the next turn must come after that, or shadow
  // journals it in this turn and the next one has no baseline to wait on.
  const open3 = await startEdits(page, s, 3, 2);
  await open3();
  await turnsDone(s, 2, 2);
  await waitIdle(page);
  await setVisibility(page, 'hidden');
  await setVisibility(page, 'visible');
  assert.equal(await away(page).count(), 0, 'a turn seen to its end is no news');

  // Sent, then the tab is closed; the turn ends; opened again in this browser.
  const open2 = await startEdits(page, s, 2, 3);
  await page.close();
  await open2();
  await turnsDone(s, 3, 3);
  const again = await context.newPage();
  await again.goto(`/s/${s.session_id}`);
  await waitText(away(again), /1 turn ended/);
  await waitText(away(again), /3 files changed \+3 −3/);
  await away(again).getByRole('button', { name: 'Open the changes', exact: true }).click();
  await again.waitForURL(new RegExp(`/s/${s.session_id}/changes\\?turn=3$`), { timeout: STEP_MS });
});

e2e('the inbox on a phone: the whole command, actions within thumb reach', async () => {
  const a = await createSession(uniqueTitle('e2e thumb asks'));
  const context = await signedInContext(browser, { phone: true });
  const page = await context.newPage();
  await page.goto(`/s/${a.session_id}`);
  await waitText(connection(page), /connected/i);
  await send(page, 'RUN_BASH');
  await permissionCard(page, 'Bash').waitFor({ timeout: STEP_MS });
  await page.goto('/');
  const inboxButton = page.getByRole('button', { name: 'Pending permissions', exact: true });
  await waitText(inboxButton, /[1-9]/);
  await inboxButton.tap();
  const inbox = page.getByRole('dialog', { name: 'Pending permission requests', exact: true });
  const item = inbox.getByRole('listitem').filter({ hasText: a.title });
  await waitText(item, /echo hello-from-bash > bash_out\.txt && cat bash_out\.txt/);
  await item.scrollIntoViewIfNeeded();

  // The whole command: its block does not scroll, and nothing overflows sideways.
  const cmd = item.locator('pre.perminput');
  const { sh, ch } = await cmd.evaluate((el) => ({ sh: el.scrollHeight, ch: el.clientHeight }));
  assert.ok(sh <= ch + 1, `the command is shown whole (${sh} > ${ch})`);
  const scrollWidth = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(scrollWidth <= PHONE.width, `no sideways scrolling (${scrollWidth}px wide)`);
  // The sheet sits at the bottom; its actions are big and in the lower part of the screen.
  const sheet = await inbox.boundingBox();
  assert.ok(sheet && Math.abs(sheet.y + sheet.height - PHONE.height) <= 1, `the inbox is a sheet at the bottom (${JSON.stringify(sheet)})`);
  for (const name of ['Allow here', 'Deny here', 'Close']) {
    const b = await inbox.getByRole('button', { name, exact: true }).first().boundingBox();
    assert.ok(b && b.height >= 44 && b.width >= 88, `${name} is a big target (${JSON.stringify(b)})`);
    assert.ok(b && b.y >= PHONE.height * 0.4 && b.y + b.height <= PHONE.height, `${name} is within thumb reach (${JSON.stringify(b)})`);
  }
  await screenshot(page, 'inbox-phone');
  await item.getByRole('button', { name: 'Allow here', exact: true }).tap();
  await waitText(inbox, /Allowed: Bash in /);
  await until(async () => !(await api('GET', `/api/session/${a.session_id}`)).agent_running, { timeoutMs: STEP_MS, what: 'the turn to end' });
  await inbox.getByRole('button', { name: 'Close', exact: true }).tap();
  assert.equal(await inbox.count(), 0, 'closed');
});
