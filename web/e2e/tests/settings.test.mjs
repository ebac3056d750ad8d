// @ts-check
// The command palette (Ctrl+K: a pane by its name, a session by its title;
// Ctrl+Shift+K in the terminal, where Ctrl+K is the shell's),
// the shortcuts sheet (?), and the settings pane: a value the server refuses
// shows its message at the field, and nothing changes. The tests that revoke
// the token or change the password disturb every other test: they are in
// serial/settings-credentials.test.mjs.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { e2e, launch, signedInContext, createSession, uniqueTitle, api, screenshots, STEP_MS, waitText, until } from '../lib/app.mjs';
import { waitConnected, waitScreen } from '../lib/terminal.mjs';

/** @type {import('playwright-core').Browser} */
let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

/** @param {import('playwright-core').Page} page */
const palette = (page) => page.getByRole('dialog', { name: 'Command palette', exact: true });

e2e('palette: Ctrl+K, "Terminal", Enter opens the Terminal pane; a session by its title; Esc gives the focus back', async () => {
  const a = await createSession(uniqueTitle('palette A'));
  const b = await createSession(uniqueTitle('palette B'));
  const context = await signedInContext(browser);
  const page = await context.newPage();
  await page.goto(`/s/${a.session_id}`);
  await page.getByRole('textbox', { name: 'Message', exact: true }).waitFor({ timeout: STEP_MS });

  await page.keyboard.press('Control+k');
  await palette(page).waitFor({ timeout: STEP_MS });
  const search = palette(page).getByRole('combobox', { name: 'Search commands' });
  assert.equal(await search.evaluate((el) => el === document.activeElement), true, 'the search box has the focus');
  for (const name of ['Chat', 'Terminal', 'Files', 'Changes', 'Git', 'Costs', 'SQL', 'Settings'])
    await palette(page).getByRole('option', { name, exact: true }).waitFor({ timeout: STEP_MS });
  await screenshots(page, 'palette');

  await search.fill('Terminal');
  const first = palette(page).getByRole('option').first();
  assert.equal(await first.getAttribute('aria-selected'), 'true');
  assert.equal((await first.innerText()).split('\n')[0].trim(), 'Terminal', 'the exact name is the first choice');
  await page.keyboard.press('Enter');
  await until(async () => new URL(page.url()).pathname === `/s/${a.session_id}/terminal`, { timeoutMs: STEP_MS, what: 'the Terminal pane URL' });
  assert.equal(await palette(page).count(), 0, 'Enter closes the palette');

  // In the terminal Ctrl+K is the shell's (readline's kill to the end of the
  // line); Ctrl+Shift+K opens the palette there.
  await waitConnected(page, a.session_id);
  await page.locator('.term-view:not([hidden]) .xterm').click();
  await page.keyboard.type('echo kept-cut');
  for (let i = 0; i < 4; i++) await page.keyboard.press('ArrowLeft');
  await page.keyboard.press('Control+k');
  await page.keyboard.press('Enter');
  await waitScreen(page, a.session_id, /^kept$/m);
  assert.equal(await palette(page).count(), 0, 'Ctrl+K in the terminal went to the shell, not to the palette');

  // A session by its title: from a session pane, the same pane of that session.
  await page.keyboard.press('Control+Shift+K');
  await search.fill(b.title);
  await palette(page).getByRole('option', { name: b.title, exact: true }).waitFor({ timeout: STEP_MS });
  await page.keyboard.press('Enter');
  await until(async () => new URL(page.url()).pathname === `/s/${b.session_id}/terminal`, { timeoutMs: STEP_MS, what: "session B's Terminal pane" });

  // Arrows move the choice; Escape closes and the focus goes back.
  await page.goto(`/s/${a.session_id}`);
  const box = page.getByRole('textbox', { name: 'Message', exact: true });
  await box.focus();
  await page.keyboard.press('Control+k');
  await search.fill('set');
  await page.keyboard.press('ArrowDown');
  assert.equal(await palette(page).getByRole('option').nth(1).getAttribute('aria-selected'), 'true', 'ArrowDown selects the next option');
  await page.keyboard.press('ArrowUp');
  assert.equal(await palette(page).getByRole('option').first().getAttribute('aria-selected'), 'true');
  await page.keyboard.press('Escape');
  await until(async () => (await palette(page).count()) === 0, { timeoutMs: STEP_MS, what: 'the palette to close' });
  assert.equal(await box.evaluate((el) => el === document.activeElement), true, 'the focus is back in the composer');

  // Fuzzy: "sttngs" finds Settings, and Enter opens the global pane.
  await page.keyboard.press('Control+k');
  await search.fill('sttngs');
  assert.equal((await palette(page).getByRole('option').first().innerText()).split('\n')[0].trim(), 'Settings');
  await page.keyboard.press('Enter');
  await until(async () => new URL(page.url()).pathname === '/settings', { timeoutMs: STEP_MS, what: 'the Settings pane' });
  await page.getByRole('navigation', { name: 'Settings sections' }).waitFor({ timeout: STEP_MS });
});

