// @ts-check
// Fork from a message: the fork holds the log up to that line, and opens.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  launch, signedInContext, api, createSession, uniqueTitle, STEP_MS, screenshots, openSession,
  send, waitIdle, waitText, until, logMessages, renderedSids, connection,
  e2e,
} from '../lib/app.mjs';

/** @type {import('playwright-core').Browser} */
let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

e2e('fork from a message', async () => {
  const { session_id: id, title } = await createSession(uniqueTitle('e2e fork'));
  const context = await signedInContext(browser);
  const page = await context.newPage();
  await openSession(page, title);
  await send(page, 'ECHO one');
  await waitText(page.locator('body'), /text="ECHO one"/);
  await waitIdle(page);
  await send(page, 'ECHO two');
  await waitText(page.locator('body'), /text="ECHO two"/);
  await waitIdle(page);

  // Fork from the reply to the first prompt.
  const log = await logMessages(id);
  const reply = log.find((m) => m.kind === 'agent' && m.payload.type === 'assistant' && JSON.stringify(m.payload).includes('ECHO one'));
  assert.ok(reply, 'the first reply is in the log');
  // The message's actions show over it on hover (or focus), as for a person.
  const block = page.locator(`[data-sid="${reply.sid}"]`);
  await block.hover();
  await block.getByRole('button', { name: 'Fork from here', exact: true }).click();

  const fork = await until(async () => {
    const { threads } = await api('GET', `/api/session/${id}/threads`);
    return threads.find((t) => t.relation === 'fork');
  }, { timeoutMs: STEP_MS, what: 'the fork in the session\'s threads' });
  const forkLog = await logMessages(fork.session_id);
  assert.equal(forkLog.at(-1).line, reply.line, 'the fork holds the log up to the message');
  assert.deepEqual(forkLog.map((m) => m.line), log.filter((m) => m.line <= reply.line).map((m) => m.line));

  // The app opens the fork: its lines, none of the second turn.
  await until(async () => new URL(page.url()).pathname.includes(fork.session_id), { timeoutMs: STEP_MS, what: 'the page to open the fork' });
  await waitText(connection(page), new RegExp(`connected · line ${reply.line}\\b`));
  await waitText(page.locator('body'), /text="ECHO one"/);
  await until(async () => (await renderedSids(page)).length >= forkLog.length, { timeoutMs: STEP_MS, what: 'the fork\'s lines' });
  assert.deepEqual(await renderedSids(page), forkLog.map((m) => m.sid), 'the page holds the fork\'s lines, and only those');
  assert.equal(await page.getByText('text="ECHO two"').count(), 0, 'the fork does not hold the second turn');
  await screenshots(page, 'fork');
  await context.close();
});
