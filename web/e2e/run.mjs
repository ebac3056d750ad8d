// @ts-check
// Runs the browser end-to-end tests: starts one stack (lib/stack.mjs), runs the
// test files with node's test runner against it, two files at a time, and stops
// the stack whatever happened. `make ui-e2e` runs this.
//
//   node run.mjs [test files...]   default: tests/*.test.mjs two at a time, then
//                                  tests/serial/*.test.mjs one at a time
//
// Environment: E2E_ARTIFACTS (default ./artifacts: stack log and screenshots),
// E2E_HOME_ROOT (where the temporary HOME is made, default the system's tmp),
// E2E_KEEP_HOME=1 (keep it afterwards), E2E_CONCURRENCY (default 2),
// E2E_CHROMIUM (default /usr/bin/chromium), E2E_STACK (use that running stack).
import { spawn } from 'node:child_process';
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startStack } from './lib/stack.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const artifacts = path.resolve(process.env.E2E_ARTIFACTS || path.join(here, 'artifacts'));
for (const d of ['screens', 'failures']) await rm(path.join(artifacts, d), { recursive: true, force: true });

/** The *.test.mjs files of a folder. */
async function testsIn(dir) {
  return (await readdir(dir)).filter((f) => f.endsWith('.test.mjs')).sort().map((f) => path.join(dir, f));
}
// tests/ run two files at a time; tests/serial/ (which disturb the stack, e.g. by
// killing chat) run afterwards, one at a time.
let phases = [
  { files: await testsIn(path.join(here, 'tests')), concurrency: Number(process.env.E2E_CONCURRENCY || 2) },
  { files: await testsIn(path.join(here, 'tests', 'serial')), concurrency: 1 },
];
if (process.argv.length > 2) {
  phases = [{ files: process.argv.slice(2).map((f) => path.resolve(f)), concurrency: 1 }];
}

// A stack given in E2E_STACK (from `node lib/stack.mjs`) is used as it is.
const { info, stop } = process.env.E2E_STACK
  ? { info: JSON.parse(process.env.E2E_STACK), stop: async () => {} }
  : await startStack({ artifacts });
let stopping = false;
const onSignal = async () => {
  if (stopping) return;
  stopping = true;
  await stop();
  process.exit(130);
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

/** The spec reporter's "failing tests" sections of each phase, repeated at the very end. */
const failures = [];

/**
 * Runs node's test runner on files; resolves to its exit code. Its output is
 * passed through as it comes, and its "failing tests" section kept.
 * @param {string[]} files
 * @param {number} concurrency
 * @returns {Promise<number>}
 */
function runTests(files, concurrency) {
  const child = spawn(process.execPath, ['--test', `--test-concurrency=${concurrency}`, '--test-reporter=spec', ...files], {
    cwd: here,
    stdio: ['inherit', 'pipe', 'inherit'],
    env: { ...process.env, E2E_STACK: JSON.stringify(info), E2E_ARTIFACTS: artifacts },
  });
  let out = '';
  child.stdout.on('data', (chunk) => {
    process.stdout.write(chunk);
    out += chunk;
  });
  return new Promise((resolve) =>
    child.on('close', (c) => {
      const at = out.indexOf('✖ failing tests:');
      if (at >= 0) failures.push(out.slice(at).trimEnd());
      resolve(c ?? 1);
    }),
  );
}

let code = 0;
try {
  for (const { files, concurrency } of phases) {
    if (files.length > 0 && (await runTests(files, concurrency)) !== 0) code = 1;
  }
} catch (err) {
  console.error(err);
  code = 1;
} finally {
  if (!stopping) await stop();
}
// A failure of the first phase is otherwise far above the end of the log.
if (failures.length > 0) console.log(`\ne2e: the failing tests again, with their errors:\n${failures.join('\n\n')}\n`);
console.log(`e2e: screenshots and the stack's log are in ${artifacts}`);
process.exit(code);
