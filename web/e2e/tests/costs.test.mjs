// @ts-check
// The Costs pane over a fake-agent session: its turns' cost per day, model,
// session and tool as charts and tables, the recent turns, the prompt lists
// and search, "Send again" to a session (stored, and said so), the prompt
// then frequent; screenshots.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, signedInContext, api, createSession, uniqueTitle, screenshots, waitText, until, logMessages, STEP_MS, e2e } from '../lib/app.mjs';
import { playTurns } from '../lib/panes.mjs';

/** @type {import('playwright-core').Browser} */
let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

e2e('the costs of a fake-agent session, its prompts, and Send again', async () => {
  const title = uniqueTitle('e2e costs');
  const word = `zebra${Math.random().toString(36).slice(2, 7)}`;
  const s = await createSession(title);
  const context = await signedInContext(browser);
  // Two turns: a reply, and a Bash tool call (allowed).
  await playTurns(context, s.session_id, [`hello ${word} costs`, 'RUN_BASH']);
  // analytics records them from the turn events (asynchronously).
  const turns = await until(async () => {
    const r = await api('GET', `/api/turns?session=${s.session_id}`);
    return r.turns.length === 2 && r.turns.every((t) => t.ended_at) ? r.turns : null;
  }, { timeoutMs: STEP_MS, what: 'analytics to record the two turns' });
  const total = turns.reduce((a, t) => a + t.cost, 0);
  assert.ok(total > 0, 'the fake agent reports a cost');

  const page = await context.newPage();
  await page.goto('/costs');
  await page.getByRole('heading', { name: 'Costs', exact: true }).waitFor({ timeout: STEP_MS });
  await page.getByRole('combobox', { name: 'Range' }).selectOption({ label: 'Last 7 days' });

  // Tables: per session (this one, by title), per model, per tool, recent turns.
  const perSession = page.getByRole('table', { name: 'Cost per session' });
  await perSession.getByRole('link', { name: title }).waitFor({ timeout: STEP_MS });
  const row = perSession.getByRole('row').filter({ has: page.getByRole('link', { name: title }) });
  assert.match(await row.innerText(), /\b2\b/, 'two turns');
  await waitText(page.getByRole('table', { name: 'Cost per model' }), /claude-sonnet-4-5/);
  await waitText(page.getByRole('table', { name: 'Cost per tool' }), /Bash/);
  await waitText(page.getByRole('table', { name: 'Recent turns' }), new RegExp(word));

  // Charts: uPlot canvases in the named images.
  for (const name of [/^Cost per day/, /^Cost per model$/, /^Cost attributed to each tool$/, /^Cost of the costliest sessions$/]) {
    await page.getByRole('img', { name }).locator('canvas').first().waitFor({ timeout: STEP_MS });
  }
  await screenshots(page, 'costs');

  // Prompts: recent, then a search for the unique word.
  const recent = page.getByRole('list', { name: 'Recent prompts' });
  await waitText(recent, new RegExp(word));
  await page.getByRole('tab', { name: 'Search', exact: true }).click();
  await page.getByRole('searchbox', { name: 'Search prompts' }).fill(word);
  await page.getByRole('button', { name: 'Search', exact: true }).click();
  const found = page.getByRole('list', { name: 'Matching prompts' });
  await waitText(found, new RegExp(word));
  assert.equal(await found.getByRole('listitem').count(), 1);
  assert.match(await found.locator('mark').first().innerText(), new RegExp(word));

  // Send again, to this session: stored, and the page says so.
  await page.getByRole('combobox', { name: 'Send to' }).selectOption({ value: s.session_id });
  const before = (await logMessages(s.session_id)).filter((m) => m.kind === 'user_prompt').length;
  await found.getByRole('button', { name: /^Send again/ }).click();
  const said = page.getByRole('status', { name: 'Send result' });
  await waitText(said, /Sent to .*stored as line \d+/);
  const prompts = await until(async () => {
    const p = (await logMessages(s.session_id)).filter((m) => m.kind === 'user_prompt');
    return p.length === before + 1 ? p : null;
  }, { timeoutMs: STEP_MS, what: 'the prompt sent again in the log' });
  assert.equal(prompts.at(-1).payload.content, `hello ${word} costs`);
  const line = Number(/line (\d+)/.exec(await said.innerText())?.[1]);
  assert.equal(prompts.at(-1).line, line, 'the line the page reports is the stored one');
  await screenshots(page, 'costs-sent');

  // The text now sent twice is a frequent prompt (once analytics has the new turn).
  await page.getByRole('tab', { name: 'Frequent', exact: true }).click();
  const frequent = page.getByRole('list', { name: 'Frequent prompts' });
  await until(async () => {
    const item = frequent.getByRole('listitem').filter({ hasText: `hello ${word} costs` });
    if ((await item.count()) === 1 && /2× in 1 session/.test(await item.innerText())) return true;
    await page.getByRole('button', { name: 'Refresh', exact: true }).click();
    return false;
  }, { timeoutMs: STEP_MS, what: 'the prompt sent twice among the frequent ones', intervalMs: 500 });

  // Its chat opens from the status's link.
  await said.getByRole('link', { name: 'Open chat' }).click();
  await until(async () => new URL(page.url()).pathname === `/s/${s.session_id}`, { timeoutMs: STEP_MS, what: 'the chat of the session' });
  await context.close();
});
