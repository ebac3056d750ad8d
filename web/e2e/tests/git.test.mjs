// @ts-check
// The git pane over a repository the test makes in the session's directory:
// status groups, the work-tree, staged and one file's diffs, the log and a
// commit's show; a directory outside any work tree shows the server's message.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { launch, signedInContext, createSession, uniqueTitle, STEP_MS, screenshots, waitText, e2e } from '../lib/app.mjs';

const run = promisify(execFile);

/** @type {import('playwright-core').Browser} */
let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

const git = (/** @type {string} */ cwd, /** @type {string[]} */ ...args) =>
  run('git', ['-c', 'user.name=E2E Tester', '-c', 'user.email=e2e@example.com', '-c', 'init.defaultBranch=main', '-c', 'commit.gpgsign=false', ...args], { cwd });

e2e('git: status, diffs, log and show of the project\'s repository', async () => {
  const s = await createSession(uniqueTitle('e2e git'));
  const cwd = s.cwd;
  await git(cwd, 'init', '-q');
  await writeFile(path.join(cwd, 'a.txt'), 'one\ntwo\nthree\n');
  await writeFile(path.join(cwd, 'b.txt'), 'bee\n');
  await git(cwd, 'add', '.');
  await git(cwd, 'commit', '-q', '-m', 'first commit');
  await writeFile(path.join(cwd, 'a.txt'), 'one\nTWO changed\nthree\n');
  await git(cwd, 'commit', '-q', '-am', 'second: change a');
  await writeFile(path.join(cwd, 'a.txt'), 'one\nTWO changed\nthree\nfour unstaged\n');
  await writeFile(path.join(cwd, 'b.txt'), 'bee staged\n');
  await git(cwd, 'add', 'b.txt');
  await writeFile(path.join(cwd, 'new.txt'), 'untracked\n');

  const context = await signedInContext(browser);
  const page = await context.newPage();
  await page.goto(`/s/${s.session_id}/git`);
  const pane = page.getByRole('region', { name: 'Git', exact: true });
  await waitText(pane, /main/);
  await waitText(page.getByRole('region', { name: 'Staged' }), /b\.txt/);
  await waitText(page.getByRole('region', { name: 'Not staged' }), /a\.txt/);
  await waitText(page.getByRole('region', { name: 'Untracked' }), /new\.txt/);
  // The work tree's diff first.
  await waitText(page.getByRole('region', { name: 'Work tree diff' }), /four unstaged/);
  assert.doesNotMatch(await page.getByRole('region', { name: 'Work tree diff' }).innerText(), /bee staged/);
  await screenshots(page, 'git-status');

  await page.getByRole('button', { name: 'Staged diff', exact: true }).click();
  await waitText(page.getByRole('region', { name: 'Staged diff' }), /bee staged/);
  await page.getByRole('region', { name: 'Not staged' }).getByRole('button', { name: /a\.txt/ }).click();
  await waitText(page.getByRole('region', { name: 'Diff of a.txt' }), /four unstaged/);

  await page.getByRole('tab', { name: 'Log', exact: true }).click();
  const commits = page.getByRole('list', { name: 'Commits' });
  await waitText(commits, /second: change a[\s\S]*first commit/);
  await commits.getByRole('button', { name: /second: change a/ }).click();
  const shown = page.getByRole('region', { name: 'Commit', exact: true });
  await waitText(shown, /TWO changed/);
  assert.match(await shown.innerText(), /E2E Tester/);
  await screenshots(page, 'git-log');
  await context.close();
});

e2e('git: a directory outside any work tree shows the server\'s message', async () => {
  const s = await createSession(uniqueTitle('e2e nogit'));
  const context = await signedInContext(browser);
  const page = await context.newPage();
  await page.goto(`/s/${s.session_id}/git`);
  await waitText(page.getByRole('alert'), /is not inside a git work tree/, STEP_MS);
  await context.close();
});
