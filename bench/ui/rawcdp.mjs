// @ts-check
// rawcdp: Debian's chromium driven over a bare DevTools pipe, for the benchmarks
// that must measure the browser as a user's runs: with no driver attached.
//
// Playwright enables CDP's Network domain on every page it drives, so Chromium
// copies every WebSocket frame's payload (base64) to the driver: a page reading
// a terminal's flood pays for a second copy of every byte. Here the browser is
// started with --remote-debugging-pipe (fds 3 and 4, JSON messages ended by NUL)
// and only the Target, Page (load events), and Runtime (evaluate) methods are
// used: no Network domain, no console events.
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/**
 * The flags that keep a headless page running as a visible one would (no
 * timer throttling, no backgrounding) and the browser quiet (no first-run,
 * updates, extensions); WebGL through SwiftShader where there is no GPU.
 */
const FLAGS = [
  '--headless',
  '--remote-debugging-pipe',
  '--no-first-run',
  '--no-default-browser-check',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-extensions',
  '--disable-background-timer-throttling',
  '--disable-backgrounding-occluded-windows',
  '--disable-renderer-backgrounding',
  '--enable-unsafe-swiftshader',
  '--password-store=basic',
];

/**
 * Launches chromium (E2E_CHROMIUM, else /usr/bin/chromium) on a temporary
 * profile, removed at close.
 * @param {{width?: number, height?: number, args?: string[]}} [opts] the pages' viewport in CSS pixels; more flags
 * @returns {Promise<RawBrowser>}
 */
