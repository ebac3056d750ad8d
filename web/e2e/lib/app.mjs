// @ts-check
// What the tests share: the stack's coordinates (from run.mjs, in E2E_STACK),
// the browser, the API, and the page helpers written against the accessible
// names of issue 16, item 10.
import { chromium } from 'playwright-core';
import { test as nodeTest } from 'node:test';
import { mkdir, mkdtemp } from 'node:fs/promises';
import path from 'node:path';
import { until, listenerPid } from './stack.mjs';
import { configToken } from './token.mjs';

export { until, listenerPid };

/** @type {import('./stack.mjs').StackInfo} */
export const stack = JSON.parse(process.env.E2E_STACK || 'null');
if (!stack) throw new Error('E2E_STACK is not set: run the tests through web/e2e/run.mjs (make ui-e2e)');

/** Where screenshots go (kept as CI artifacts). */
export const ARTIFACTS = process.env.E2E_ARTIFACTS || path.resolve('artifacts');

export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };

/** How long a step may take before the test fails. */
export const STEP_MS = Number(process.env.E2E_STEP_MS || 15_000);

/** The browser contexts of the running test (tests of a file run one by one). */
let contexts = new Set();

/**
 * A test (node:test) whose browser contexts are closed at its end; when it
 * fails, each of their pages is saved first as ARTIFACTS/failures/<test>-<n>.png.
 * @param {string} name
 * @param {() => Promise<void>} fn
 */
export function e2e(name, fn) {
  return nodeTest(name, async () => {
    contexts = new Set();
    const mine = contexts;
    try {
      await fn();
    } catch (err) {
      const dir = path.join(ARTIFACTS, 'failures');
      await mkdir(dir, { recursive: true });
      let n = 0;
      for (const ctx of mine) {
        for (const page of ctx.pages()) {
          const file = path.join(dir, `${name.replace(/[^\w-]+/g, '_').slice(0, 60)}-${++n}.png`);
          await page.screenshot({ path: file, timeout: 5000 }).catch(() => {});
        }
      }
      throw err;
    } finally {
      for (const ctx of mine) await ctx.close().catch(() => {});
    }
  });
}

/** Launches Debian's chromium (no browser download). */
export async function launch() {
  const args = process.getuid?.() === 0 ? ['--no-sandbox'] : [];
  return chromium.launch({ executablePath: process.env.E2E_CHROMIUM || '/usr/bin/chromium', args });
}

/** @type {Promise<any[]> | null} */
let cookies = null;

/**
 * The session cookie of one POST /api/login, made once per test process and
 * given to every context: the gateway checks one login at a time per client
 * address (429 with Retry-After for the others), and all the test processes
 * share 127.0.0.1. A 429 is retried after the Retry-After the gateway asks for,
 * within STEP_MS.
 */
function loginCookies() {
  cookies ??= (async () => {
    const deadline = Date.now() + STEP_MS;
    for (;;) {
      const res = await fetch(`${stack.baseURL}/api/login`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ password: stack.password }),
      });
      if (res.ok) {
        const url = new URL(stack.baseURL);
        return res.headers.getSetCookie().map((line) => {
          const [pair] = line.split(';');
          const i = pair.indexOf('=');
          return { name: pair.slice(0, i), value: pair.slice(i + 1), domain: url.hostname, path: '/', httpOnly: true, sameSite: /** @type {const} */ ('Lax') };
        });
      }
      const wait = Number(res.headers.get('retry-after') || 1) * 1000;
      if (res.status !== 429 || Date.now() + wait > deadline) throw new Error(`POST /api/login: ${res.status} ${await res.text()}`);
      await new Promise((r) => setTimeout(r, wait)); // the wait the gateway asked for
    }
  })();
  return cookies;
}

/**
 * A browser context that is not signed in (closed and shot on failure like the others).
 * @param {import('playwright-core').Browser} browser
 */
export async function anonymousContext(browser) {
  const context = await browser.newContext({ baseURL: stack.baseURL, viewport: DESKTOP });
  contexts.add(context);
  return context;
}

