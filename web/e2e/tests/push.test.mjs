// @ts-check
// Web Push end to end (issue 19): the Notifications settings register this
// browser with a loopback push service of the test's own (lib/pushservice.mjs:
// it checks VAPID and decrypts RFC 8291 bodies), since Chromium's real push
// service cannot be reached from here. The page's own code path runs, with
// one stand-in: PushManager.prototype.subscribe / getSubscription are
// replaced in the page (an init script) to return the test service's
// subscription; everything after (POST /api/push/subscriptions, the server's
// pushes, the service worker) is the real thing.
//
// A permission request of the fake agent with no visible tab on its session
// gives exactly one push; its decrypted payload goes to the real service
// worker (CDP ServiceWorker.deliverPushMessage), which shows the
// notification; its Allow path (the service worker's click handler on that
// notification) answers through /api/push/answer, the agent goes on, and the
// card retires in a tab (a phone) opened on the push's link. A replayed and a
// foreign token are refused; a 410 from the push service removes the device.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  launch, signedInContext, api, createSession, uniqueTitle, STEP_MS, screenshots, screenshot,
  permissionCard, waitText, until, stack, e2e, re,
} from '../lib/app.mjs';
import { createECDH } from 'node:crypto';
import { decryptAes128gcm, startPushService } from '../lib/pushservice.mjs';

/** @type {import('playwright-core').Browser} */
let browser;
/** @type {Awaited<ReturnType<typeof startPushService>>} */
let service;
before(async () => {
  browser = await launch();
  service = await startPushService();
});
after(async () => {
  await browser?.close();
  await service?.close();
});

/**
 * Makes pushManager.subscribe / getSubscription of the page return sub (the
 * test service's), and records the applicationServerKey asked for.
 * @param {import('playwright-core').BrowserContext} context
 * @param {{endpoint: string, keys: {p256dh: string, auth: string}}} sub
 */
async function standInSubscription(context, sub) {
  await context.addInitScript((sub) => {
    const w = /** @type {any} */ (window);
    if (!('PushManager' in w)) return;
    let current = null;
    const make = (key) => ({
      endpoint: sub.endpoint,
      expirationTime: null,
      options: { userVisibleOnly: true, applicationServerKey: key },
      toJSON: () => ({ endpoint: sub.endpoint, expirationTime: null, keys: sub.keys }),
      unsubscribe: async () => ((current = null), true),
    });
    w.PushManager.prototype.subscribe = async function (opts) {
      const key = opts.applicationServerKey;
      const bytes = key instanceof ArrayBuffer ? new Uint8Array(key) : new Uint8Array(key.buffer, key.byteOffset, key.byteLength);
      w.__e2eAskedKey = btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
      current = make(bytes.slice().buffer);
      return current;
    };
    w.PushManager.prototype.getSubscription = async function () {
      return current;
    };
  }, sub);
}

e2e('the loopback push service decrypts the example of RFC 8291 (appendix A)', async () => {
  const ua = createECDH('prime256v1');
  ua.setPrivateKey(Buffer.from('q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94', 'base64url'));
  const body = Buffer.from('DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN', 'base64url');
  assert.equal(decryptAes128gcm(body, ua, Buffer.from('BTBZMqHH6r4Tts7J_aSIgg', 'base64url')).toString(), 'When I grow up, I want to be a watermelon');
  body[body.length - 1] ^= 1;
  assert.throws(() => decryptAes128gcm(body, ua, Buffer.from('BTBZMqHH6r4Tts7J_aSIgg', 'base64url')), 'a changed byte fails the tag');
});

/** Permission pushes of one session that reached the service. */
const permissionPushes = (id) => service.deliveries.filter((d) => d.payload.kind === 'permission' && d.payload.session_id === id);

