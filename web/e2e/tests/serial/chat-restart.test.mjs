// @ts-check
// Kill the chat service mid-turn and bring it back (run.sh's RUN_RESTART=chat
// starts it again): the page shows the outage, reconnects by after_line, and in
// the end shows every line of the log once, in order. It runs alone (run.mjs's
// serial phase): the other tests would see chat go away.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  stack, launch, signedInContext, api, createSession, uniqueTitle, STEP_MS, screenshots, openSession,
  connection, send, waitIdle, waitText, until, logMessages, renderedSids, recordTexts, listenerPid,
  e2e,
} from '../../lib/app.mjs';

/** @type {import('playwright-core').Browser} */
let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

e2e('kill the chat service and bring it back: no line missing or doubled', async () => {
  const { session_id: id, title } = await createSession(uniqueTitle('e2e chat restart'));
  const context = await signedInContext(browser);
  const page = await context.newPage();
  await openSession(page, title);
  await send(page, 'ECHO before');
  await waitText(page.locator('body'), /text="ECHO before"/);
  await waitIdle(page);

  const states = await recordTexts(connection(page));
  await send(page, 'SLOW 50'); // 5 s of chunks
  await waitText(page.locator('body'), /chunk 5\b/);
  const pid = await listenerPid(stack.chatPort);
  assert.ok(pid > 0, 'chat listens on its port');
  process.kill(pid, 'SIGKILL');

  // The page says it lost the socket, then comes back by itself.
  await until(async () => (await states()).some((s) => !/^\s*connected/i.test(s) && /reconnect|offline|connecting/i.test(s)),
    { timeoutMs: STEP_MS, what: 'the Connection status to show the outage' });
  await screenshots(page, 'reconnecting');
  const newPid = await until(async () => {
    const p = await listenerPid(stack.chatPort);
    return p && p !== pid ? p : 0;
  }, { timeoutMs: 60_000, what: 'run.sh to start chat again' });
  assert.notEqual(newPid, pid);
  await waitText(connection(page), /^\s*connected/i, 30_000);

  // The new chat closed the dead one's turn and released its claim; then a
  // prompt starts the agent again (--resume).
  await until(async () => !(await api('GET', '/api/active-sessions')).sessions.includes(id),
    { timeoutMs: 30_000, what: 'the dead chat\'s claim to be released' });
  await send(page, 'ECHO after');
  await waitText(page.locator('body'), /text="ECHO after"/, 30_000);
  await waitIdle(page, 30_000);

  const log = await logMessages(id);
  // The cut turn was closed by the next chat, once: one notice in the log, and
  // analytics (the stack's own, fed by the turn stream) ended it as interrupted.
  const interrupted = log.filter((m) => JSON.stringify(m).includes('turn interrupted: the server restarted'));
  assert.equal(interrupted.length, 1, `one "turn interrupted" notice in the log: ${JSON.stringify(interrupted)}`);
  await waitText(page.locator('body'), /turn interrupted: the server restarted/);
  const turns = await until(async () => {
    const t = (await api('GET', `/api/turns?session=${encodeURIComponent(id)}&limit=50`)).turns;
    return t.length === 3 && t.every((x) => x.ended_at) ? t : null;
  }, { timeoutMs: 30_000, what: 'analytics to hold the three turns, each ended' });
  const cut = turns.filter((t) => t.user_prompt === 'SLOW 50');
  assert.equal(cut.length, 1, `one analytics row for the cut turn: ${JSON.stringify(turns)}`);
  assert.equal(cut[0].stop_reason, 'interrupted', `the cut turn's stop_reason: ${JSON.stringify(cut[0])}`);
  const want = log.map((m) => m.sid);
  assert.ok(want.length > 10, 'the log holds both turns and the cut one');
  await until(async () => (await renderedSids(page)).length >= want.length,
    { timeoutMs: STEP_MS, what: `${want.length} rendered lines` });
  const got = await renderedSids(page);
  assert.equal(new Set(got).size, got.length, `no line doubled in the page: ${got.join(' ')}`);
  assert.deepEqual(got, want, 'the page holds every line of the log, once');
  await waitText(connection(page), new RegExp(`line ${log.at(-1).line}\\b`));
  await context.close();
});
