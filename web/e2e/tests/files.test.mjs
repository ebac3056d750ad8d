// @ts-check
// The files pane: the tree rooted at the session's directory, a file viewed,
// edited and saved; a conflict from a second tab (never overwritten silently,
// each way out leaving on disk what was chosen); search opening a file at its
// line; HTML in a sandboxed frame, an image, upload. Screenshots of the pane.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { launch, signedInContext, createSession, uniqueTitle, STEP_MS, screenshots, screenshot, waitText, until, e2e, PHONE } from '../lib/app.mjs';
import { diskIs, editAndType, editorOf, filesTree, treeItem } from '../lib/files.mjs';

/** @type {import('playwright-core').Browser} */
let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

const read = (/** @type {string} */ p) => readFile(p, 'utf8');

// A 1x1 PNG.
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');

/** A project: a Go file whose line 42 holds a marker, a README, an HTML page, an image. */
async function project(cwd) {
  await mkdir(path.join(cwd, 'src'), { recursive: true });
  const lines = ['package main', ''];
  for (let i = 3; i <= 60; i++) lines.push(i === 42 ? '\tneedleMarker := 42 // the line to find' : `// line ${i}`);
  await writeFile(path.join(cwd, 'src', 'main.go'), lines.join('\n') + '\n');
  await writeFile(path.join(cwd, 'README.md'), '# Demo\n\nA project.\n');
  await writeFile(path.join(cwd, 'index.html'), '<!doctype html><h1>Hello frame</h1><script>document.title="ran"</script>\n');
  await writeFile(path.join(cwd, 'pic.png'), PNG);
}

e2e('files: tree, view, edit and save, search at the line, HTML, image, upload', async () => {
  const s = await createSession(uniqueTitle('e2e files'));
  await project(s.cwd);
  const context = await signedInContext(browser);
  const page = await context.newPage();
  await page.goto(`/s/${s.session_id}/files`);

  // The tree is rooted at the session's directory: its entries, directories first.
  await treeItem(page, 'src').waitFor({ timeout: STEP_MS });
  // Directories first, then by name in byte order (upper case first).
  const names = await filesTree(page).locator('[role=treeitem] .fname').allInnerTexts();
  assert.deepEqual(names, ['src', 'README.md', 'index.html', 'pic.png']);
  await treeItem(page, 'src').click();
  assert.equal(await treeItem(page, 'src').getAttribute('aria-expanded'), 'true');
  await treeItem(page, 'main.go').click();
  await until(async () => new URL(page.url()).searchParams.get('path') === 'src/main.go', { timeoutMs: STEP_MS, what: 'the deep link of the open file' });
  const contents = page.getByRole('region', { name: 'Contents of main.go' });
  await waitText(contents, /needleMarker/);
  await screenshots(page, 'files-view');

  // Edit and save: the file on disk is what the editor holds.
  const before = await read(path.join(s.cwd, 'src', 'main.go'));
  await editAndType(page, 'main.go', '// saved from the page\n');
  await page.getByRole('button', { name: 'Save', exact: true }).click();
  await diskIs(read, path.join(s.cwd, 'src', 'main.go'), before + '// saved from the page\n', 'the saved file on disk');
  await waitText(page.getByRole('toolbar', { name: 'File' }), /^(?!.*●)/s);
  await screenshots(page, 'files-edit');
  await page.getByRole('button', { name: 'Close editor', exact: true }).click();

  // Search (from the tree, no file open): the result opens the file at its line, marked and in view.
  await page.goto(`/s/${s.session_id}/files`);
  await page.getByRole('textbox', { name: 'Search files', exact: true }).fill('needleMarker');
  await page.keyboard.press('Enter');
  const results = page.getByRole('region', { name: 'Search results' });
  await waitText(results, /1 match in 1 file/);
  await screenshots(page, 'files-search');
  await results.getByRole('link', { name: /42.*needleMarker/ }).click();
  await until(async () => new URL(page.url()).searchParams.get('line') === '42', { timeoutMs: STEP_MS, what: 'line=42 in the URL' });
  const mark = page.locator('.fmark[data-line="42"]');
  await mark.waitFor({ timeout: STEP_MS });
  await until(async () => {
    const [m, r] = await Promise.all([mark.boundingBox(), contents.boundingBox()]);
    return m && r && m.y >= r.y && m.y + m.height <= r.y + r.height;
  }, { timeoutMs: STEP_MS, what: 'line 42 scrolled into view' });
  // A deep link opened directly does the same.
  await page.goto(`/s/${s.session_id}/files?path=src/main.go&line=42`);
  await page.locator('.fmark[data-line="42"]').waitFor({ timeout: STEP_MS });

  // HTML is rendered in a sandboxed frame: shown, its script not run.
  await page.goto(`/s/${s.session_id}/files?path=index.html`);
  const frameEl = page.locator('iframe[title="Rendered index.html"]');
  await frameEl.waitFor({ timeout: STEP_MS });
  assert.equal(await frameEl.getAttribute('sandbox'), '', 'sandbox without any allow-* token');
  const frame = page.frameLocator('iframe[title="Rendered index.html"]');
  await frame.getByRole('heading', { name: 'Hello frame' }).waitFor({ timeout: STEP_MS });
  assert.notEqual(await frame.locator('html').evaluate(() => document.title).catch(() => 'unreadable'), 'ran', 'the page\'s script did not run');

  // An image through /api/file-raw.
  await page.goto(`/s/${s.session_id}/files?path=pic.png`);
  const img = page.getByRole('img', { name: 'pic.png' });
  await until(async () => (await img.evaluate((el) => /** @type {HTMLImageElement} */ (el).naturalWidth)) === 1, { timeoutMs: STEP_MS, what: 'the image loaded' });

  // Upload into the selected directory (src): a text file and an image land there; an existing name is not replaced.
  await page.goto(`/s/${s.session_id}/files`);
  await treeItem(page, 'src').click();
  await page.getByLabel('Files to upload').setInputFiles([{ name: 'up.txt', mimeType: 'text/plain', buffer: Buffer.from('uploaded\n') }]);
  await diskIs(read, path.join(s.cwd, 'src', 'up.txt'), 'uploaded\n', 'the uploaded file in src');
  await treeItem(page, 'up.txt').waitFor({ timeout: STEP_MS });
  await page.getByLabel('Files to upload').setInputFiles([{ name: 'shot.png', mimeType: 'image/png', buffer: PNG }]);
  await until(async () => (await readFile(path.join(s.cwd, 'src', 'shot.png')).catch(() => Buffer.alloc(0))).equals(PNG), { timeoutMs: STEP_MS, what: 'the uploaded image, byte for byte' });
  await page.getByLabel('Files to upload').setInputFiles([{ name: 'up.txt', mimeType: 'text/plain', buffer: Buffer.from('other\n') }]);
  await waitText(page.getByRole('status', { name: 'Upload' }), /already holds a file of that name/);
  assert.equal(await read(path.join(s.cwd, 'src', 'up.txt')), 'uploaded\n');

  // The phone: the tree alone, then the open file with a way back.
  await page.setViewportSize(PHONE);
  await page.goto(`/s/${s.session_id}/files`);
  await treeItem(page, 'src').waitFor({ timeout: STEP_MS });
  await screenshot(page, 'files-tree');
  await context.close();
});

