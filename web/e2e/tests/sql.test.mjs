// @ts-check
// The SQL pane: a query run and downloaded as TSV and JSON (the files' content
// checked), Ctrl+Enter runs, the validator's refusal and PostgreSQL's error
// shown, INTERRUPT at the deadline, a cancelled query, a saved query that
// survives a reload, the chart of two columns; screenshots.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, signedInContext, api, stack, screenshots, waitText, until, STEP_MS, e2e } from '../lib/app.mjs';
import { sqlBox, queryStatus, resultTable, setSQL, waitRows, downloadText, postSQL } from '../lib/panes.mjs';

/** @type {import('playwright-core').Browser} */
let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

const QUERY = "SELECT g, 'row ' || g AS label, CASE WHEN g = 2 THEN E'tab\\there\\nnext' END AS odd FROM generate_series(1, 1000) g";

e2e('a query runs, its result is virtualised, and downloads as TSV and JSON', async () => {
  const context = await signedInContext(browser);
  const page = await context.newPage();
  await page.goto('/sql');
  await sqlBox(page).waitFor({ timeout: STEP_MS });

  await setSQL(page, QUERY);
  await page.getByRole('button', { name: 'Run query', exact: true }).click();
  assert.equal(await waitRows(page), 1000);
  const table = resultTable(page);
  assert.equal(await table.getAttribute('aria-rowcount'), '1001');
  const inDom = await table.getByRole('row').count();
  assert.ok(inDom > 5 && inDom < 100, `only the rows in view are in the DOM (${inDom})`);
  assert.equal(await table.getByRole('columnheader').allInnerTexts().then((h) => h.join('|')), 'g|label|odd');
  assert.equal(await table.getByRole('row').nth(1).getAttribute('aria-rowindex'), '2');

  // Scrolled to the end, the last row is there with its aria-rowindex.
  await table.locator('.sqlgrid-scroll').evaluate((el) => { el.scrollTop = el.scrollHeight; });
  await until(async () => (await table.locator('[aria-rowindex="1001"]').count()) === 1, { timeoutMs: STEP_MS, what: 'the last row rendered' });
  assert.match(await table.locator('[aria-rowindex="1001"]').innerText(), /1000\s+row 1000/);
  await screenshots(page, 'sql-result');

  const tsv = await downloadText(page, 'Download TSV');
  assert.match(tsv.name, /^query-\d{8}-\d{6}\.tsv$/);
  const lines = tsv.text.split('\n');
  assert.equal(lines.length, 1002, 'a header, 1000 rows, and the final newline');
  assert.equal(lines[0], 'g\tlabel\todd');
  assert.equal(lines[1], '1\trow 1\t');
  assert.equal(lines[2], '2\trow 2\ttab\\there\\nnext', 'tab and newline escaped as \\t and \\n');
  assert.equal(lines[1000], '1000\trow 1000\t');
  assert.equal(lines[1001], '');
  // The server's own TSV of the same query is the same text.
  const res = await fetch(`${stack.baseURL}/api/shadow-db/sql?format=tsv`, { method: 'POST', headers: { Authorization: `Bearer ${stack.token}` }, body: QUERY });
  assert.equal(tsv.text, await res.text(), 'the download equals the server\'s TSV');

  const json = await downloadText(page, 'Download JSON');
  assert.match(json.name, /\.json$/);
  const j = JSON.parse(json.text);
  assert.deepEqual(j.columns, ['g', 'label', 'odd']);
  assert.equal(j.count, 1000);
  assert.deepEqual(j.rows[1], ['2', 'row 2', 'tab\there\nnext']);

  // The chart of two columns.
  await page.getByRole('tab', { name: 'Chart', exact: true }).click();
  await page.getByRole('combobox', { name: 'x column' }).selectOption({ label: 'g' });
  await page.getByRole('combobox', { name: 'y column' }).selectOption({ label: 'g' });
  await page.getByRole('img', { name: 'Chart of g by g' }).locator('canvas').first().waitFor({ timeout: STEP_MS });
  await screenshots(page, 'sql-chart');
  await context.close();
});

