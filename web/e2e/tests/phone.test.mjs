// @ts-check
// The phone viewport (390×844): the sessions drawer, and a permission answered
// with one thumb, its card in view.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  launch, signedInContext, createSession, uniqueTitle, STEP_MS, PHONE, screenshots, screenshot, openSession,
  message, permissionCard, send, waitIdle, waitText, sessionLink,
  e2e,
} from '../lib/app.mjs';

/** @type {import('playwright-core').Browser} */
let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

/** The element's box lies inside the viewport. */
async function inView(locator) {
  const box = await locator.boundingBox();
  return !!box && box.x >= 0 && box.y >= 0 && box.x + box.width <= PHONE.width && box.y + box.height <= PHONE.height;
}

e2e('phone: the drawer, and a permission answered with the card in view', async () => {
  const { title } = await createSession(uniqueTitle('e2e phone'));
  const context = await signedInContext(browser, { phone: true });
  const page = await context.newPage();
  await page.goto('/');
  const menu = page.getByRole('button', { name: 'Sessions menu', exact: true });
  await menu.waitFor({ timeout: STEP_MS });
  assert.equal(await sessionLink(page, title).isVisible(), false, 'the sidebar is a closed drawer');
  await menu.click();
  await sessionLink(page, title).waitFor({ timeout: STEP_MS });
  await screenshot(page, 'phone-drawer');
  await openSession(page, title, { phone: false }); // the drawer is open already
  assert.equal(await sessionLink(page, title).isVisible(), false, 'the drawer closes on opening a session');

  // Inputs of at least 16 px (no zoom on focus); the composer in view.
  const fontSize = await message(page).evaluate((el) => parseFloat(getComputedStyle(el).fontSize));
  assert.ok(fontSize >= 16, `the composer's font is ${fontSize}px`);
  assert.ok(await inView(message(page)), 'the composer is in view');

  await send(page, 'RUN_BASH');
  const card = permissionCard(page, 'Bash');
  await card.waitFor({ timeout: STEP_MS });
  const allow = card.getByRole('button', { name: 'Allow', exact: true });
  await waitText(card, /echo hello-from-bash > bash_out\.txt && cat bash_out\.txt/);
  assert.ok(await inView(allow), 'the Allow button is in view without scrolling');
  for (const name of ['Allow', 'Deny']) {
    const box = await card.getByRole('button', { name, exact: true }).boundingBox();
    assert.ok(box && box.height >= 44 && box.width >= 44, `${name} is a 44 px target (${JSON.stringify(box)})`);
  }
  const scrollWidth = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(scrollWidth <= PHONE.width, `no sideways scrolling (${scrollWidth}px wide)`);
  await screenshots(page, 'phone-permission');
  await allow.tap();
  await waitText(page.locator('body'), /Tool finished: hello-from-bash/);
  await waitIdle(page);
  await context.close();
});