e2e('files: a conflict from a second tab is shown with both versions and resolved as chosen', async () => {
  const s = await createSession(uniqueTitle('e2e conflict'));
  const file = path.join(s.cwd, 'notes.txt');
  await writeFile(file, 'base\n');
  const context = await signedInContext(browser);
  const a = await context.newPage();
  const b = await context.newPage();
  const url = `/s/${s.session_id}/files?path=notes.txt`;

  /** B writes its line (its editor opened on what the disk holds); A, opened earlier, then saves. */
  const round = async (/** @type {string} */ bLine, /** @type {string} */ aLine) => {
    await b.goto(url);
    await waitText(b.getByRole('region', { name: 'Contents of notes.txt' }), /\S/);
    await editAndType(b, 'notes.txt', bLine);
    await b.getByRole('button', { name: 'Save', exact: true }).click();
    const theirs = await until(async () => { const t = await read(file); return t.includes(bLine) && t; }, { timeoutMs: STEP_MS, what: 'B\'s save on disk' });
    await editAndType(a, 'notes.txt', aLine);
    const mine = await editorOf(a, 'notes.txt').innerText();
    await a.getByRole('button', { name: 'Save', exact: true }).click();
    const conflict = a.getByRole('region', { name: 'Conflict' });
    await waitText(conflict, /changed on disk since you opened it/);
    await waitText(conflict, new RegExp(bLine.trim())); // their version is shown
    assert.equal(await read(file), theirs, 'nothing overwritten silently');
    return { conflict, theirs, mine };
  };

  await a.goto(url);
  await waitText(a.getByRole('region', { name: 'Contents of notes.txt' }), /base/);
  await a.getByRole('button', { name: 'Edit', exact: true }).click();

  // 1. Keep mine: A's text is written over B's, knowingly.
  let r = await round('from B 1\n', 'from A 1\n');
  await screenshots(a, 'files-conflict');
  await r.conflict.getByRole('button', { name: 'Keep mine', exact: true }).click();
  await diskIs(read, file, 'base\nfrom A 1\n', 'A\'s version on disk after Keep mine');
  await until(async () => (await r.conflict.count()) === 0, { timeoutMs: STEP_MS, what: 'the conflict closed' });

  // 2. Take theirs: nothing is written, A's editor holds B's text.
  r = await round('from B 2\n', 'from A 2\n');
  await r.conflict.getByRole('button', { name: 'Take theirs', exact: true }).click();
  await waitText(editorOf(a, 'notes.txt'), /from B 2/);
  assert.equal(await read(file), r.theirs, 'theirs stays on disk');
  assert.doesNotMatch(await editorOf(a, 'notes.txt').innerText(), /from A 2/);

  // 3. Merge by hand: A edits its side of the merge view, then saves against B's version.
  r = await round('from B 3\n', 'from A 3\n');
  await r.conflict.getByRole('button', { name: 'Merge by hand', exact: true }).click();
  const mine = editorOf(a, 'notes.txt (mine)');
  await until(async () => (await mine.getAttribute('contenteditable')) === 'true', { timeoutMs: STEP_MS, what: 'the editable merge side' });
  await mine.click();
  await a.keyboard.press('ControlOrMeta+Home');
  await a.keyboard.type('MERGED ');
  await r.conflict.getByRole('button', { name: 'Save merged', exact: true }).click();
  const merged = await until(async () => { const t = await read(file); return t.startsWith('MERGED ') && t; }, { timeoutMs: STEP_MS, what: 'the merged text on disk' });
  assert.match(merged, /from A 3/);
  await until(async () => (await a.getByRole('region', { name: 'Conflict' }).count()) === 0, { timeoutMs: STEP_MS, what: 'the conflict closed' });
  // And A goes on from there: a plain save against the merged version succeeds.
  await editAndType(a, 'notes.txt', 'after\n');
  await a.getByRole('button', { name: 'Save', exact: true }).click();
  await diskIs(read, file, merged + 'after\n', 'a save after the merge');
  await context.close();
});

