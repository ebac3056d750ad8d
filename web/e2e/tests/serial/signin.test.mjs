// @ts-check
// Sign in through the form, and a wrong password that is refused.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { e2e, launch, anonymousContext, stack, STEP_MS, screenshots, waitText } from '../../lib/app.mjs';

/** @type {import('playwright-core').Browser} */
let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

e2e('sign in: a wrong password is refused, the right one opens the app', async () => {
  const context = await anonymousContext(browser);
  const page = await context.newPage();
  await page.goto('/');
  assert.match(new URL(page.url()).pathname, /^\/login/, 'an anonymous visit goes to the sign-in page');
  await screenshots(page, 'sign-in');

  await page.getByLabel('Password', { exact: true }).fill('not-the-password');
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await waitText(page.getByRole('alert'), /wrong password/i);
  assert.equal((await context.cookies()).filter((c) => c.name === 'svc_auth').length, 0, 'no cookie for a wrong password');

  await page.getByLabel('Password', { exact: true }).fill(stack.password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('navigation', { name: 'Sessions', exact: true }).waitFor({ timeout: STEP_MS });
  assert.equal(new URL(page.url()).pathname.startsWith('/login'), false, 'signed in, the app is served at /');
  await page.getByRole('button', { name: 'New session', exact: true }).waitFor({ timeout: STEP_MS });
  await page.getByRole('button', { name: 'Pending permissions', exact: true }).waitFor({ timeout: STEP_MS });
  await screenshots(page, 'home');
  await context.close();
});