export async function launchChromium({ width = 1280, height = 800, args = [] } = {}) {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'rawcdp-'));
  const exe = process.env.E2E_CHROMIUM || '/usr/bin/chromium';
  const flags = [...FLAGS, `--window-size=${width},${height}`, `--user-data-dir=${dir}`, ...(process.getuid?.() === 0 ? ['--no-sandbox'] : []), ...args, 'about:blank'];
  const proc = spawn(exe, flags, { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
  const browser = new RawBrowser(proc, dir, { width, height });
  try {
    browser.product = (await browser.send('Browser.getVersion')).product;
  } catch (err) {
    await browser.close();
    throw err;
  }
  return browser;
}

/** A browser started by launchChromium: CDP over its pipe. */
export class RawBrowser {
  /**
   * @param {import('node:child_process').ChildProcess} proc
   * @param {string} dir the profile directory
   * @param {{width: number, height: number}} size
   */
  constructor(proc, dir, size) {
    this.proc = proc;
    this.dir = dir;
    this.size = size;
    /** Browser.getVersion's product, e.g. "HeadlessChrome/156.0.8078.108". */
    this.product = '';
    this.lastId = 0;
    /** @type {Map<number, {method: string, resolve: (v: any) => void, reject: (e: Error) => void}>} */
    this.calls = new Map();
    /** @type {Set<(msg: any) => void>} */
    this.listeners = new Set();
    /** @type {Error | null} */
    this.dead = null;
    this.stderr = '';
    proc.stderr?.on('data', (d) => (this.stderr = (this.stderr + d).slice(-4000)));
    const out = /** @type {import('node:stream').Readable} */ (proc.stdio[4]);
    /** @type {Buffer[]} */
    let parts = [];
    out.on('data', (/** @type {Buffer} */ d) => {
      for (let at = d.indexOf(0); at >= 0; at = d.indexOf(0)) {
        parts.push(d.subarray(0, at));
        this.receive(JSON.parse(Buffer.concat(parts).toString('utf8')));
        parts = [];
        d = d.subarray(at + 1);
      }
      if (d.length) parts.push(d);
    });
    out.on('error', () => {});
    /** @type {import('node:stream').Writable} */ (proc.stdio[3]).on('error', () => {});
    this.exited = new Promise((resolve) =>
      proc.on('exit', (code, signal) => {
        this.dead = new Error(`chromium exited (${signal ?? code})${this.stderr ? `: ${this.stderr.trim().split('\n').slice(-5).join('\n')}` : ''}`);
        for (const c of this.calls.values()) c.reject(this.dead);
        this.calls.clear();
        resolve(undefined);
      }),
    );
  }

  /** @param {any} msg */
  receive(msg) {
    if (msg.id !== undefined) {
      const c = this.calls.get(msg.id);
      if (!c) return;
      this.calls.delete(msg.id);
      if (msg.error) c.reject(new Error(`${c.method}: ${msg.error.message}${msg.error.data ? ` (${msg.error.data})` : ''}`));
      else c.resolve(msg.result);
      return;
    }
    for (const l of this.listeners) l(msg);
  }

  /**
   * Sends a CDP command (to the browser, or to the page of sessionId); resolves with its result.
   * @param {string} method @param {object} [params] @param {string} [sessionId]
   * @returns {Promise<any>}
   */
  send(method, params = {}, sessionId) {
    if (this.dead) return Promise.reject(this.dead);
    const id = ++this.lastId;
    return new Promise((resolve, reject) => {
      this.calls.set(id, { method, resolve, reject });
      /** @type {import('node:stream').Writable} */ (this.proc.stdio[3]).write(`${JSON.stringify({ id, method, params, sessionId })}\0`);
    });
  }

  /**
   * Resolves with the params of the next event `method` of sessionId; call it before the command that causes the event.
   * @param {string} method @param {string | undefined} sessionId @param {number} timeoutMs
   * @returns {Promise<any>}
   */
  event(method, sessionId, timeoutMs) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.listeners.delete(l);
        reject(new Error(`no ${method} in ${timeoutMs} ms`));
      }, timeoutMs);
      /** @param {any} msg */
      const l = (msg) => {
        if (msg.method !== method || msg.sessionId !== sessionId) return;
        clearTimeout(timer);
        this.listeners.delete(l);
        resolve(msg.params);
      };
      this.listeners.add(l);
    });
  }

  /** The version, e.g. "156.0.8078.108". */
  version() {
    return this.product.split('/').pop() ?? '';
  }

  /**
   * A page at url in a window and browser context of its own (its own cookies
   * and storage, as a Playwright context), its viewport the size given at
   * launch; resolves once it has loaded.
   * @param {string} url
   * @returns {Promise<RawPage>}
   */
  async newPage(url) {
    const { browserContextId } = await this.send('Target.createBrowserContext');
    const { targetId } = await this.send('Target.createTarget', { url: 'about:blank', browserContextId, ...this.size });
    const { sessionId } = await this.send('Target.attachToTarget', { targetId, flatten: true });
    // --window-size is the window's outer size; the viewport is made the size asked for, as Playwright's.
    const { windowId } = await this.send('Browser.getWindowForTarget', { targetId });
    await this.send('Browser.setContentsSize', { windowId, ...this.size });
    const page = new RawPage(this, browserContextId, targetId, sessionId);
    await page.send('Page.enable');
    await page.goto(url);
    return page;
  }

  /** The pids of the browser's process tree (the browser, its renderers, GPU and utility processes). */
  async pids() {
    return [...(await processTree([this.proc.pid ?? -1])).keys()];
  }

  /** CPU seconds (user + system) used so far by the browser's process tree (processes that have exited are not counted). */
  async cpuSeconds() {
    let sum = 0;
    for (const p of (await processTree([this.proc.pid ?? -1])).values()) sum += p.cpu;
    return sum;
  }

  /** Closes the browser (Browser.close, SIGKILL after 5 s) and removes its profile. */
  async close() {
    if (!this.dead) {
      this.send('Browser.close').catch(() => {});
      const timer = setTimeout(() => this.proc.kill('SIGKILL'), 5000);
      await this.exited;
      clearTimeout(timer);
    }
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** A page of a RawBrowser (a target attached with flatten: its commands carry its sessionId). */
export class RawPage {
  /**
   * @param {RawBrowser} browser @param {string} browserContextId @param {string} targetId @param {string} sessionId
   */
  constructor(browser, browserContextId, targetId, sessionId) {
    this.browser = browser;
    this.browserContextId = browserContextId;
    this.targetId = targetId;
    this.sessionId = sessionId;
  }

  /** A CDP command to this page. @param {string} method @param {object} [params] */
  send(method, params) {
    return this.browser.send(method, params, this.sessionId);
  }

  /**
   * Evaluates expression in the page (a promise is awaited); its value, as JSON
   * would carry it. Throws the page's exception, with where it was thrown.
   * @param {string} expression
   * @returns {Promise<any>}
   */
  async evaluate(expression) {
    const { result, exceptionDetails: x } = await this.send('Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true });
    if (x) {
      const what = x.exception?.description ?? x.exception?.value ?? x.text;
      throw new Error(`in the page: ${what} (at ${x.lineNumber + 1}:${x.columnNumber + 1} of the evaluated expression: ${expression.slice(0, 200)}${expression.length > 200 ? '...' : ''})`);
    }
    return result.value;
  }

  /**
   * Calls fn in the page with arg (JSON), as Playwright's page.evaluate(fn, arg):
   * fn's source is sent, so it must use nothing of this module's scope.
   * @template A, R
   * @param {(arg: A) => R} fn @param {A} [arg]
   * @returns {Promise<Awaited<R>>}
   */
  call(fn, arg) {
    return this.evaluate(`(${fn.toString()})(${arg === undefined ? '' : JSON.stringify(arg)})`);
  }

  /** Navigates to url; resolves once its load event has fired. @param {string} url @param {number} [timeoutMs] */
  async goto(url, timeoutMs = 30_000) {
    const loaded = this.browser.event('Page.loadEventFired', this.sessionId, timeoutMs);
    loaded.catch(() => {});
    const nav = await this.send('Page.navigate', { url });
    if (nav.errorText) throw new Error(`${url}: ${nav.errorText}`);
    await loaded;
  }

  /** Signs in as the app's login page does (POST /api/login from the page: the cookie is set for its origin). @param {string} password */
  async signIn(password) {
    const status = await this.call(
      (password) => fetch('/api/login', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ password }) }).then((r) => r.status),
      password,
    );
    if (status < 200 || status > 299) throw new Error(`sign-in: ${status}`);
  }

  /** Sets (null: removes) keys of the page's origin's localStorage. @param {Record<string, string | null>} items */
  setLocalStorage(items) {
    return this.call((items) => {
      for (const [k, v] of Object.entries(items)) v === null ? localStorage.removeItem(k) : localStorage.setItem(k, v);
    }, items);
  }

  /** Closes the page and its browser context. */
  async close() {
    await this.browser.send('Target.closeTarget', { targetId: this.targetId });
    await this.browser.send('Target.disposeBrowserContext', { browserContextId: this.browserContextId });
  }
}

/**
 * The processes under roots (the roots included) that are running now:
 * pid to parent, command name, CPU seconds (user + system).
 * @param {number[]} roots
 * @returns {Promise<Map<number, {ppid: number, comm: string, cpu: number}>>}
 */
export async function processTree(roots) {
  /** @type {Map<number, {ppid: number, comm: string, cpu: number}>} */
  const all = new Map();
  for (const d of await readdir('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const st = await readFile(`/proc/${d}/stat`, 'utf8');
      const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
      all.set(Number(d), { ppid: Number(f[1]), comm: st.slice(st.indexOf('(') + 1, st.lastIndexOf(')')), cpu: (Number(f[11]) + Number(f[12])) / 100 });
    } catch {
      /* gone */
    }
  }
  const mine = new Map();
  for (const p of roots) if (all.has(p)) mine.set(p, all.get(p));
  for (let grew = true; grew; ) {
    grew = false;
    for (const [p, v] of all)
      if (!mine.has(p) && mine.has(v.ppid)) {
        mine.set(p, v);
        grew = true;
      }
  }
  return mine;
}
