// @ts-check
// Permission cards: answered in tab B while tab A's card retires; an edited
// input that the agent receives; a pending card that survives a reload.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  launch, signedInContext, api, createSession, uniqueTitle, STEP_MS, screenshots, openSession,
  permissionCard, send, waitIdle, waitText, until, message,
  e2e,
} from '../lib/app.mjs';

/** @type {import('playwright-core').Browser} */
let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

/** The card has no enabled Allow or Deny and says who answered, or is gone. */
async function retired(card) {
  await until(async () => {
    if ((await card.count()) === 0) return true;
    for (const name of ['Allow', 'Deny']) {
      const b = card.getByRole('button', { name, exact: true });
      if ((await b.count()) > 0 && (await b.isEnabled())) return false;
    }
    return /answered/i.test(await card.innerText());
  }, { timeoutMs: STEP_MS, what: 'the permission card to retire' });
}

/**
 * A new session open in a page of its own, whose agent waits on a Bash
 * permission (the fake agent's RUN_BASH): the card, in view.
 * @param {string} label
 */
async function pendingBash(label) {
  const { session_id: id, title } = await createSession(uniqueTitle(label));
  const context = await signedInContext(browser);
  const page = await context.newPage();
  await openSession(page, title);
  await send(page, 'RUN_BASH');
  const card = permissionCard(page, 'Bash');
  await card.waitFor({ timeout: STEP_MS });
  return { id, context, page, card };
}

/** The tools of the session's log, as GET .../logs/tools gives them. */
async function tools(id) {
  return (await api('GET', `/api/sessions/${id}/logs/tools`)).tools;
}

e2e('a Bash permission answered in tab B retires tab A\'s card', async () => {
  const { session_id: id, title } = await createSession(uniqueTitle('e2e two tabs'));
  const context = await signedInContext(browser);
  const a = await context.newPage();
  const b = await context.newPage();
  await openSession(a, title);
  await openSession(b, title);

  await send(a, 'RUN_BASH');
  const cardA = permissionCard(a, 'Bash');
  const cardB = permissionCard(b, 'Bash');
  await cardA.waitFor({ timeout: STEP_MS });
  await cardB.waitFor({ timeout: STEP_MS });
  // The whole command, never truncated, and the suggestions as buttons.
  await waitText(cardA, /echo hello-from-bash > bash_out\.txt && cat bash_out\.txt/);
  assert.ok((await cardA.getByRole('button').count()) >= 4, 'Allow, Deny, Edit input and at least one suggestion');
  await screenshots(a, 'permission-card');

  await cardB.getByRole('button', { name: 'Allow', exact: true }).click();
  await retired(cardA);
  await retired(cardB);
  await waitText(a.locator('body'), /Tool finished: hello-from-bash/);
  await waitIdle(a);
  await waitIdle(b);
  await screenshots(a, 'permission-answered-elsewhere');

  const [bash] = await tools(id);
  assert.equal(bash.name, 'Bash');
  assert.equal(bash.result?.content, 'hello-from-bash', 'the agent ran the command as asked');
  await context.close();
});

e2e('an edited input is what the agent runs', async () => {
  const { id, context, page, card } = await pendingBash('e2e edit input');
  await card.getByRole('button', { name: 'Edit input', exact: true }).click();
  const input = card.getByRole('textbox', { name: 'Tool input', exact: true });
  assert.match(await input.inputValue(), /echo hello-from-bash > bash_out\.txt/, 'the editor starts from the command');
  await input.fill('echo edited-by-e2e');
  await screenshots(page, 'permission-edit-input');
  await card.getByRole('button', { name: 'Allow edited', exact: true }).click();

  await waitText(page.locator('body'), /Tool finished: ran: echo edited-by-e2e/);
  await retired(card);
  await waitIdle(page);
  const [bash] = await tools(id);
  assert.equal(bash.result?.content, 'ran: echo edited-by-e2e', 'the agent received the edited command');
  await context.close();
});

