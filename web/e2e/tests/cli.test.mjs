// @ts-check
// Sessions run in a terminal (issue 19 item 2): a Claude Code transcript and a
// Codex rollout written into the stack's HOME (the chat service's, where its
// agents keep theirs), from the chat service's own fixtures; listed and
// searched; one opened read-only (its newest records first, the earlier ones
// on scrolling up, an unknown record raw, a broken line named by file and
// line, a line appended by "the CLI" shown as it comes); "Continue here"
// lands in a live svc-code session in the transcript's directory.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { appendFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { ROOT } from '../lib/stack.mjs';
import {
  launch, signedInContext, stack, STEP_MS, PHONE, screenshots, screenshot, waitText, until, workdir, api, connection, message, re,
  e2e,
} from '../lib/app.mjs';

/** @type {import('playwright-core').Browser} */
let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

const FIXTURES = path.join(ROOT, 'services/chat/internal/clisessions/testdata');
const claudeRoot = path.join(process.env.CLAUDE_CONFIG_DIR || path.join(stack.home, '.claude'), 'projects');
const codexRoot = path.join(process.env.CODEX_HOME || path.join(stack.home, '.codex'), 'sessions');

/** The one .jsonl file under dir (recursively). */
async function fixture(dir) {
  const entries = await readdir(dir, { recursive: true });
  const f = entries.find((e) => e.endsWith('.jsonl'));
  if (!f) throw new Error(`no .jsonl fixture under ${dir}`);
  return readFile(path.join(dir, f), 'utf8');
}

/** A Claude Code assistant record as the CLI writes it. */
function claudeText(id, cwd, text) {
  return JSON.stringify({
    parentUuid: null, isSidechain: false, type: 'assistant', uuid: randomUUID(), timestamp: new Date().toISOString(),
    message: { id: `msg_${randomUUID()}`, type: 'message', role: 'assistant', model: 'claude-opus-5-5', content: [{ type: 'text', text }], stop_reason: null, usage: { input_tokens: 1, output_tokens: 1 } },
    userType: 'external', cwd, sessionId: id, version: '2.1.330',
  });
}

/**
 * Writes a Claude Code transcript: the fixture's (its prompt made prompt, its
 * session id and directory ours), then an unknown record, a broken line, and
 * `filler` assistant records (so that the newest page does not hold the start).
 */
async function writeClaude(prompt, filler) {
  const id = randomUUID();
  const cwd = await workdir();
  const src = await fixture(path.join(FIXTURES, 'claude'));
  const head = src.replaceAll('4f76bc7a-af23-4a3d-9b3e-05f8f0f1c03b', id).replaceAll('/tmp/cliwork/proj', cwd).replaceAll('Say hello', prompt);
  const extra = [
    JSON.stringify({ type: 'e2e-mystery-record', detail: 'kept as written', sessionId: id }),
    '{"type": "assistant", this line is cut',
    ...Array.from({ length: filler }, (_, i) => claudeText(id, cwd, `filler record ${i + 1}`)),
  ];
  const dir = path.join(claudeRoot, cwd.replace(/[^A-Za-z0-9]/g, '-'));
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, `${id}.jsonl`);
  await writeFile(file, head.replace(/\n?$/, '\n') + extra.join('\n') + '\n');
  return { id, cwd, file };
}

/** Writes a Codex rollout: the fixture's, its prompt, thread id and directory ours. */
async function writeCodex(prompt) {
  const id = randomUUID();
  const cwd = await workdir();
  const src = await fixture(path.join(FIXTURES, 'codex'));
  const text = src.replaceAll('01a21b7b-d8f3-7ee2-9179-0854450fbf7b', id).replaceAll('/tmp/cliwork/xproj', cwd).replaceAll('Say hello', prompt);
  const now = new Date();
  const ymd = [String(now.getUTCFullYear()), String(now.getUTCMonth() + 1).padStart(2, '0'), String(now.getUTCDate()).padStart(2, '0')];
  const dir = path.join(codexRoot, ...ymd);
  await mkdir(dir, { recursive: true });
  const stamp = now.toISOString().slice(0, 19).replaceAll(':', '-');
  const file = path.join(dir, `rollout-${stamp}-${id}.jsonl`);
  await writeFile(file, text.replace(/\n?$/, '\n'));
  return { id, cwd, file };
}