/**
 * A browser context signed in through POST /api/login (the cookie lands in the
 * context); the sign-in test goes through the form instead.
 * @param {import('playwright-core').Browser} browser
 * @param {{phone?: boolean}} [opts]
 */
export async function signedInContext(browser, opts = {}) {
  const context = await browser.newContext({
    baseURL: stack.baseURL,
    viewport: opts.phone ? PHONE : DESKTOP,
    ...(opts.phone ? { isMobile: true, hasTouch: true, deviceScaleFactor: 2 } : {}),
  });
  contexts.add(context);
  await context.addCookies(await loginCookies());
  return context;
}

/**
 * Calls the API with the Bearer token; returns the parsed JSON, or throws on a
 * non-2xx answer.
 * @param {string} method
 * @param {string} route
 * @param {unknown} [body]
 */
export async function api(method, route, body) {
  const call = () => fetch(stack.baseURL + route, {
    method,
    headers: { Authorization: `Bearer ${stack.token}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let res = await call();
  if (res.status === 401) {
    // The token was revoked or the password changed (tests/serial/settings-*):
    // the config file holds the new one.
    const now = await configToken(stack.home);
    if (now && now !== stack.token) {
      stack.token = now;
      res = await call();
    }
  }
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

/** A fresh working directory for one test's sessions. */
export async function workdir() {
  const root = path.join(stack.home, 'projects');
  await mkdir(root, { recursive: true });
  return mkdtemp(path.join(root, 'p-'));
}

/** A title no other test (or other stack on the shared database) uses. */
export function uniqueTitle(what) {
  return `${what} ${Math.random().toString(36).slice(2, 8)}`;
}

/**
 * Creates a session through the API.
 * @param {string} title
 * @returns {Promise<{session_id: string, title: string, cwd: string}>}
 */
export async function createSession(title) {
  return api('POST', '/api/sessions', { cwd: await workdir(), title });
}

/** Every stored message of a session, in order. */
export async function logMessages(id) {
  /** @type {any[]} */
  const all = [];
  let since = 0;
  for (;;) {
    const page = await api('GET', `/api/sessions/${id}/logs/messages?since=${since}&limit=5000`);
    all.push(...page.messages);
    if (!page.has_more || page.messages.length === 0) return all;
    since = page.messages[page.messages.length - 1].line;
  }
}

/** Escapes s for a RegExp. */
export function re(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Waits until the locator's text matches pattern.
 * @param {import('playwright-core').Locator} locator
 * @param {RegExp} pattern
 * @param {number} [timeoutMs]
 */
export async function waitText(locator, pattern, timeoutMs = STEP_MS) {
  return until(async () => pattern.test((await locator.first().innerText({ timeout: 1000 })) ?? ''), {
    timeoutMs,
    what: `text ${pattern} in ${locator}`,
  });
}

/** The session's link in the sidebar (its name starts with the title). */
export function sessionLink(page, title) {
  return page.getByRole('navigation', { name: 'Sessions', exact: true }).getByRole('link', { name: new RegExp(`^${re(title)}`) }).first();
}

/**
 * Opens a session from the sidebar (on a phone, through the "Sessions menu"
 * drawer) and waits for its socket.
 * @param {import('playwright-core').Page} page
 * @param {string} title
 * @param {{phone?: boolean}} [opts]
 */
export async function openSession(page, title, opts = {}) {
  if (!page.url().startsWith(stack.baseURL)) await page.goto('/');
  if (opts.phone) await page.getByRole('button', { name: 'Sessions menu', exact: true }).click();
  await sessionLink(page, title).click({ timeout: STEP_MS });
  await waitText(connection(page), /connected/i);
}

/** The composer's textbox. */
export const message = (page) => page.getByRole('textbox', { name: 'Message', exact: true });
/** The "Agent status" status. */
export const agentStatus = (page) => page.getByRole('status', { name: 'Agent status' });
/** The "Connection" status. */
export const connection = (page) => page.getByRole('status', { name: 'Connection' });
/** The region of a pending permission request. */
export const permissionCard = (page, tool) => page.getByRole('region', { name: `Permission request: ${tool}` });

/**
 * Types a prompt in the composer and sends it with the Send button.
 * @param {import('playwright-core').Page} page
 * @param {string} text
 */
export async function send(page, text) {
  await message(page).fill(text);
  await page.getByRole('button', { name: 'Send', exact: true }).click();
}

/** Waits for the agent status to say idle (the turn is over). */
export async function waitIdle(page, timeoutMs = STEP_MS) {
  await waitText(agentStatus(page), /idle/i, timeoutMs);
}

/**
 * The sids of the log lines the page took in: every `[data-sid]` in the page
 * (one element per line: a block, or a hidden span for a line folded into
 * another block), sorted by line.
 * @param {import('playwright-core').Page} page
 * @returns {Promise<string[]>}
 */
export async function renderedSids(page) {
  const sids = await page.evaluate(() => Array.from(document.querySelectorAll('[data-sid]'), (el) => el.getAttribute('data-sid') ?? ''));
  const line = (sid) => Number(sid.slice(sid.lastIndexOf(':') + 1));
  return sids.sort((x, y) => line(x) - line(y));
}

/**
 * Saves a screenshot of the page's current view at the desktop and the phone
 * size (the viewport is put back afterwards) under ARTIFACTS/screens/.
 * @param {import('playwright-core').Page} page
 * @param {string} name
 */
export async function screenshots(page, name) {
  const dir = path.join(ARTIFACTS, 'screens');
  await mkdir(dir, { recursive: true });
  const before = page.viewportSize() ?? DESKTOP;
  for (const size of [DESKTOP, PHONE]) {
    await page.setViewportSize(size);
    await page.screenshot({ path: path.join(dir, `${name}-${size.width}x${size.height}.png`) });
  }
  await page.setViewportSize(before);
}

/**
 * Saves a screenshot of the page at its current size as
 * ARTIFACTS/screens/<name>-<width>x<height>.png (for a view only one size has,
 * such as the open drawer on a phone).
 * @param {import('playwright-core').Page} page
 * @param {string} name
 */
export async function screenshot(page, name) {
  const dir = path.join(ARTIFACTS, 'screens');
  await mkdir(dir, { recursive: true });
  const size = page.viewportSize() ?? DESKTOP;
  await page.screenshot({ path: path.join(dir, `${name}-${size.width}x${size.height}.png`) });
}

/**
 * Records every text the element shows from now on, in the page (a
 * MutationObserver), so a short state cannot slip between two polls. Returns a
 * function that reads the texts seen so far.
 * @param {import('playwright-core').Locator} locator
 */
export async function recordTexts(locator) {
  const key = `__e2eTexts${Math.random().toString(36).slice(2)}`;
  await locator.first().evaluate((el, key) => {
    const w = /** @type {any} */ (window);
    w[key] = [el.textContent ?? ''];
    new MutationObserver(() => w[key].push(el.textContent ?? '')).observe(el, { childList: true, subtree: true, characterData: true });
  }, key);
  return async () => /** @type {string[]} */ (await locator.page().evaluate((key) => /** @type {any} */ (window)[key], key));
}

/**
 * Records, in the page, when each of the texts first appears in the body
 * (performance.now() milliseconds, or null while never seen).
 * @param {import('playwright-core').Page} page
 * @param {string[]} texts
 */
export async function recordAppearances(page, texts) {
  const key = `__e2eSeen${Math.random().toString(36).slice(2)}`;
  await page.evaluate(({ key, texts }) => {
    const w = /** @type {any} */ (window);
    const seen = (w[key] = Object.fromEntries(texts.map((t) => [t, null])));
    const check = () => {
      const body = document.body.innerText;
      for (const t of texts) if (seen[t] === null && body.includes(t)) seen[t] = performance.now();
    };
    new MutationObserver(check).observe(document.body, { childList: true, subtree: true, characterData: true });
    check();
  }, { key, texts });
  return async () => /** @type {Record<string, number | null>} */ (await page.evaluate((key) => /** @type {any} */ (window)[key], key));
}
