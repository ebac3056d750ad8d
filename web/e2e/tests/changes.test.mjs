// @ts-check
// The turn timeline on the shadow journal (issue 18, item 4): a fake agent's
// turn edits two files and runs a bash command that writes a third; its chip
// counts all three; "Undo turn" (preview, Confirm) brings the three back on
// disk; the next undo meets a file changed by hand and answers the 409 path
// (the list, then the forced path: a snapshot first). Then a restore to
// before a turn (preview, Confirm), a file's history, branches and search.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  launch, signedInContext, createSession, uniqueTitle, STEP_MS, screenshots, screenshot, DESKTOP, PHONE, connection, send, waitIdle, waitText, until, e2e, api, stack,
} from '../lib/app.mjs';

/** @type {import('playwright-core').Browser} */
let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

const FILES = ['edit-a.txt', 'edit-b.txt', 'edit-c.txt'];

/** The three files' contents, in FILES order. */
async function contents(cwd) {
  return Promise.all(FILES.map((f) => readFile(path.join(cwd, f), 'utf8')));
}
const versionOf = (n) => FILES.map((f) => `${f} version ${n}\n`);

/**
 * Sends EDIT_THREE n gated on a file outside the project, waits until the
 * journal holds the turn's start (its baseline commit: the tree differs from
 * the branch's head before each of these turns), opens the gate, and waits
 * for the turn's end. The fake agent writes faster than shadow takes the
 * turn's start from the stream; the gate keeps the order the journal sees
 * with a real agent.
 * @param {import('playwright-core').Page} page
 */
async function editThree(page, s, n) {
  const gate = path.join(stack.home, `gate-${s.session_id}-${n}`);
  await send(page, `EDIT_THREE ${n} after=${gate}`);
  await until(async () => {
    const { commits } = await api('GET', `/api/shadow/log?cwd=${encodeURIComponent(s.cwd)}&session=${s.session_id}&limit=20`);
    return commits.some((c) => c.kind === 'baseline' && c.turn_number === n);
  }, { timeoutMs: STEP_MS, what: `the journal's baseline of turn ${n}` });
  await writeFile(gate, '');
  await waitIdle(page);
}

/** The chip of turn n in the conversation. */
const chip = (page, n) => page.getByRole('button', { name: `Changes of turn ${n}`, exact: true });