e2e('files: Back to another file with unsaved edits asks, and "no" keeps the edits', async () => {
  const s = await createSession(uniqueTitle('e2e files back'));
  await project(s.cwd);
  const context = await signedInContext(browser);
  const page = await context.newPage();
  await page.goto(`/s/${s.session_id}/files?path=README.md`);
  await waitText(page.getByRole('region', { name: 'Contents of README.md' }), /A project/);
  await page.goto(`/s/${s.session_id}/files?path=${encodeURIComponent('src/main.go')}`);
  await waitText(page.getByRole('region', { name: 'Contents of main.go' }), /needleMarker/);
  await editAndType(page, 'main.go', '// not saved yet\n');
  /** @type {string[]} */
  const asked = [];
  const dismiss = (/** @type {import('playwright-core').Dialog} */ d) => { asked.push(d.message()); void d.dismiss(); };
  page.on('dialog', dismiss);
  // Back in the app's own history (the pane's links push it).
  await page.evaluate(() => history.pushState(null, '', location.pathname + '?path=README.md'));
  await page.evaluate(() => dispatchEvent(new PopStateEvent('popstate')));
  await until(async () => asked.length > 0, { timeoutMs: STEP_MS, what: 'the question about unsaved changes' });
  assert.match(asked[0], /unsaved/i);
  await until(async () => new URL(page.url()).searchParams.get('path') === 'src/main.go', { timeoutMs: STEP_MS, what: 'the URL of the file being edited, back' });
  await waitText(editorOf(page, 'main.go'), /not saved yet/);
  assert.equal(await page.getByRole('region', { name: 'Contents of README.md' }).count(), 0, 'README.md was not opened over the edits');
  page.off('dialog', dismiss);
  // Accepting drops the edits and opens the other file.
  page.once('dialog', (d) => void d.accept());
  await page.evaluate(() => history.pushState(null, '', location.pathname + '?path=README.md'));
  await page.evaluate(() => dispatchEvent(new PopStateEvent('popstate')));
  await waitText(page.getByRole('region', { name: 'Contents of README.md' }), /A project/);
  await context.close();
});
