/**
 * The human at a terminal, for tests: an approver key store in the human's configuration
 * directory, and `continuity` commands run on a pseudo-terminal (Python's `pty`) with the
 * passphrase typed when the prompt appears, as a person would. The agent in an attack test has
 * neither: it runs `continuity` with no controlling terminal, or on its own pseudo-terminal
 * without the passphrase.
 */
import { createPrivateKey } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  approverDir,
  certify,
  generateKey,
  keyStoreFiles,
  writeKeyStore,
} from '../../src/authority/key-store.js';
import { ensureSystemTools } from './peers.js';
import { type Run, run } from './processes.js';

/** The human's approver passphrase in every test world. */
export const HUMAN_PASSPHRASE = 'correct horse battery staple';

const HELPER = join(dirname(fileURLToPath(import.meta.url)), 'human-at-tty.py');
/** The CLI, as the human runs it. */
const CLI = fileURLToPath(new URL('../../bin/continuity.js', import.meta.url));

/** Python 3 runs the pseudo-terminal; installed by the set-up when missing. */
export function ensureTerminalTools(): Promise<void> {
  return ensureSystemTools([{ command: 'python3', debianPackage: 'python3' }]);
}

/**
 * The human's environment with an approver key store: `XDG_CONFIG_HOME` (made beside the state
 * directory when `env` has none) holds a key made under {@link HUMAN_PASSPHRASE}. Made here
 * without a terminal because it is the set-up, not the behaviour under test (`key init` itself is
 * tested through the terminal).
 */
export function withApproverKey(env: NodeJS.ProcessEnv, base?: string): NodeJS.ProcessEnv {
  const configHome =
    env.XDG_CONFIG_HOME ?? (base !== undefined ? join(base, 'human-config') : suiteConfigHome());
  const out = { ...env, XDG_CONFIG_HOME: configHome };
  ensureKeyStore(out);
  return out;
}

let suiteHome: string | undefined;
/** One human configuration directory per test process (removed at exit), for suites whose serve trusts it. */
function suiteConfigHome(): string {
  if (!suiteHome) {
    suiteHome = mkdtempSync(join(tmpdir(), 'continuity-human-'));
    const home = suiteHome;
    process.on('exit', () => rmSync(home, { recursive: true, force: true }));
  }
  return suiteHome;
}

/**
 * The public key file of this test process's human (made on first use): for a `continuity serve`
 * that must trust the approvals the human signs through {@link withApproverKey} without a base.
 */
export function suiteApproverPublicKey(): string {
  const env = withApproverKey({});
  return keyStoreFiles(approverDir(env)).publicKey;
}

function ensureKeyStore(out: NodeJS.ProcessEnv): void {
  const dir = approverDir(out);
  if (!existsSync(keyStoreFiles(dir).privateKey)) {
    const made = generateKey(HUMAN_PASSPHRASE);
    const key = createPrivateKey({ key: made.privatePem, passphrase: HUMAN_PASSPHRASE });
    writeKeyStore(dir, made.privatePem, made.publicPem, [
      certify(made.publicHex, new Date().toISOString(), null, key),
    ]);
  }
}

/**
 * Runs `command args` on a new pseudo-terminal (its controlling terminal), typing each of
 * `answers` at each prompt. The transcript is `stdout`; the exit code is the command's.
 */
export function atTerminal(
  command: string,
  args: string[],
  options: { env: NodeJS.ProcessEnv; cwd: string; answers?: string[] },
): Promise<Run> {
  return run('python3', [HELPER, JSON.stringify(options.answers ?? [HUMAN_PASSPHRASE]), command, ...args], {
    env: options.env,
    cwd: options.cwd,
  });
}

/**
 * The human writes `config` as the project's `.continuity/config.json` and seals it at a terminal
 * (`continuity config seal`, passphrase typed), so its relaxations are obeyed. `world.shellEnv`
 * gains the approver key store. Returns the command's transcript.
 */
export async function humanSealsConfig(
  world: { project: string; shellEnv: NodeJS.ProcessEnv },
  config?: unknown,
): Promise<string> {
  if (config !== undefined) {
    mkdirSync(join(world.project, '.continuity'), { recursive: true });
    writeFileSync(join(world.project, '.continuity', 'config.json'), JSON.stringify(config));
  }
  await ensureTerminalTools();
  const env = withApproverKey(world.shellEnv, dirname(world.project));
  world.shellEnv = env;
  const r = await atTerminal(process.execPath, [CLI, 'config', 'seal'], { env, cwd: world.project });
  if (r.status !== 0) throw new Error(`continuity config seal exited ${r.status}: ${r.stdout}`);
  return r.stdout;
}
