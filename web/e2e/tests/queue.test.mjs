// @ts-check
// A prompt sent while a turn runs is queued (shown in the list "Queued
// prompts", cancellable), and
// sent when the turn ends, in order; a cancelled one never reaches the agent.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  launch, signedInContext, createSession, uniqueTitle, STEP_MS, screenshots, openSession,
  agentStatus, send, waitIdle, waitText, until, logMessages,
  e2e,
} from '../lib/app.mjs';

/** @type {import('playwright-core').Browser} */
let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

e2e('a queued prompt is sent when the turn ends; a cancelled one never is', async () => {
  const { session_id: id, title } = await createSession(uniqueTitle('e2e queue'));
  const context = await signedInContext(browser);
  const page = await context.newPage();
  await openSession(page, title);

  await send(page, 'SLOW 40'); // 40 chunks, 100 ms apart: about 4 s
  await waitText(agentStatus(page), /working/i);
  await send(page, 'ECHO first-queued');
  await send(page, 'ECHO cancelled-queued');
  const queue = page.getByRole('list', { name: 'Queued prompts', exact: true });
  const first = queue.getByRole('listitem').filter({ hasText: 'ECHO first-queued' });
  const second = queue.getByRole('listitem').filter({ hasText: 'ECHO cancelled-queued' });
  await first.waitFor({ timeout: STEP_MS });
  await second.waitFor({ timeout: STEP_MS });
  await screenshots(page, 'queued-prompt');
  await second.getByRole('button', { name: 'Cancel', exact: true }).click();
  await second.waitFor({ state: 'detached', timeout: STEP_MS });
  assert.match(await agentStatus(page).innerText(), /working/i, 'the queue was handled while the turn still ran');

  await waitText(page.locator('body'), /text="ECHO first-queued"/, 20_000);
  await waitIdle(page);
  await until(async () => (await queue.getByRole('listitem').count()) === 0, { timeoutMs: STEP_MS, what: 'an empty queue' });

  const log = await logMessages(id);
  const prompts = log.filter((m) => m.kind === 'user_prompt').map((m) => m.payload.message ?? m.payload.content ?? JSON.stringify(m.payload));
  assert.deepEqual(prompts.map(String), ['SLOW 40', 'ECHO first-queued'], 'the cancelled prompt never reached the log');
  const slowResult = log.find((m) => m.kind === 'agent' && m.payload.type === 'result');
  const queued = log.find((m) => m.kind === 'user_prompt' && JSON.stringify(m.payload).includes('first-queued'));
  assert.ok(slowResult && queued && queued.line > slowResult.line, 'the queued prompt was stored after the running turn\'s result, not sent into it');
  await context.close();
});