e2e('turn chips, undo with a preview, and the 409 path', async () => {
  const s = await createSession(uniqueTitle('e2e changes'));
  const cwd = s.cwd;
  // Version 0 is there before the first turn, so the journal's baseline holds it.
  for (const [i, f] of FILES.entries()) await writeFile(path.join(cwd, f), versionOf(0)[i]);

  const context = await signedInContext(browser);
  const page = await context.newPage();
  await page.goto(`/s/${s.session_id}`);
  await waitText(connection(page), /connected/i);

  // Two turns, each writing the three files (two with Write, one with a bash command).
  await editThree(page, s, 1);
  await waitText(chip(page, 1), /\+3 −3 in 3 files/);
  // A change between turns (journaled as turn 2's baseline, not in its chip).
  await writeFile(path.join(cwd, 'notes.txt'), 'between the turns\n');
  await editThree(page, s, 2);
  await waitText(chip(page, 2), /\+3 −3 in 3 files/);
  assert.deepEqual(await contents(cwd), versionOf(2), 'the fake agent wrote the three files');
  // The chips at both sizes, scrolled into view (the conversation sticks to its bottom).
  for (const size of [DESKTOP, PHONE]) {
    await page.setViewportSize(size);
    await chip(page, 2).scrollIntoViewIfNeeded();
    await screenshot(page, 'changes-chips');
  }
  await page.setViewportSize(DESKTOP);

  // The chip opens the turn in the Changes pane.
  await chip(page, 2).click();
  await until(async () => new URL(page.url()).pathname === `/s/${s.session_id}/changes` && new URL(page.url()).searchParams.get('turn') === '2', { timeoutMs: STEP_MS, what: 'the Changes pane at turn 2' });
  const turns = page.getByRole('list', { name: 'Turns', exact: true });
  const turn2 = turns.getByRole('listitem', { name: 'Turn 2', exact: true });
  const turn1 = turns.getByRole('listitem', { name: 'Turn 1', exact: true });
  await turn2.waitFor({ timeout: STEP_MS });
  // Its diff is open (the chip focused it), and "Undo turn" is offered on the turn an undo reverts: 2, not 1.
  await waitText(turn2, /edit-c\.txt/);
  assert.equal(await page.getByRole('button', { name: 'Undo turn', exact: true }).count(), 1, 'one "Undo turn", on the last turn');
  assert.equal(await turn2.getByRole('button', { name: 'Undo turn', exact: true }).count(), 1);
  assert.equal(await turn1.getByRole('button', { name: 'Undo turn', exact: true }).count(), 0);
  assert.equal(await turn1.getByRole('button', { name: 'Restore to before this turn', exact: true }).count(), 1);
  await screenshots(page, 'changes-pane');

  // Undo: the preview lists exactly the three files, with the diff that will be applied.
  await turn2.getByRole('button', { name: 'Undo turn', exact: true }).click();
  const dialog = page.getByRole('dialog', { name: 'Undo turn 2', exact: true });
  const files = dialog.getByRole('list', { name: 'Files that will change', exact: true });
  await files.waitFor({ timeout: STEP_MS });
  assert.deepEqual((await files.getByRole('listitem').allInnerTexts()).map((t) => t.replace(/^M\s*/, '').trim()), FILES);
  await waitText(dialog, /edit-a\.txt version 1/); // the line the undo writes back
  await screenshots(page, 'changes-undo-preview');
  await dialog.getByRole('button', { name: 'Confirm', exact: true }).click();
  await waitText(dialog, /Done\. 3 files written \(turn 2 undone\)/);
  assert.deepEqual(await contents(cwd), versionOf(1), 'the undo brought the three files back');
  await dialog.getByRole('button', { name: 'Close', exact: true }).click();

  // The chip of turn 2 says it is undone; "Undo turn" has moved to turn 1.
  await turn1.getByRole('button', { name: 'Undo turn', exact: true }).waitFor({ timeout: STEP_MS });
  assert.equal(await turn2.getByRole('button', { name: 'Undo turn', exact: true }).count(), 0);

  // A file changed by hand since turn 1: the next undo is refused with the list.
  await writeFile(path.join(cwd, 'edit-a.txt'), 'changed by hand\n');
  await turn1.getByRole('button', { name: 'Undo turn', exact: true }).click();
  const dialog1 = page.getByRole('dialog', { name: 'Undo turn 1', exact: true });
  await dialog1.getByRole('list', { name: 'Files that will change', exact: true }).waitFor({ timeout: STEP_MS });
  // The preview already knows: it names the file and shows the hand edit as what goes.
  await waitText(dialog1, /Changed since the turn: edit-a\.txt\./);
  await waitText(dialog1, /changed by hand/);
  await screenshots(page, 'changes-undo-changed-since');
  await dialog1.getByRole('button', { name: 'Confirm', exact: true }).click();
  const conflicts = dialog1.getByRole('list', { name: 'Conflicting files', exact: true });
  await conflicts.waitFor({ timeout: STEP_MS });
  assert.deepEqual(await conflicts.getByRole('listitem').allInnerTexts(), ["edit-a.txt changed since the journal's version"]);
  await waitText(dialog1, /Nothing was changed/);
  await waitText(dialog1, /commits the files as they are now to the journal \(a snapshot/);
  await waitText(dialog1, /kept as they are/);
  assert.equal(await readFile(path.join(cwd, 'edit-a.txt'), 'utf8'), 'changed by hand\n', 'nothing written on a 409');
  await screenshots(page, 'changes-conflict');

  // The forced path: a snapshot first, then the undo.
  await dialog1.getByRole('button', { name: 'Overwrite after a snapshot', exact: true }).click();
  await waitText(dialog1, /Done\. 3 files written \(turn 1 undone\)/);
  await waitText(dialog1, /saved first as snapshot/);
  assert.deepEqual(await contents(cwd), versionOf(0), 'the forced undo brought version 0 back');
  await dialog1.getByRole('button', { name: 'Close', exact: true }).click();
  // The hand edit is in the journal's snapshot.
  const { commits } = await api('GET', `/api/shadow/log?cwd=${encodeURIComponent(cwd)}&limit=50`);
  const snap = commits.find((c) => c.kind === 'snapshot');
  assert.ok(snap, 'a snapshot commit was made');
  const saved = await api('GET', `/api/shadow/file?cwd=${encodeURIComponent(cwd)}&commit=${snap.commit}&path=edit-a.txt`);
  assert.equal(saved.content, 'changed by hand\n');

  // Restore to before turn 2: the preview compares each file now with its
  // version then (version 0 now, version 1 then), and Confirm writes it.
  await turn2.getByRole('button', { name: 'Restore to before this turn', exact: true }).click();
  const dialog2 = page.getByRole('dialog', { name: 'Restore to before turn 2', exact: true });
  const rfiles = dialog2.getByRole('list', { name: 'Files that will change', exact: true });
  await rfiles.waitFor({ timeout: STEP_MS });
  assert.deepEqual((await rfiles.getByRole('listitem').allInnerTexts()).map((t) => t.replace(/^M\s*/, '').trim()), FILES);
  await waitText(dialog2, /edit-b\.txt version 1/);
  await screenshots(page, 'changes-restore-preview');
  await dialog2.getByRole('button', { name: 'Confirm', exact: true }).click();
  await waitText(dialog2, /Done\. 3 files written/);
  assert.deepEqual(await contents(cwd), versionOf(1), 'the restore put back the state before turn 2');
  assert.equal(await readFile(path.join(cwd, 'notes.txt'), 'utf8'), 'between the turns\n', 'a file made before turn 2 stays');
  await dialog2.getByRole('button', { name: 'Close', exact: true }).click();

  // A file's history: a scrubber over its versions, each linked to its prompt.
  await page.getByRole('tab', { name: 'File history', exact: true }).click();
  await page.getByRole('combobox', { name: 'File path', exact: true }).fill('edit-c.txt');
  await page.getByRole('button', { name: 'Show history', exact: true }).click();
  const scrubber = page.getByRole('slider', { name: 'Version', exact: true });
  await scrubber.waitFor({ timeout: STEP_MS });
  const versions = page.getByRole('list', { name: 'Versions', exact: true }).getByRole('listitem');
  assert.ok((await versions.count()) >= 6, 'baseline, two turns, two undos and a restore at least');
  await scrubber.focus();
  await page.keyboard.press('Home'); // the oldest version
  await waitText(page.locator('.cx-version'), /baseline/);
  await page.keyboard.press('ArrowRight'); // turn 1
  await waitText(page.locator('.cx-version'), /turn 1/);
  await screenshots(page, 'changes-history');
  await page.locator('.cx-version').getByRole('link', { name: /the prompt/ }).click();
  await until(async () => new URL(page.url()).pathname === `/s/${s.session_id}` && !!new URL(page.url()).searchParams.get('line'), { timeoutMs: STEP_MS, what: 'the session at the prompt' });
  const line = new URL(page.url()).searchParams.get('line');
  const prompt = page.locator(`[data-sid="${s.session_id}:${line}"]`);
  await waitText(prompt, /EDIT_THREE 1/);

  // Branches and search.
  await page.goto(`/s/${s.session_id}/changes`);
  await page.getByRole('tab', { name: 'Branches', exact: true }).click();
  await waitText(page.getByRole('table', { name: 'Branches', exact: true }), new RegExp(`session/${s.session_id}`));
  await page.getByRole('tab', { name: 'Search', exact: true }).click();
  await page.getByRole('searchbox', { name: 'Search the journal', exact: true }).fill('changed by hand');
  await page.getByRole('button', { name: 'Search', exact: true }).click();
  await waitText(page.getByRole('list', { name: 'Search results', exact: true }), /changed by hand/);
  await screenshots(page, 'changes-search');
  // A hit opens its commit (here the snapshot, not a turn of the list) in the pane.
  await page.getByRole('list', { name: 'Search results', exact: true }).getByRole('link', { name: /^snapshot/ }).click();
  await waitText(page.getByRole('region', { name: /^Commit / }), /\+changed by hand|changed by hand/);
});