e2e('a permission push: one per request, shown and answered from the service worker, the card retires', async () => {
  const sub = service.subscribe();
  const { public_key: vapidKey } = await api('GET', '/api/push/key');
  const context = await signedInContext(browser);
  await context.grantPermissions(['notifications'], { origin: stack.baseURL });
  await standInSubscription(context, sub);
  const page = await context.newPage();
  // The service worker of this context, for the push and the click.
  const swReady = context.waitForEvent('serviceworker', { timeout: STEP_MS });
  await page.goto('/settings?section=notifications');
  const sw = await swReady;
  await page.evaluate(() => navigator.serviceWorker.ready.then(() => true));
  const cdp = await context.newCDPSession(page);
  /** @type {Map<string, string>} scope → registration id */
  const regs = new Map();
  cdp.on('ServiceWorker.workerRegistrationUpdated', (e) => {
    for (const r of e.registrations) if (!r.isDeleted) regs.set(r.scopeURL, r.registrationId);
  });
  // What the service worker said and went through, for a failure's message.
  /** @type {string[]} */
  const swLog = [];
  sw.on('console', (m) => swLog.push(`${m.type()}: ${m.text()}`));
  cdp.on('ServiceWorker.workerVersionUpdated', (e) => swLog.push(`versions ${JSON.stringify(e.versions.map((v) => [v.versionId, v.runningStatus, v.status]))}`));
  cdp.on('ServiceWorker.workerErrorReported', (e) => swLog.push(`error ${e.errorMessage.errorMessage} at ${e.errorMessage.sourceURL}:${e.errorMessage.lineNumber}`));
  /** Awaits p; its error says what the service worker showed and logged. */
  const explained = async (/** @type {Promise<any>} */ p) => {
    try {
      return await p;
    } catch (err) {
      const state = await sw
        .evaluate(async () => {
          const s = /** @type {any} */ (self);
          return {
            active: s.registration.active?.state,
            permission: Notification.permission,
            shown: (await s.registration.getNotifications()).map((n) => n.tag),
            received: s.__svcPush.received.map((r) => `${r.payload?.kind} ${r.payload?.e2e_mark}${r.done ? '' : ' (not done)'}`),
            errors: s.__svcPush.errors,
          };
        })
        .catch((e) => String(e));
      /** @type {Error} */ (err).message += `\nservice worker: ${JSON.stringify(state)}; its log: ${JSON.stringify(swLog.slice(-40))}`;
      throw err;
    }
  };
  await cdp.send('ServiceWorker.enable');
  const registrationId = await until(async () => regs.get(`${stack.baseURL}/`), { timeoutMs: STEP_MS, what: 'the service worker registration' });
  // A payload to the service worker as a push (CDP, in place of the push
  // service), marked so that its push event can be told from others; it
  // resolves once the worker has handled it (its notification shown). Only
  // then may the test call getNotifications: a notification whose display a
  // getNotifications call overlapped has been seen to stay out of that list
  // for good (Chrome 156).
  let marks = 0;
  const deliver = async (/** @type {Record<string, unknown>} */ payload) => {
    const mark = `e2e-${++marks}`;
    await cdp.send('ServiceWorker.deliverPushMessage', { origin: stack.baseURL, registrationId, data: JSON.stringify({ ...payload, e2e_mark: mark }) });
    await explained(
      until(() => sw.evaluate((m) => /** @type {any} */ (self).__svcPush.received.some((r) => r.done && r.payload?.e2e_mark === m), mark), {
        timeoutMs: STEP_MS,
        what: `the service worker to handle the push of ${payload.kind} (${mark})`,
      }),
    );
  };

  // Enable this device from the settings section.
  const name = uniqueTitle('e2e push device');
  const section = page.getByRole('region', { name: 'This device' });
  await section.getByRole('textbox', { name: 'Device name' }).fill(name);
  await section.getByRole('button', { name: 'Enable notifications' }).click();
  await waitText(section, /gets notifications now/);
  assert.equal(await page.evaluate(() => /** @type {any} */ (window).__e2eAskedKey), vapidKey, 'subscribed with the server VAPID key');
  const devices = page.getByRole('list', { name: 'Devices that get notifications' });
  const mine = devices.getByRole('listitem', { name, exact: true });
  await waitText(mine, new RegExp(`via ${service.origin.replace(/[.]/g, '\\.')}`));
  await waitText(mine, /this device/);
  const { subscriptions } = await api('GET', '/api/push/subscriptions');
  const listed = subscriptions.find((s) => s.name === name);
  assert.ok(listed, 'the server lists the device');
  assert.equal(listed.endpoint_origin, service.origin);
  assert.ok(!JSON.stringify(subscriptions).includes(sub.endpoint), 'the endpoint is never echoed');

  // A test push, decrypted and verified by the service; the page says the
  // push service took it, and the device's record shows it at once.
  await mine.getByRole('button', { name: `Send a test to ${name}` }).click();
  await waitText(mine.getByRole('status'), /The push service took the test/);
  const testPush = service.deliveries.find((d) => d.sub === sub.id && d.payload.kind === 'test');
  assert.equal(testPush?.k, vapidKey, 'signed with the VAPID key the server publishes');
  await waitText(mine, /Last delivered: (?!never)/);
  await screenshots(page, 'settings-notifications');

  // A permission request while no tab shows the session: a socket joined to
  // it from a page outside the app (it never says visible) sends RUN_BASH.
  const { session_id: id, title } = await createSession(uniqueTitle('e2e push'));
  const agent = await context.newPage();
  await agent.goto('/manifest.json');
  await agent.evaluate(({ id }) => {
    const ws = new WebSocket(`${location.origin.replace(/^http/, 'ws')}/chat?session=${id}`);
    const w = /** @type {any} */ (window);
    w.__frames = [];
    ws.onmessage = (ev) => w.__frames.push(JSON.parse(ev.data));
    ws.onopen = () => ws.send(JSON.stringify({ type: 'user_message', content: 'RUN_BASH' }));
  }, { id });
  await until(async () => permissionPushes(id).length > 0, { timeoutMs: STEP_MS, what: 'the permission push' });
  const delivery = permissionPushes(id)[0];
  const push = delivery.payload;
  assert.equal(push.tool_name, 'Bash');
  assert.equal(push.session_title, title);
  assert.match(push.input.command, /echo hello-from-bash > bash_out\.txt/);
  assert.equal(push.input_truncated ?? false, false);
  assert.equal(push.url, `/s/${id}?perm=${encodeURIComponent(push.request_id)}`);
  assert.ok(push.token && push.pending >= 1);
  assert.equal(delivery.headers.urgency, 'high');
  assert.equal(delivery.k, vapidKey);

  // The payload to the real service worker: it shows the notification.
  await deliver(push);
  const shown = await explained(until(
    () => sw.evaluate(async (tag) => {
      const [n] = await /** @type {any} */ (self).registration.getNotifications({ tag });
      return n ? { title: n.title, body: n.body, requireInteraction: n.requireInteraction, actions: n.actions.map((a) => a.action) } : null;
    }, push.request_id),
    { timeoutMs: STEP_MS, what: 'the notification' },
  ));
  assert.deepEqual(shown, { title: `Bash in ${title}`, body: push.input.command, requireInteraction: true, actions: ['allow', 'deny'] });

  // The push's link opened on a phone: the card is in view, focused, marked.
  const phoneCtx = await signedInContext(browser, { phone: true });
  const phone = await phoneCtx.newPage();
  await phone.goto(push.url);
  const card = permissionCard(phone, 'Bash');
  await card.waitFor({ timeout: STEP_MS });
  await until(async () => phone.evaluate(() => document.activeElement?.getAttribute('aria-label') === 'Permission request: Bash'), { timeoutMs: STEP_MS, what: 'the card to have the focus' });
  await until(async () => (await card.evaluate((el) => !!el.closest('.perm-target'))), { timeoutMs: STEP_MS, what: 'the card to be marked' });
  const allowBox = await card.getByRole('button', { name: 'Allow', exact: true }).boundingBox();
  assert.ok(allowBox && allowBox.y >= 0 && allowBox.y + allowBox.height <= 844, `the card's Allow is in view (${JSON.stringify(allowBox)})`);
  assert.equal(new URL(phone.url()).search, '', 'the link is consumed (a reload does not jump again)');
  await screenshot(phone, 'push-landed-card');
  // The favicon carries the pending count while the request waits.
  const favicon = () => phone.evaluate(() => document.querySelector('link[rel="icon"]')?.getAttribute('href') ?? '');
  await until(async () => (await favicon()).startsWith('data:image/png'), { timeoutMs: STEP_MS, what: 'the favicon with the count' });

  // Allow from the notification: the service worker answers, the agent goes on.
  const answered = await sw.evaluate(async (tag) => {
    const s = /** @type {any} */ (self);
    const [n] = await s.registration.getNotifications({ tag });
    return s.__svcPush.onClick(n, 'allow');
  }, push.request_id);
  assert.equal(answered.status, 200, JSON.stringify(answered));
  assert.deepEqual(answered.body, { session_id: id, request_id: push.request_id, decision: 'allow' });
  assert.equal(await sw.evaluate(async (tag) => (await /** @type {any} */ (self).registration.getNotifications({ tag })).length, push.request_id), 0, 'the notification is closed');
  await waitText(card, /answered/i);
  await until(async () => (await favicon()) === '/instance-icons/default.svg', { timeoutMs: STEP_MS, what: 'the plain favicon again' });
  assert.equal(await card.getByRole('button', { name: 'Allow', exact: true }).count(), 0, 'no Allow left on the retired card');
  await until(async () => {
    const { tools } = await api('GET', `/api/sessions/${id}/logs/tools`);
    return tools[0]?.result?.content === 'hello-from-bash';
  }, { timeoutMs: STEP_MS, what: 'the agent to run the allowed command' });
  await until(async () => agent.evaluate(() => /** @type {any} */ (window).__frames.some((f) => f.type === 'agent_message' && f.data?.type === 'result')), { timeoutMs: STEP_MS, what: 'the turn to end' });

  // The token is single-use, and only ours works.
  // (Sent with this server's Origin, as the service worker's fetch is: the
  // refusals are the token's, not the origin gate's.)
  const answer = async (token) => {
    const res = await fetch(`${stack.baseURL}/api/push/answer`, { method: 'POST', headers: { 'Content-Type': 'application/json', Origin: stack.baseURL }, body: JSON.stringify({ token, decision: 'allow' }) });
    return { status: res.status, error: (await res.json().catch(() => ({}))).error };
  };
  assert.deepEqual(await answer(push.token), { status: 403, error: 'forbidden' }, 'a replayed token is refused');
  const forged = push.token.slice(0, -4) + (push.token.endsWith('AAAA') ? 'BBBB' : 'AAAA');
  assert.deepEqual(await answer(forged), { status: 403, error: 'forbidden' }, 'a forged token is refused');
  assert.deepEqual(await answer('x'.repeat(43)), { status: 403, error: 'forbidden' }, 'an unknown token is refused');

  // Chrome derives a tagged notification's id from its tag, and a tag shown
  // again right after its notification was closed has been seen to be
  // closed by that earlier close (the notification never shows). The steps
  // below show the request's payload under request ids of their own.
  const tagged = (/** @type {string} */ suffix) => ({ ...push, request_id: `${push.request_id}-${suffix}` });

  // A click on a stale notification (its token was used: the answer no
  // longer counts): a short notification says so.
  const stale = tagged('stale');
  await deliver(stale);
  const again = await explained(until(
    () => sw.evaluate(async (tag) => {
      const s = /** @type {any} */ (self);
      const [n] = await s.registration.getNotifications({ tag });
      return n ? s.__svcPush.onClick(n, 'allow') : null;
    }, stale.request_id),
    { timeoutMs: STEP_MS, what: 'the stale notification' },
  ));
  assert.ok(again.status === 403 || again.status === 410, JSON.stringify(again));
  const note = await sw.evaluate(async (tag) => (await /** @type {any} */ (self).registration.getNotifications({ tag })).map((n) => n.title), `${stale.request_id}:result`);
  assert.equal(note.length, 1);
  assert.match(note[0], /^Allow (not used|refused)$/);

  // A resolved payload closes the notification of its request, and only it.
  const pending = tagged('pending');
  await deliver(pending);
  await explained(until(async () => {
    const all = await sw.evaluate(async () => (await /** @type {any} */ (self).registration.getNotifications()).map((n) => n.tag));
    if (all.includes(pending.request_id)) return true;
    throw new Error(`shown: ${JSON.stringify(all)}`);
  }, { timeoutMs: STEP_MS, what: 'the notification of another request' }));
  await deliver({ kind: 'resolved', request_id: pending.request_id, pending: 0 });
  await until(() => sw.evaluate(async (tag) => (await /** @type {any} */ (self).registration.getNotifications({ tag })).length === 0, pending.request_id), { timeoutMs: STEP_MS, what: 'resolved to close it' });
  assert.deepEqual(
    await sw.evaluate(async () => (await /** @type {any} */ (self).registration.getNotifications()).map((n) => n.tag)),
    [`${stale.request_id}:result`],
    'resolved closes only the notification of its request',
  );

  assert.equal(permissionPushes(id).length, 1, 'exactly one push for the request');
  assert.deepEqual(service.errors, [], 'every push verified and decrypted');

  // The push service says the subscription is gone: the server drops it.
  service.answerWith(410);
  await mine.getByRole('button', { name: `Send a test to ${name}` }).click();
  await waitText(page.getByRole('region', { name: 'Devices' }).getByRole('alert'), new RegExp(`${re(name)} was removed: the push service says this subscription is gone \\(410\\)`));
  assert.ok(service.deliveries.some((d) => d.sub === sub.id && d.answered === 410), 'the push service answered 410');
  await mine.waitFor({ state: 'detached', timeout: STEP_MS });
  assert.ok(!(await api('GET', '/api/push/subscriptions')).subscriptions.some((s) => s.name === name), 'the server dropped the device');
  service.answerWith(201);

  // A click on the notification itself (no action) brings the app's tab to
  // the payload's page, routed in place (no reload).
  await agent.close();
  await page.evaluate(() => { /** @type {any} */ (window).__sameDocument = true; });
  const ended = { kind: 'turn_ended', session_id: id, session_title: title, duration_ms: 61000, status: 'success', url: `/s/${id}`, pending: 0 };
  await deliver(ended);
  const opened = await explained(until(
    () => sw.evaluate(async (tag) => {
      const s = /** @type {any} */ (self);
      const [n] = await s.registration.getNotifications({ tag });
      return n ? { title: n.title, result: await s.__svcPush.onClick(n, '') } : null;
    }, `turn:${id}`),
    { timeoutMs: STEP_MS, what: 'the turn notification' },
  ));
  assert.deepEqual(opened, { title: `Turn finished in ${title}`, result: { opened: true } });
  await until(async () => new URL(page.url()).pathname === `/s/${id}`, { timeoutMs: STEP_MS, what: 'the tab to show the session' });
  assert.equal(await page.evaluate(() => /** @type {any} */ (window).__sameDocument), true, 'routed without a reload');
});
