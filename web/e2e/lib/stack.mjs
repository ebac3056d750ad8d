// @ts-check
// The stack the end-to-end tests (and the UI benchmark) run against, started as
// `make run` does: deploy/scripts/run.sh with a temporary HOME, free loopback
// ports (the five services' and the data home's Redis), a chosen password, and the fake agent as the agent-sdk provider's
// executable. RUN_RESTART=chat lets a test kill chat and see run.sh start it
// again while the other services stay up.
import { spawn, execFile } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

const run = promisify(execFile);

/** The repository's root. */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/**
 * A free TCP port on 127.0.0.1 (the kernel picks it; it is closed again at once).
 * @returns {Promise<number>}
 */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Polls check() until it returns a truthy value, or throws after timeoutMs with
 * what() in the message. Each try waits for the previous one (no overlap).
 * @template T
 * @param {() => Promise<T>} check
 * @param {{timeoutMs: number, what: string, intervalMs?: number}} opts
 * @returns {Promise<T>}
 */
export async function until(check, { timeoutMs, what, intervalMs = 100 }) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
      last = v;
    } catch (err) {
      last = err;
    }
    if (Date.now() >= deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/**
 * @typedef {object} StackInfo
 * @property {string} baseURL      the gateway, e.g. http://127.0.0.1:41234
 * @property {string} password     the sign-in password
 * @property {string} token        the API token (Bearer)
 * @property {string} home         the temporary HOME
 * @property {string} dataHome     SVC_CODE_HOME
 * @property {number} chatPort     chat's port (to find and kill it)
 * @property {string} databaseURL  the services' DATABASE_URL (owner role)
 * @property {string} fakeclaude   the fake agent's path
 */

/**
 * Builds the fake agent, starts run.sh and waits for the gateway's /health.
 * @param {{artifacts: string, log?: (s: string) => void}} opts
 * @returns {Promise<{info: StackInfo, stop: () => Promise<void>}>}
 */
export async function startStack({ artifacts, log = (s) => process.stderr.write(`e2e: ${s}\n`) }) {
  const homeRoot = process.env.E2E_HOME_ROOT || tmpdir();
  await mkdir(homeRoot, { recursive: true });
  const home = await mkdtemp(path.join(homeRoot, 'svc-code-e2e-'));
  const dataHome = path.join(home, '.svc-code');
  await mkdir(path.join(home, 'bin'), { recursive: true });
  const fakeclaude = path.join(home, 'bin', 'fakeclaude');
  log(`building the fake agent into ${fakeclaude}`);
  await run('go', ['build', '-o', fakeclaude, './services/chat/cmd/fakeclaude'], { cwd: ROOT, maxBuffer: 1 << 24 });

  const [svc, chat, terminal, shadow, analytics, redis] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort(), freePort()]);
  const password = `e2e-${randomBytes(12).toString('hex')}`;
  /** @type {NodeJS.ProcessEnv} */
  const env = { ...process.env };
  // Whatever points the services elsewhere is dropped: the temporary HOME decides.
  // (Without REDIS_URL, run.sh starts the data home's own Redis, on SVC_REDIS_PORT.)
  for (const k of ['XDG_CONFIG_HOME', 'SVC_CONFIG', 'SVC_CODE_HOME', 'SVC_CODE_PROFILE', 'DATABASE_URL', 'READONLY_DATABASE_URL',
    'REDIS_URL', 'REDIS_URL_FILE', 'SVC_CODE_PASSWORD_FILE', 'SVC_BIN_DIR', 'SVC_BUILD', 'CHAT_URL', 'TERMINAL_URL', 'SHADOW_URL', 'ANALYTICS_URL']) {
    delete env[k];
  }
  Object.assign(env, {
    HOME: home,
    SVC_ADDR: `127.0.0.1:${svc}`,
    CHAT_ADDR: `127.0.0.1:${chat}`,
    TERMINAL_ADDR: `127.0.0.1:${terminal}`,
    SHADOW_ADDR: `127.0.0.1:${shadow}`,
    ANALYTICS_ADDR: `127.0.0.1:${analytics}`,
    SVC_REDIS_PORT: String(redis),
    SVC_CODE_PASSWORD: password,
    RUN_RESTART: 'chat',
    HEALTH_TIMEOUT: process.env.HEALTH_TIMEOUT || '60',
  });
  const baseURL = `http://127.0.0.1:${svc}`;
  await mkdir(artifacts, { recursive: true });
  const logPath = path.join(artifacts, 'stack.log');
  const out = createWriteStream(logPath);
  log(`starting the stack at ${baseURL} (HOME ${home}, log ${logPath})`);
  // Its own process group, so that the last resort can end every child.
  const child = spawn('bash', ['deploy/scripts/run.sh'], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.pipe(out, { end: false });
  child.stderr.pipe(out, { end: false });
  /** @type {Promise<number | null>} */
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : null))));
  let gone = false;
  exited.then(() => { gone = true; });

  const stop = async () => {
    if (!gone) {
      log('stopping the stack (SIGINT)');
      try { process.kill(child.pid ?? 0, 'SIGINT'); } catch { /* gone */ }
      const timer = new Promise((r) => setTimeout(() => r('timeout'), 30_000));
      if ((await Promise.race([exited, timer])) === 'timeout') {
        log('run.sh did not stop within 30 s: killing its process group');
        try { process.kill(-(child.pid ?? 0), 'SIGKILL'); } catch { /* gone */ }
        await exited;
      }
    }
    out.end();
    if (!process.env.E2E_KEEP_HOME) {
      await dropDatabase(dataHome, log);
      await rm(home, { recursive: true, force: true });
    }
  };

  try {
    // The first run builds five services: give it time, but fail fast if run.sh dies.
    await until(async () => {
      if (gone) throw new Error(`run.sh exited; see ${logPath}`);
      const res = await fetch(`${baseURL}/health`, { signal: AbortSignal.timeout(2000) });
      return res.ok;
    }, { timeoutMs: Number(process.env.E2E_STACK_TIMEOUT_MS || 300_000), what: `${baseURL}/health`, intervalMs: 250 });

    const config = await readFile(path.join(home, '.config', 'svc-code', 'config.yaml'), 'utf8');
    const token = /^api_token:\s*(\S+)\s*$/m.exec(config)?.[1];
    if (!token) throw new Error('no api_token in the config file');
    const pgEnv = await readFile(path.join(dataHome, 'postgres.env'), 'utf8');
    const databaseURL = /^DATABASE_URL=(.+)$/m.exec(pgEnv)?.[1] ?? '';

    const res = await fetch(`${baseURL}/api/app/provider-path/agent-sdk`, {
      method: 'PUT',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ path: fakeclaude }),
    });
    if (!res.ok) throw new Error(`PUT provider-path: ${res.status} ${await res.text()}`);
    log('stack ready');
    return { info: { baseURL, password, token, home, dataHome, chatPort: chat, databaseURL, fakeclaude }, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * Drops the database and the two roles provision.sh made for this data home
 * (svc_code_<h>, svc_readonly_<h>: one set per data home, so every run would
 * leave its own behind). Only names of that form are touched; a failure is
 * reported, not fatal.
 * @param {string} dataHome
 * @param {(s: string) => void} log
 */
async function dropDatabase(dataHome, log) {
  let env;
  try {
    env = await readFile(path.join(dataHome, 'postgres.env'), 'utf8');
  } catch {
    return; // never provisioned
  }
  const url = (key) => {
    const v = new RegExp(`^${key}=(.+)$`, 'm').exec(env)?.[1];
    return v ? new URL(v) : null;
  };
  const owner = url('DATABASE_URL');
  const readonly = url('READONLY_DATABASE_URL');
  const names = [owner?.pathname.slice(1), owner?.username, readonly?.username];
  if (!names.every((n) => n && /^svc_(code|readonly)_[0-9a-f]{8}$/.test(n))) {
    log(`not dropping the database of ${dataHome}: unexpected names ${JSON.stringify(names)}`);
    return;
  }
  const [db, ownerRole, readonlyRole] = names;
  // One -c each: DROP DATABASE cannot run in the transaction of a multi-statement -c.
  const sql = [`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`, `DROP ROLE IF EXISTS ${ownerRole}`, `DROP ROLE IF EXISTS ${readonlyRole}`].flatMap((q) => ['-c', q]);
  const superURL = process.env.PROVISION_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
  try {
    await run('psql', [superURL, '-q', '-v', 'ON_ERROR_STOP=1', ...sql]);
  } catch (err) {
    try {
      if (process.getuid?.() !== 0) throw err;
      await run('runuser', ['-u', 'postgres', '--', 'psql', '-q', '-v', 'ON_ERROR_STOP=1', ...sql]);
    } catch (err2) {
      log(`could not drop database ${db}: ${err2 instanceof Error ? err2.message : err2}`);
    }
  }
}

/**
 * The pid of the process listening on 127.0.0.1:port (ss -tlnp), or 0.
 * @param {number} port
 */
export async function listenerPid(port) {
  const { stdout } = await run('ss', ['-Htlnp', `sport = :${port}`]);
  const m = /pid=(\d+)/.exec(stdout);
  return m ? Number(m[1]) : 0;
}

// `node lib/stack.mjs`: starts a stack and keeps it up until Ctrl-C, printing its
// coordinates as E2E_STACK=<json> (run.mjs and uibench reuse a stack given so),
// for working on the tests without a stack start per run.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { info, stop } = await startStack({ artifacts: path.join(ROOT, 'web/e2e/artifacts') });
  process.stdout.write(`E2E_STACK='${JSON.stringify(info)}'\n`);
  const end = async () => { await stop(); process.exit(0); };
  process.on('SIGINT', end);
  process.on('SIGTERM', end);
}
