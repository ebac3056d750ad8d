// @ts-check
// Create a session through the "New session" form, then a streamed reply with
// a fenced code block.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  launch, signedInContext, api, workdir, uniqueTitle, STEP_MS, screenshots, connection, agentStatus,
  sessionLink, send, waitIdle, waitText, recordTexts, recordAppearances, logMessages,
  e2e,
} from '../lib/app.mjs';

/** @type {import('playwright-core').Browser} */
let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

e2e('create a session, and a streamed reply with code', async () => {
  const context = await signedInContext(browser);
  const page = await context.newPage();
  await page.goto('/');

  // The form: working directory, provider by display name, title; Start opens it.
  const cwd = await workdir();
  const title = uniqueTitle('e2e create');
  await page.getByRole('button', { name: 'New session', exact: true }).click();
  await page.getByRole('textbox', { name: 'Working directory', exact: true }).fill(cwd);
  await page.getByRole('combobox', { name: 'Provider', exact: true }).selectOption({ label: 'Claude Code' });
  await page.getByRole('textbox', { name: 'Title', exact: true }).fill(title);
  await screenshots(page, 'new-session');
  await page.getByRole('button', { name: 'Start', exact: true }).click();

  await waitText(connection(page), /connected/i);
  await sessionLink(page, title).waitFor({ timeout: STEP_MS });
  const { sessions } = await api('GET', `/api/sessions?cwd=${encodeURIComponent(cwd)}`);
  assert.equal(sessions.length, 1, 'Start created exactly one session');
  assert.equal(sessions[0].title, title);
  assert.equal(sessions[0].provider, 'agent-sdk');
  const id = sessions[0].session_id;
  await waitText(agentStatus(page), /idle/i);

  // The reply streams in: its first words show while the turn still runs.
  const states = await recordTexts(agentStatus(page));
  const seen = await recordAppearances(page, ['Here is the function', 'It adds two numbers.']);
  await send(page, 'CODE');
  await waitText(page.locator('body'), /It adds two numbers\./);
  await waitIdle(page);
  const times = await seen();
  assert.ok(times['Here is the function'] !== null && times['It adds two numbers.'] !== null);
  assert.ok(times['Here is the function'] < times['It adds two numbers.'], `streamed: the first chunk showed before the last (${JSON.stringify(times)})`);
  assert.ok((await states()).some((s) => /working/i.test(s)), 'the agent status said "working" during the turn');

  // The fence is rendered as a code block, not as Markdown source.
  const code = page.locator('pre code').filter({ hasText: 'return a + b' });
  await code.first().waitFor({ timeout: STEP_MS });
  assert.match(await code.first().innerText(), /func add\(a, b int\) int \{\s+return a \+ b\s+\}/);
  assert.equal(await page.getByText('```go').count(), 0, 'no raw fence in the page');

  const log = await logMessages(id);
  assert.ok(log.some((m) => m.kind === 'agent' && m.payload.type === 'result'), 'the turn is in the log');
  await screenshots(page, 'conversation-code');
  await context.close();
});