e2e('Ctrl+Enter runs; the refusal, PostgreSQL\'s error and a saved query', async () => {
  const context = await signedInContext(browser);
  const page = await context.newPage();
  await page.goto('/sql');
  await sqlBox(page).waitFor({ timeout: STEP_MS });

  // Completion knows the analytics tables and their columns (/api/shadow-db/schema).
  await setSQL(page, 'SELECT * FROM turn_co');
  await page.keyboard.press('Control+Space');
  const options = page.getByRole('listbox').getByRole('option');
  await options.filter({ hasText: 'turn_costs' }).first().waitFor({ timeout: STEP_MS });
  await page.keyboard.press('Escape');
  await setSQL(page, 'SELECT stop_r FROM turns');
  await page.keyboard.press('ArrowLeft');
  for (let i = 0; i < ' FROM turns'.length - 1; i++) await page.keyboard.press('ArrowLeft');
  await page.keyboard.press('Control+Space');
  await options.filter({ hasText: 'stop_reason' }).first().waitFor({ timeout: STEP_MS });
  await page.keyboard.press('Escape');

  await setSQL(page, 'SELECT 42 AS answer');
  await page.keyboard.press('Control+Enter');
  assert.equal(await waitRows(page), 1);
  assert.match(await resultTable(page).locator('[aria-rowindex="2"]').innerText(), /42/);

  // Saved in this browser: back after a reload.
  const name = `answer ${Math.random().toString(36).slice(2, 7)}`;
  await page.getByRole('button', { name: 'Save…', exact: true }).click();
  await page.getByRole('textbox', { name: 'Query name' }).fill(name);
  await page.getByRole('button', { name: 'Save query', exact: true }).click();
  await setSQL(page, 'SELECT 1');
  await page.reload();
  await sqlBox(page).waitFor({ timeout: STEP_MS });
  await page.getByRole('combobox', { name: 'Saved queries' }).selectOption({ label: name });
  await until(async () => (await sqlBox(page).innerText()).includes('SELECT 42 AS answer'), { timeoutMs: STEP_MS, what: 'the saved query in the editor' });

  // The validator refuses (a data-modifying CTE): said plainly, nothing ran.
  const refused = 'WITH d AS (DELETE FROM turns RETURNING id) SELECT * FROM d';
  const direct = await postSQL(refused);
  assert.deepEqual(direct, { status: 400, body: { error: 'forbidden', message: 'DELETE is not allowed' } });
  await setSQL(page, refused);
  await page.getByRole('button', { name: 'Run query', exact: true }).click();
  const alert = page.getByRole('alert');
  await waitText(alert, /Refused by the validator/);
  assert.match(await alert.innerText(), /DELETE is not allowed/);
  assert.equal(await resultTable(page).count(), 0, 'no result is shown');
  await screenshots(page, 'sql-refused');

  await setSQL(page, 'SELECT no_such_column FROM turns');
  await page.keyboard.press('Control+Enter');
  await waitText(page.getByRole('alert'), /PostgreSQL error/);
  assert.match(await page.getByRole('alert').innerText(), /no_such_column/);
  await context.close();
});

e2e('a query past its deadline shows INTERRUPT; a running query can be cancelled', async () => {
  const context = await signedInContext(browser);
  const page = await context.newPage();
  await page.goto('/sql');
  await sqlBox(page).waitFor({ timeout: STEP_MS });

  // Cancel: the page stops the request and says what becomes of the statement.
  await setSQL(page, 'SELECT pg_sleep(4) AS slept');
  await page.getByRole('button', { name: 'Run query', exact: true }).click();
  await waitText(queryStatus(page), /Running/);
  await page.getByRole('button', { name: 'Cancel query', exact: true }).click();
  await waitText(queryStatus(page), /Cancelled after/);
  await waitText(page.locator('.sqlnote'), /runs on until its deadline/);

  // A deadline of 1 s (the server config key), restored afterwards.
  await api('PUT', '/api/app/config', { 'shadow_db.sql_timeout_s': 1 });
  try {
    await until(async () => (await postSQL('SELECT pg_sleep(2)')).body.error === 'INTERRUPT', { timeoutMs: 20_000, what: 'analytics to take the 1 s deadline', intervalMs: 250 });
    await setSQL(page, 'SELECT pg_sleep(3) AS slept');
    await page.keyboard.press('Control+Enter');
    const alert = page.getByRole('alert');
    await waitText(alert, /INTERRUPT: stopped at the deadline/);
    assert.match(await alert.innerText(), /deadline/);
    await screenshots(page, 'sql-interrupt');
  } finally {
    await api('PUT', '/api/app/config', { 'shadow_db.sql_timeout_s': null });
  }
  await context.close();
});