e2e('help sheet: ? lists the shortcuts, Esc closes it', async () => {
  const context = await signedInContext(browser);
  const page = await context.newPage();
  await page.goto('/');
  await page.getByRole('navigation', { name: 'Sessions', exact: true }).waitFor({ timeout: STEP_MS });
  await page.locator('body').click({ position: { x: 5, y: 400 } }).catch(() => {});
  await page.keyboard.press('?');
  const sheet = page.getByRole('dialog', { name: 'Keyboard shortcuts', exact: true });
  await sheet.waitFor({ timeout: STEP_MS });
  await waitText(sheet, /Ctrl\+K/);
  await waitText(sheet, /command palette/i);
  await screenshots(page, 'shortcuts');
  await page.keyboard.press('Escape');
  await until(async () => (await sheet.count()) === 0, { timeoutMs: STEP_MS, what: 'the sheet to close' });

  // Typed into a text field, "?" is a character, not the sheet.
  await page.goto('/new');
  const title = page.getByRole('textbox').first();
  await title.focus();
  await page.keyboard.press('?');
  assert.equal(await sheet.count(), 0, '? in a text field does not open the sheet');
});

e2e('settings: sections, and a refused value shows the server message at its field, changing nothing', async () => {
  const before = await api('GET', '/api/app/provider-path/codex');
  const context = await signedInContext(browser);
  const page = await context.newPage();
  await page.goto('/settings');
  const nav = page.getByRole('navigation', { name: 'Settings sections' });
  await nav.waitFor({ timeout: STEP_MS });
  const field = page.getByLabel('Path of codex', { exact: true });
  await field.fill('bin/codex');
  await page.getByRole('region', { name: 'Provider Codex' }).getByRole('button', { name: 'Save path' }).click();
  await waitText(page.getByRole('alert').filter({ hasText: 'absolute' }), /want an absolute path/);
  assert.equal(await field.getAttribute('aria-invalid'), 'true');
  const describedBy = await field.getAttribute('aria-describedby');
  assert.match(await page.locator(`#${describedBy}`).innerText(), /bin\/codex.*absolute/, 'the message is tied to its field');
  assert.deepEqual(await api('GET', '/api/app/provider-path/codex'), before, 'a refused path changes nothing');
  await screenshots(page, 'settings-providers');

  // App config: a timeout of 0 is refused at its field.
  await nav.getByRole('link', { name: 'Config' }).click();
  const timeout = page.getByLabel('shadow_db.sql_timeout_s');
  await timeout.fill('0');
  await page.getByRole('button', { name: 'Save config' }).click();
  await waitText(page.locator('#cfg-shadow_db-sql_timeout_s-err'), /from 1 to 3600/);
  assert.equal((await api('GET', '/api/app/config')).config['shadow_db.sql_timeout_s'] > 0, true);
  await screenshots(page, 'settings-config');

  // Helpers: an install says what it changed.
  await nav.getByRole('link', { name: 'Helpers' }).click();
  await page.getByRole('button', { name: /Install helpers|Reinstall helpers/ }).click();
  await waitText(page.getByRole('status').filter({ hasText: 'Installed' }), /shadow-git: (installed at \/|replaced|unchanged)/);
  assert.equal((await api('GET', '/api/app/helpers/status')).all_current, true);

  for (const [link, name] of [['Password and access', 'settings-security'], ['Helpers', 'settings-helpers'], ['Background tasks', 'settings-tasks'], ['Catalog', 'settings-catalog'], ['Tabs and presets', 'settings-layout']]) {
    await nav.getByRole('link', { name: link }).click();
    await page.getByRole('heading', { level: 2, name: link }).waitFor({ timeout: STEP_MS });
    await screenshots(page, name);
  }
  // The consequence is spelt out before anything happens; Cancel changes nothing.
  await nav.getByRole('link', { name: 'Password and access' }).click();
  await page.getByRole('button', { name: 'Revoke browsers' }).click();
  const dialog = page.getByRole('dialog', { name: 'Revoke browsers' });
  await waitText(dialog, /signed out at once, this one included/);
  await screenshots(page, 'settings-revoke-dialog');
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  assert.equal((await page.request.get('/api/info')).status(), 200, 'Cancel kept this browser signed in');
});
