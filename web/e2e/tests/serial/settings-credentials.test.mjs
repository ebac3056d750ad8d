// @ts-check
// Revoke scripts and change the password from the settings pane. Both void
// credentials every other test uses (the API token, every cookie), so this
// file runs in the serial phase; it puts the stack's password back at its
// end, and lib/app.mjs's api() re-reads the token from the config file.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { e2e, launch, signedInContext, stack, screenshots, STEP_MS, waitText } from '../../lib/app.mjs';
import { configToken } from '../../lib/token.mjs';

/** @type {import('playwright-core').Browser} */
let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

/** @param {string} token */
async function infoWith(token) {
  return (await fetch(`${stack.baseURL}/api/info`, { headers: { Authorization: `Bearer ${token}` } })).status;
}

e2e('settings: revoke scripts: the old API token gets 401, the new one shown works', async () => {
  const old = (await configToken(stack.home)) ?? stack.token;
  assert.equal(await infoWith(old), 200);
  const context = await signedInContext(browser);
  const page = await context.newPage();
  await page.goto('/settings?section=security');
  await page.getByRole('button', { name: 'Revoke scripts' }).click();
  const dialog = page.getByRole('dialog', { name: 'Revoke scripts' });
  await waitText(dialog, /API token stops working/);
  await dialog.getByRole('button', { name: 'Confirm', exact: true }).click();
  const shown = page.getByRole('textbox', { name: 'New API token' });
  await shown.waitFor({ timeout: STEP_MS });
  const token = await shown.inputValue();
  assert.match(token, /^svct_\d+_/);
  assert.notEqual(token, old);
  assert.equal(await infoWith(old), 401, 'the old token is refused');
  assert.equal(await infoWith(token), 200, 'the token shown works');
  assert.equal((await page.request.get('/api/info')).status(), 200, 'this browser stays signed in');
  await screenshots(page, 'settings-revoked-scripts');
});

e2e('settings: change the password: every browser is signed out, the new token shown works, only the new password signs in', async () => {
  const newPassword = `changed-${Math.random().toString(36).slice(2)}`;
  const oldToken = await configToken(stack.home);
  const context = await signedInContext(browser);
  const page = await context.newPage();
  const other = await (await signedInContext(browser)).newPage();
  await other.goto('/');
  await page.goto('/settings?section=security');
  const form = page.getByRole('form', { name: 'Password' });

  // A wrong current password: the server's refusal at the field, nothing changed.
  await form.getByLabel('Current password', { exact: true }).fill('not the password');
  await form.getByLabel('New password', { exact: true }).fill(newPassword);
  await form.getByLabel('New password again', { exact: true }).fill(newPassword);
  await form.getByRole('button', { name: 'Change password' }).click();
  await page.getByRole('dialog', { name: 'Change the password' }).getByRole('button', { name: 'Confirm', exact: true }).click();
  await waitText(page.locator('#pw-current-err'), /current password is wrong/);
  assert.equal(await form.getByLabel('Current password', { exact: true }).getAttribute('aria-invalid'), 'true');
  assert.equal((await page.request.get('/api/info')).status(), 200, 'still signed in');

  try {
    await form.getByLabel('Current password', { exact: true }).fill(stack.password);
    await form.getByRole('button', { name: 'Change password' }).click();
    const dialog = page.getByRole('dialog', { name: 'Change the password' });
    await waitText(dialog, /signed out at once, this one included/);
    await dialog.getByRole('button', { name: 'Confirm', exact: true }).click();
    const status = page.getByRole('status').filter({ hasText: 'Password changed' });
    await waitText(status, /every browser is signed out, this one included/i);
    const token = await page.getByRole('textbox', { name: 'New API token' }).inputValue();
    await screenshots(page, 'settings-password-changed');
    assert.equal(await infoWith(token), 200, 'the new token works');
    if (oldToken) assert.equal(await infoWith(oldToken), 401, 'the old token is refused');
    assert.equal((await page.request.get('/api/info')).status(), 401, 'this browser is signed out');
    assert.equal((await other.request.get('/api/info')).status(), 401, 'another browser is signed out');
    const login = (/** @type {string} */ pw) => fetch(`${stack.baseURL}/api/login`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ password: pw }) });
    assert.equal((await login(stack.password)).status, 401, 'the old password is refused');
    assert.equal((await login(newPassword)).status, 200, 'the new password signs in');
    await page.getByRole('link', { name: 'Sign in again' }).click();
    await page.waitForURL(/\/login/, { timeout: STEP_MS });
  } finally {
    // Put the stack's password back for the tests that follow.
    const token = await configToken(stack.home);
    const res = await fetch(`${stack.baseURL}/api/auth/password`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ current_password: newPassword, new_password: stack.password }),
    });
    // 403 when the change above never happened: the password is the stack's still.
    assert.ok(res.status === 200 || res.status === 403, `restoring the password: ${res.status} ${await res.text()}`);
  }
});