e2e('a pending card comes back after a reload', async () => {
  const { id, context, page } = await pendingBash('e2e reload');
  await page.reload();
  const card = permissionCard(page, 'Bash');
  await card.waitFor({ timeout: STEP_MS });
  await waitText(card, /echo hello-from-bash/);
  await card.getByRole('button', { name: 'Allow', exact: true }).click();
  await waitText(page.locator('body'), /Tool finished: hello-from-bash/);
  await retired(card);
  await waitIdle(page);
  const [bash] = await tools(id);
  assert.equal(bash.result?.content, 'hello-from-bash');
  await context.close();
});

e2e('Deny with a reason: the agent gets the reason and does not run the tool', async () => {
  const { id, context, page, card } = await pendingBash('e2e deny');
  await card.getByRole('textbox', { name: 'Reason', exact: true }).fill('not on this machine');
  await card.getByRole('button', { name: 'Deny', exact: true }).click();
  await waitText(page.locator('body'), /Tool finished: not on this machine/);
  await retired(card);
  await waitIdle(page);
  const [bash] = await tools(id);
  assert.equal(bash.result?.is_error, true, 'the tool did not run');
  assert.equal(bash.result?.content, 'not on this machine', 'the agent received the reason');
});

e2e('the inbox answers a pending request of another session', async () => {
  const a = await createSession(uniqueTitle('e2e inbox asks'));
  const b = await createSession(uniqueTitle('e2e inbox elsewhere'));
  const context = await signedInContext(browser);
  const page = await context.newPage();
  await openSession(page, a.title);
  await send(page, 'RUN_BASH');
  await permissionCard(page, 'Bash').waitFor({ timeout: STEP_MS });

  // From another session, the badge and the inbox lead back to it.
  await openSession(page, b.title);
  const inboxButton = page.getByRole('button', { name: 'Pending permissions', exact: true });
  await waitText(inboxButton, /[1-9]/);
  await inboxButton.click();
  const inbox = page.getByRole('dialog', { name: 'Pending permission requests', exact: true });
  const item = inbox.getByRole('listitem').filter({ hasText: a.title });
  await waitText(item, /Bash/);
  await waitText(item, /echo hello-from-bash > bash_out\.txt && cat bash_out\.txt/);
  await screenshots(page, 'inbox');
  await item.getByRole('button', { name: 'Allow here', exact: true }).click();

  // Answered from here: the agent runs the command, and the request leaves the inbox.
  const bash = await until(async () => {
    const [t] = await tools(a.session_id);
    return t?.result ? t : null;
  }, { timeoutMs: STEP_MS, what: 'the tool result in the log' });
  assert.equal(bash.result.content, 'hello-from-bash');
  await until(async () => (await item.count()) === 0 || /Allowed/.test(await item.innerText()), { timeoutMs: STEP_MS, what: 'the inbox item to say Allowed or leave' });
  await until(async () => !(await api('GET', `/api/session/${a.session_id}`)).agent_running, { timeoutMs: STEP_MS, what: 'the turn to end' });
});

e2e('by keyboard alone: Enter sends, Tab reaches Allow, Enter allows', async () => {
  const { session_id: id, title } = await createSession(uniqueTitle('e2e keyboard'));
  const context = await signedInContext(browser);
  const page = await context.newPage();
  await openSession(page, title);
  await message(page).focus();
  await page.keyboard.type('RUN_BASH');
  await page.keyboard.press('Enter');
  const card = permissionCard(page, 'Bash');
  await card.waitFor({ timeout: STEP_MS });
  const allow = card.getByRole('button', { name: 'Allow', exact: true });
  // Tab through the page (at most 80 stops) until Allow has the focus.
  let reached = false;
  for (let i = 0; i < 80 && !reached; i++) {
    await page.keyboard.press('Tab');
    reached = await allow.evaluate((el) => el === document.activeElement);
  }
  assert.ok(reached, 'Tab reaches the Allow button');
  await page.keyboard.press('Enter');
  await waitText(page.locator('body'), /Tool finished: hello-from-bash/);
  await waitIdle(page);
  const [bash] = await tools(id);
  assert.equal(bash.result?.content, 'hello-from-bash');
});