const tag = () => Math.random().toString(36).slice(2, 8);

e2e('terminal sessions: listed, read-only, followed, continued here', async () => {
  const t = tag();
  const claudePrompt = `e2e cli claude ${t}`;
  const codexPrompt = `e2e cli codex ${t}`;
  const cl = await writeClaude(claudePrompt, 130);
  const cx = await writeCodex(codexPrompt);

  const context = await signedInContext(browser);
  const page = await context.newPage();
  await page.goto('/cli');
  const list = page.getByRole('main').getByRole('list', { name: 'Terminal sessions', exact: true });
  const row = (title) => list.getByRole('link', { name: new RegExp(re(title)) });
  await row(claudePrompt).waitFor({ timeout: STEP_MS });
  await row(codexPrompt).waitFor({ timeout: STEP_MS });
  await waitText(row(claudePrompt), /Claude Code/);
  await waitText(row(codexPrompt), /Codex/);
  await waitText(row(claudePrompt), new RegExp(re(path.basename(cl.cwd))));
  await waitText(row(claudePrompt), /KB/);

  // Search (the server's q) and the provider filter narrow the list.
  const search = page.getByRole('main').getByRole('searchbox', { name: 'Search terminal sessions', exact: true });
  await search.fill(t);
  await until(async () => (await list.getByRole('link').count()) === 2, { timeoutMs: STEP_MS, what: 'the two sessions of this test' });
  await screenshots(page, 'cli-list');
  await page.getByRole('main').getByRole('combobox', { name: 'Provider', exact: true }).selectOption('codex');
  await until(async () => (await list.getByRole('link').count()) === 1 && (await row(codexPrompt).count()) === 1, { timeoutMs: STEP_MS, what: 'only the Codex session' });
  await page.getByRole('main').getByRole('combobox', { name: 'Provider', exact: true }).selectOption('');
  await row(claudePrompt).waitFor({ timeout: STEP_MS });

  // The sidebar's Terminal tab lists them too.
  await page.getByRole('tab', { name: 'Terminal', exact: true }).click();
  const side = page.getByRole('navigation', { name: 'Sessions', exact: true });
  await side.getByRole('searchbox', { name: 'Search terminal sessions', exact: true }).waitFor({ timeout: STEP_MS });

  // Open the Claude Code one: read-only, the newest records first.
  await row(claudePrompt).click();
  await page.waitForURL(`**/cli/claude/${cl.id}`, { timeout: STEP_MS });
  const transcript = page.getByLabel('Terminal session transcript', { exact: true });
  await waitText(transcript, /filler record 130/);
  await waitText(page.locator('.sesshead'), new RegExp(re(claudePrompt)));
  await waitText(page.getByRole('main'), /Read-only\./);
  assert.equal(await message(page).count(), 0, 'no composer');
  assert.equal(await transcript.getByText('filler record 1', { exact: true }).count(), 0, 'the start is not read yet');

  // Scrolling up reads the earlier records: the prompt, the fixture's reply,
  // the unknown record (raw, collapsible) and the broken line (file and line).
  await until(async () => {
    await transcript.evaluate((el) => { el.scrollTop = 0; });
    return (await transcript.getByText(claudePrompt, { exact: true }).count()) > 0;
  }, { timeoutMs: STEP_MS, what: 'the earlier records after scrolling up' });
  await waitText(page.getByRole('main'), /Start of the file/);
  const raw = transcript.locator('details.json').filter({ hasText: 'unknown record (e2e-mystery-record)' });
  await raw.waitFor({ timeout: STEP_MS });
  await raw.locator('summary').click();
  await waitText(raw, /kept as written/);
  const lines = (await readFile(cl.file, 'utf8')).split('\n');
  const broken = lines.findIndex((l) => l.startsWith('{"type": "assistant", this line')) + 1;
  await waitText(transcript.locator('.blk.notice').filter({ hasText: 'parse error' }), new RegExp(`${re(path.basename(cl.file))}, line ${broken}`));
  await raw.scrollIntoViewIfNeeded();
  await screenshots(page, 'cli-readonly-start');
  const sids = await transcript.evaluate((el) => Array.from(el.querySelectorAll('[data-sid]'), (e) => e.getAttribute('data-sid')));
  assert.equal(new Set(sids).size, sids.length, 'each line once');
  assert.equal(sids.length, lines.filter((l) => l !== '').length, 'every line of the file is in the page');

  // A line the CLI appends shows up (the long poll), at the bottom.
  const appended = `appended by the CLI ${t}`;
  await appendFile(cl.file, claudeText(cl.id, cl.cwd, appended) + '\n');
  await transcript.getByText(appended, { exact: true }).waitFor({ timeout: STEP_MS });
  // Read further up, the view stays put and offers to go down.
  await page.getByRole('button', { name: '1 new record below ↓', exact: true }).click({ timeout: STEP_MS });
  await until(async () => {
    const [box, view] = await Promise.all([transcript.getByText(appended, { exact: true }).boundingBox(), transcript.boundingBox()]);
    return !!box && !!view && box.y >= view.y && box.y + box.height <= view.y + view.height;
  }, { timeoutMs: STEP_MS, what: 'the appended record in view' });
  await screenshots(page, 'cli-readonly');
  await page.setViewportSize(PHONE);
  await page.getByRole('button', { name: 'Continue here', exact: true }).waitFor({ timeout: STEP_MS });
  const box = await page.getByRole('button', { name: 'Continue here', exact: true }).boundingBox();
  assert.ok(box && box.height >= 44 && box.y + box.height <= PHONE.height && box.y > PHONE.height / 2, `Continue here is a 44 px target in the lower half of the phone's screen (${JSON.stringify(box)})`);
  const scrollWidth = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(scrollWidth <= PHONE.width, `no sideways scrolling (${scrollWidth}px wide)`);
  await page.setViewportSize({ width: 1280, height: 800 });

  // The Codex one renders with the same blocks.
  await page.goto(`/cli/codex/${cx.id}`);
  await waitText(page.getByLabel('Terminal session transcript', { exact: true }), /Hello from the fake model\./);
  await waitText(page.getByLabel('Terminal session transcript', { exact: true }), new RegExp(re(codexPrompt)));

  // Continue here: a live svc-code session in the transcript's directory.
  await page.goto(`/cli/claude/${cl.id}`);
  await waitText(page.getByLabel('Terminal session transcript', { exact: true }), new RegExp(re(appended)));
  await page.getByRole('button', { name: 'Continue here', exact: true }).click();
  await page.waitForURL(/\/s\/[A-Z2-7]{10,40}$/, { timeout: STEP_MS });
  const sid = new URL(page.url()).pathname.split('/')[2];
  const back = page.getByRole('link', { name: 'the terminal session\'s transcript', exact: true });
  assert.equal(await back.getAttribute('href'), `/cli/claude/${cl.id}`, 'the new session links to the transcript');
  // The link is the session's own (cli_session), not the URL's: it is there after a reload.
  await page.reload();
  await back.waitFor({ timeout: STEP_MS });
  assert.equal(await back.getAttribute('href'), `/cli/claude/${cl.id}`, 'the link survives a reload');
  // Its provider is locked from the start (it resumes the CLI's conversation), and says why.
  assert.equal(await page.locator('#sess-provider').count(), 0, 'no provider switch is offered');
  const prov = page.locator('.sesshead .provider');
  await waitText(prov, /locked \(resumes a terminal session\)/);
  assert.match(await prov.getAttribute('title'), new RegExp(`Continues the Claude Code session ${re(cl.id)} from a terminal`));
  await waitText(connection(page), /connected/i);
  await message(page).waitFor({ timeout: STEP_MS });
  const s = await api('GET', `/api/session/${sid}`);
  assert.equal(s.cwd, cl.cwd, 'the new session runs in the transcript\'s directory');
  const listed = await api('GET', `/api/cli-sessions/claude/${cl.id}`);
  assert.equal(listed.svc_session_id, sid, 'the terminal session names the svc-code session that continues it');
  await screenshots(page, 'cli-continued');
});
