// @ts-check
// The stack's API token as the config file holds it now: the settings tests
// revoke the token and change the password (tests/serial/), after which the
// token given in E2E_STACK is void and the config file's api_token line is
// the one that works.
import { readFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * @param {string} home the stack's HOME
 * @returns {Promise<string | null>}
 */
export async function configToken(home) {
  try {
    const config = await readFile(path.join(home, '.config', 'svc-code', 'config.yaml'), 'utf8');
    return /^api_token:\s*(\S+)\s*$/m.exec(config)?.[1] ?? null;
  } catch {
    return null;
  }
}
