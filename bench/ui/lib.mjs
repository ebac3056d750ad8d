// @ts-check
// What the browser benchmarks share: the stack they run against (started as
// the e2e tests start it, or the one given in E2E_STACK), Chromium, the API
// with the stack's token, and their sections of BENCHMARKS.md.
import { createRequire } from 'node:module';
import { readFile, writeFile, mkdir, mkdtemp } from 'node:fs/promises';
import path from 'node:path';
import { ROOT, startStack } from '../../web/e2e/lib/stack.mjs';

const require = createRequire(path.join(ROOT, 'web/e2e/package.json'));
/** @type {typeof import('playwright-core')} */
const { chromium } = require('playwright-core');

/**
 * Starts (or takes) the stack and launches Chromium.
 * @returns {Promise<{info: any, stop: () => Promise<void>, browser: import('playwright-core').Browser,
 *   api: (method: string, route: string, body?: unknown) => Promise<any>,
 *   newSession: (title: string, prefix?: string) => Promise<any>}>}
 */
export async function openBench() {
  const artifacts = path.join(ROOT, 'web/e2e/artifacts/bench');
  // A stack given in E2E_STACK (from `node web/e2e/lib/stack.mjs`) is used as it is.
  const { info, stop } = process.env.E2E_STACK
    ? { info: JSON.parse(process.env.E2E_STACK), stop: async () => {} }
    : await startStack({ artifacts });
  const browser = await chromium.launch({
    executablePath: process.env.E2E_CHROMIUM || '/usr/bin/chromium',
    args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
  });
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
