// @ts-check
// Helpers of the terminal pane's tests, on its test hook `window.__svcTerm`
// (web/src/panes/terminal/hook.ts; see README "The terminal pane's test hook").
import { STEP_MS, until } from './app.mjs';

/**
 * Opens the session's terminal pane and waits until its first terminal (id =
 * the session id) is connected.
 * @param {import('playwright-core').Page} page
 * @param {string} sid
 */
export async function openTerminal(page, sid) {
  await page.goto(`/s/${sid}/terminal`);
  await page.getByRole('region', { name: 'Terminal', exact: true }).waitFor({ timeout: STEP_MS });
  await waitConnected(page, sid);
}

/**
 * The hook's state of terminal id (see hook.ts info()).
 * @param {import('playwright-core').Page} page
 * @param {string} id
 */
export function termInfo(page, id) {
  return page.evaluate((id) => /** @type {any} */ (window).__svcTerm.info(id), id);
}

/**
 * Waits until terminal id is connected (its socket got `connected`).
 * @param {import('playwright-core').Page} page
 * @param {string} id
 * @param {number} [timeoutMs]
 */
export async function waitConnected(page, id, timeoutMs = STEP_MS) {
  return until(async () => {
    const ok = await page.evaluate((id) => {
      const h = /** @type {any} */ (window).__svcTerm;
      return !!h && h.ids().includes(id) && h.info(id).state === 'connected';
    }, id);
    return ok;
  }, { timeoutMs, what: `terminal ${id} connected` });
}

/**
 * The visible lines of terminal id.
 * @param {import('playwright-core').Page} page
 * @param {string} id
 * @returns {Promise<string>}
 */
export function screenText(page, id) {
  return page.evaluate((id) => /** @type {any} */ (window).__svcTerm.text(id), id);
}

/**
 * Waits until the screen of terminal id matches pattern; returns its text.
 * @param {import('playwright-core').Page} page
 * @param {string} id
 * @param {RegExp} pattern
 * @param {number} [timeoutMs]
 */
export async function waitScreen(page, id, pattern, timeoutMs = STEP_MS) {
  let last = '';
  await until(async () => pattern.test((last = await screenText(page, id))), { timeoutMs, what: `${pattern} on terminal ${id}` }).catch((e) => {
    throw new Error(`${e.message}\nscreen:\n${last}`);
  });
  return last;
}

/**
 * Types a line into the focused terminal (the screen is clicked first) and Enter.
 * @param {import('playwright-core').Page} page
 * @param {string} line
 */
export async function typeLine(page, line) {
  await page.locator('.term-view:not([hidden]) .xterm').click();
  await page.keyboard.type(line);
  await page.keyboard.press('Enter');
}
