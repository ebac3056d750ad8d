// @ts-check
// Stop shows its outcome; the permission-mode switch says whether it applied
// live or waits for the next turn.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  launch, signedInContext, api, createSession, uniqueTitle, STEP_MS, screenshots, openSession,
  agentStatus, send, waitIdle, waitText, logMessages,
  e2e,
} from '../lib/app.mjs';

/** @type {import('playwright-core').Browser} */
let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

e2e('stop', async () => {
  const { session_id: id, title } = await createSession(uniqueTitle('e2e stop'));
  const context = await signedInContext(browser);
  const page = await context.newPage();
  await openSession(page, title);
  await send(page, 'SLOW 300'); // 30 s unless stopped
  await waitText(agentStatus(page), /working/i);
  await waitText(page.locator('body'), /chunk 3/);
  const t0 = Date.now();
  await page.getByRole('button', { name: 'Stop', exact: true }).click();
  await waitText(agentStatus(page), /stopped/i);
  assert.ok(Date.now() - t0 < 10_000, 'stopped well before the turn would have ended');
  await screenshots(page, 'stopped');
  const log = await logMessages(id);
  const result = log.findLast((m) => m.kind === 'agent' && m.payload.type === 'result');
  assert.ok(result, 'the aborted turn\'s result is in the log');
  assert.notEqual(result.payload.subtype, 'success', 'the turn was cut short');
  const session = await api('GET', `/api/session/${id}`);
  assert.equal(session.agent_running, false);
  await context.close();
});

e2e('mode switch: next turn without a process, live with one', async () => {
  const { session_id: id, title } = await createSession(uniqueTitle('e2e mode'));
  const context = await signedInContext(browser);
  const page = await context.newPage();
  await openSession(page, title);
  const mode = page.getByRole('combobox', { name: 'Permission mode', exact: true });

  await mode.selectOption('acceptEdits');
  await waitText(page.locator('body'), /applies next turn/i);
  assert.equal((await api('GET', `/api/session/${id}`)).permission_mode, 'acceptEdits');

  await send(page, 'hello');
  await waitText(page.locator('body'), /Hello from the fake model\./);
  await waitIdle(page);
  await mode.selectOption('plan');
  await waitText(page.locator('body'), /applied live/i);
  assert.equal((await api('GET', `/api/session/${id}`)).permission_mode, 'plan');
  assert.equal(await mode.inputValue(), 'plan');
  await screenshots(page, 'mode-live');
  await context.close();
});
