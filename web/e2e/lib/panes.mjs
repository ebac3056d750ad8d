// @ts-check
// Helpers of the Costs and SQL pane tests: the SQL editor (CodeMirror's
// contenteditable, the textbox "SQL"), the query status, a fake-agent turn
// played over a page's own /chat socket, and the SQL endpoint over the API.
import { readFile } from 'node:fs/promises';
import { stack, STEP_MS, until, waitText } from './app.mjs';

/** The SQL editor's textbox. */
export const sqlBox = (page) => page.getByRole('textbox', { name: 'SQL', exact: true });
/** The "Query status" status line. */
export const queryStatus = (page) => page.getByRole('status', { name: 'Query status' });
/** The result grid. */
export const resultTable = (page) => page.getByRole('table', { name: 'Query result', exact: true });

/**
 * Replaces the editor's text (select all, then the text as one input).
 * @param {import('playwright-core').Page} page
 * @param {string} text
 */
export async function setSQL(page, text) {
  await sqlBox(page).click();
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Delete');
  await page.keyboard.insertText(text);
  await until(async () => (await sqlBox(page).innerText()).replace(/\s+/g, ' ').trim() === text.replace(/\s+/g, ' ').trim(), { timeoutMs: STEP_MS, what: 'the SQL text in the editor' });
}

/**
 * Waits for the status to say "N rows in ...", and returns N.
 * @param {import('playwright-core').Page} page
 */
export async function waitRows(page) {
  await waitText(queryStatus(page), /rows? in [\d.]+ s/);
  const m = /([\d,]+) rows? in/.exec(await queryStatus(page).innerText());
  return Number((m?.[1] ?? '').replace(/,/g, ''));
}

/**
 * Clicks the button and returns the downloaded file's name and text.
 * @param {import('playwright-core').Page} page
 * @param {string} name the button's name
 */
export async function downloadText(page, name) {
  const [dl] = await Promise.all([page.waitForEvent('download', { timeout: STEP_MS }), page.getByRole('button', { name, exact: true }).click()]);
  const file = await dl.path();
  return { name: dl.suggestedFilename(), text: await readFile(file, 'utf8') };
}

/**
 * Posts SQL to the endpoint with the API token; returns status and parsed body.
 * @param {string} sql
 */
export async function postSQL(sql) {
  const res = await fetch(`${stack.baseURL}/api/shadow-db/sql`, { method: 'POST', headers: { Authorization: `Bearer ${stack.token}`, 'Content-Type': 'text/plain' }, body: sql });
  return { status: res.status, body: JSON.parse(await res.text()) };
}

/**
 * Plays prompts on a session over a /chat socket opened inside a signed-in page
 * of the gateway's origin (not the app): allows every permission request and
 * waits for each turn's result.
 * @param {import('playwright-core').BrowserContext} context
 * @param {string} id
 * @param {string[]} prompts
 */
export async function playTurns(context, id, prompts) {
  const page = await context.newPage();
  await page.goto('/manifest.json');
  await page.evaluate(async ({ id, prompts, ms }) => {
    const ws = new WebSocket(`${location.origin.replace(/^http/, 'ws')}/chat?session=${id}`);
    /** @type {(v?: unknown) => void} */
    let turnDone = () => {};
    ws.onmessage = (ev) => {
      const f = JSON.parse(ev.data);
      if (f.type === 'permission_request' && !f.replay) ws.send(JSON.stringify({ type: 'permission_response', request_id: f.request_id, behavior: 'allow' }));
      if (f.type === 'agent_message' && f.data?.type === 'result') turnDone();
    };
    await new Promise((resolve, reject) => { ws.onopen = resolve; ws.onerror = reject; });
    for (const p of prompts) {
      const done = new Promise((resolve, reject) => { turnDone = resolve; setTimeout(() => reject(new Error(`no result for ${p}`)), ms); });
      ws.send(JSON.stringify({ type: 'user_message', content: p }));
      await done;
    }
    ws.close();
  }, { id, prompts, ms: STEP_MS });
  await page.close();
}
