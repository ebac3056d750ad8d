// @ts-check
// What the browser benchmarks share: the stack they run against (started as
// the e2e tests start it, or the one given in E2E_STACK), Chromium (through
// Playwright, or bare over its DevTools pipe: openDriver), the API with the
// stack's token, and their sections of BENCHMARKS.md.
import { createRequire } from 'node:module';
import { readFile, writeFile, mkdir, mkdtemp } from 'node:fs/promises';
import path from 'node:path';
import { ROOT, startStack } from '../../web/e2e/lib/stack.mjs';
import { launchChromium, processTree } from './rawcdp.mjs';

const require = createRequire(path.join(ROOT, 'web/e2e/package.json'));
/** @type {typeof import('playwright-core')} */
const { chromium } = require('playwright-core');

/** Launches Debian's chromium through Playwright (E2E_CHROMIUM, else /usr/bin/chromium). */
function launchPlaywright() {
  return chromium.launch({
    executablePath: process.env.E2E_CHROMIUM || '/usr/bin/chromium',
    args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
  });
}

/**
 * Starts (or takes) the stack and launches Chromium through Playwright (unless
 * opts.browser is false: then browser is null).
 * @param {{browser?: boolean}} [opts]
 * @returns {Promise<{info: any, stop: () => Promise<void>, browser: import('playwright-core').Browser,
 *   api: (method: string, route: string, body?: unknown) => Promise<any>,
 *   newSession: (title: string, prefix?: string) => Promise<any>}>}
 */
export async function openBench({ browser: withBrowser = true } = {}) {
  const artifacts = path.join(ROOT, 'web/e2e/artifacts/bench');
  // A stack given in E2E_STACK (from `node web/e2e/lib/stack.mjs`) is used as it is.
  const { info, stop } = process.env.E2E_STACK
    ? { info: JSON.parse(process.env.E2E_STACK), stop: async () => {} }
    : await startStack({ artifacts });
  const browser = withBrowser ? await launchPlaywright() : /** @type {any} */ (null);
  /** @param {string} method @param {string} route @param {unknown} [body] */
  async function api(method, route, body) {
    const res = await fetch(info.baseURL + route, {
      method,
      headers: { Authorization: `Bearer ${info.token}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : null;
  }
  /** A session in a new directory under the stack's projects. @param {string} title @param {string} [prefix] */
  async function newSession(title, prefix = 'b-') {
    const root = path.join(info.home, 'projects');
    await mkdir(root, { recursive: true });
    return api('POST', '/api/sessions', { cwd: await mkdtemp(path.join(root, prefix)), title });
  }
  return { info, stop, browser, api, newSession };
}

/**
 * A page of a Driver, signed in: fn is called in it with arg (JSON) as
 * Playwright's page.evaluate(fn, arg); cdp sends a command of the page's
 * DevTools session.
 * @typedef {{call: <A, R>(fn: (arg: A) => R, arg?: A) => Promise<Awaited<R>>,
 *   cdp: (method: string, params?: object) => Promise<any>, close: () => Promise<void>}} DriverPage
 */

/**
 * A Chromium a benchmark measures in: launched for it, closed by close.
 * name: "raw" (over a bare DevTools pipe: nothing but the benchmark's own
 * evaluate calls crosses to the driver) or "playwright" (Playwright drives the
 * page: it enables the Network domain, so every WebSocket frame is copied to
 * it). open(route, storage): a page in a window and browser context of its own,
 * signed in with the stack's password, localStorage set (null: removed) before
 * the app loads, at route (loaded). roots: the browser's pid, under which its
 * renderers and GPU process run (their CPU is the browser's).
 * @typedef {{name: 'raw' | 'playwright', version: string, roots: number[],
 *   open: (route: string, storage?: Record<string, string | null>) => Promise<DriverPage>,
 *   close: () => Promise<void>}} Driver
 */

/**
 * Launches Chromium for a benchmark on the stack info, pages of viewport's size.
 * @param {'raw' | 'playwright'} name @param {any} info @param {{width: number, height: number}} viewport
 * @returns {Promise<Driver>}
 */
export async function openDriver(name, info, viewport) {
  if (name === 'raw') {
    const b = await launchChromium(viewport);
    return {
      name,
      version: b.version(),
      roots: [b.proc.pid ?? -1],
      async open(route, storage) {
        // Same origin as the app, so that the sign-in's cookie and the storage are the app's.
        const page = await b.newPage(`${info.baseURL}/manifest.json`);
        await page.signIn(info.password);
        if (storage) await page.setLocalStorage(storage);
        if (route !== '/manifest.json') await page.goto(info.baseURL + route);
        return { call: (fn, arg) => page.call(fn, arg), cdp: (method, params) => page.send(method, params), close: () => page.close() };
      },
      close: () => b.close(),
    };
  }
  if (name !== 'playwright') throw new Error(`no driver ${name} (raw or playwright)`);
  // Playwright launches chromium as a child of this process: the new one is the browser.
  const mine = async () => [...(await processTree([process.pid]))].filter(([, v]) => v.ppid === process.pid && /chrom/i.test(v.comm)).map(([p]) => p);
  const before = await mine();
  const browser = await launchPlaywright();
  const roots = (await mine()).filter((p) => !before.includes(p));
  return {
    name,
    version: browser.version(),
    roots,
    async open(route, storage) {
      const ctx = await browser.newContext({ baseURL: info.baseURL, viewport });
      if (storage)
        await ctx.addInitScript((items) => {
          for (const [k, v] of Object.entries(items)) v === null ? localStorage.removeItem(k) : localStorage.setItem(k, v);
        }, storage);
      const res = await ctx.request.post('/api/login', { data: { password: info.password } });
      if (!res.ok()) throw new Error(`login: ${res.status()}`);
      const page = await ctx.newPage();
      await page.goto(route);
      /** @type {import('playwright-core').CDPSession | null} */
      let cdp = null;
      return {
        call: (fn, arg) => page.evaluate(/** @type {any} */ (fn), arg),
        cdp: async (method, params) => (cdp ??= await ctx.newCDPSession(page)).send(/** @type {any} */ (method), params),
        close: () => ctx.close(),
      };
    },
    close: () => browser.close(),
  };
}

/**
 * Replaces BENCHMARKS.md's section between <!-- bench:NAME:start --> and
 * <!-- bench:NAME:end --> with md (appended when missing).
 * @param {string} name @param {string} md @param {string} [file]
 */
export async function writeSection(name, md, file = path.join(ROOT, 'BENCHMARKS.md')) {
  const start = `<!-- bench:${name}:start -->`;
  const end = `<!-- bench:${name}:end -->`;
  let text = await readFile(file, 'utf8');
  const block = `${start}\n${md}${end}`;
  const i = text.indexOf(start);
  const j = text.indexOf(end);
  if (i >= 0 && j > i) text = text.slice(0, i) + block + text.slice(j + end.length);
  else text = `${text.replace(/\n*$/, '\n')}\n${block}\n`;
  await writeFile(file, text);
}
