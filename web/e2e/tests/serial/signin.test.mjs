// @ts-check
// Sign in through the form, and a wrong password that is refused; sign out,
// and the cookie is dead on the server too.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { e2e, launch, anonymousContext, signedInContext, stack, STEP_MS, screenshots, waitText } from '../../lib/app.mjs';

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

e2e('sign out: the cookie is revoked on the server (a copy taken before gets 401), other browsers stay signed in', async () => {
  const context = await anonymousContext(browser);
  const page = await context.newPage();
  await page.goto('/login');
  await page.getByLabel('Password', { exact: true }).fill(stack.password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('navigation', { name: 'Sessions', exact: true }).waitFor({ timeout: STEP_MS });
  const copy = (await context.cookies()).find((c) => c.name === 'svc_auth')?.value;
  assert.ok(copy, 'signed in with a cookie');
  const info = async (/** @type {string} */ value) => (await fetch(`${stack.baseURL}/api/info`, { headers: { Cookie: `svc_auth=${value}` } })).status;
  assert.equal(await info(copy), 200, 'the copy works while signed in');

  // Another browser, signed in on its own.
  const other = await signedInContext(browser);
  const otherCookie = (await other.cookies()).find((c) => c.name === 'svc_auth')?.value;
  assert.ok(otherCookie && otherCookie !== copy);

  await page.getByRole('button', { name: 'Sign out', exact: true }).click();
  await page.waitForURL((u) => u.pathname.startsWith('/login'), { timeout: STEP_MS });
  await waitText(page.getByRole('status'), /You are signed out\. A copy of this browser's cookie no longer works\./);
  await screenshots(page, 'signed-out');
  assert.equal((await context.cookies()).filter((c) => c.name === 'svc_auth' && c.value !== '').length, 0, 'the browser dropped its cookie');
  assert.equal(await info(copy), 401, 'the copy taken before signing out is refused');
  assert.equal(await info(/** @type {string} */ (otherCookie)), 200, 'the other browser stays signed in');
  await context.close();
});
