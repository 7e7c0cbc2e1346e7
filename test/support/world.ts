/**
 * The runtime-neutral half of every end-to-end world: a state directory with the ledger, a digest
 * and a chain key (0600), `continuity` on the agent's PATH as `npm link` puts it there, the
 * `CONTINUITY_*` variables pointing at them, the human's `continuity` in the project, and the
 * readers and disposal every world has. Each runtime's harness adds its binary, its home and
 * configuration, and its `init`.
 */
import { cpSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { atTerminal, withApproverKey } from './human.js';
import { type Run, run } from './processes.js';
import { bytesUnder, readLedger, writeKey } from './task.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** This checkout's `bin/continuity.js`. */
export const BIN = join(ROOT, 'bin', 'continuity.js');

/**
 * Installs this checkout into `project` as `npm install` puts a dependency there:
 * `node_modules/agent-continuity` (a link to the checkout, or with `copy` a copy of its `bin/`,
 * `dist/` and `package.json` whose own `node_modules` links to the checkout's, so that the
 * package's files are inside the project as npm leaves them) and `node_modules/.bin/continuity`
 * (a relative link to its bin).
 */
export function linkPackageInto(project: string, options: { copy?: boolean } = {}): void {
  mkdirSync(join(project, 'node_modules', '.bin'), { recursive: true });
  const pkg = join(project, 'node_modules', 'agent-continuity');
  if (options.copy) {
    for (const part of ['bin', 'dist', 'package.json'])
      cpSync(join(ROOT, part), join(pkg, part), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules'), join(pkg, 'node_modules'));
  } else symlinkSync(ROOT, pkg);
  symlinkSync('../agent-continuity/bin/continuity.js', join(project, 'node_modules', '.bin', 'continuity'));
}

/** The digest and chain key files of a world. */
export interface WorldKeys {
  digest: string;
  chain: string;
}

/** Where a world keeps its evidence, and the variables that say so. */
export interface EvidenceDirs {
  state: string;
  ledger: string;
  keys: WorldKeys;
  /** The directory with the `continuity` shim, to put first on the agent's PATH. */
  binDir: string;
  /** `CONTINUITY_STATE_DIR`, `_LEDGER`, `_DIGEST_KEY_FILE`, `_CHAIN_KEY_FILE`, `_OTLP_ENDPOINT`, `_OTLP_TIMEOUT_MS`. */
  continuityEnv: Record<string, string>;
}

/**
 * Creates the evidence directories under `root` (0700), the keys and the `continuity` shim; the
 * spans go to `otlpEndpoint`. With `shared`, another world's state directory and keys are used
 * (two sessions in one project), and no keys are written.
 */
export function evidenceDirs(
  root: string,
  otlpEndpoint: string,
  shared?: { state: string; keys: WorldKeys },
): EvidenceDirs {
  const state = shared?.state ?? join(root, 'state');
  const ledger = join(state, 'ledger.jsonl');
  const keysDir = join(root, 'keys');
  const binDir = join(root, 'bin');
  for (const d of [state, keysDir, binDir]) mkdirSync(d, { recursive: true, mode: 0o700 });
  const keys = shared?.keys ?? { digest: join(keysDir, 'digest.key'), chain: join(keysDir, 'chain.key') };
  if (!shared) {
    writeKey(keys.digest);
    writeKey(keys.chain);
  }
  // A link to this checkout's bin, as `npm link` or a global install puts it on PATH: the gate's
  // restatement exemption trusts `continuity` only when it resolves to this package's binary.
  symlinkSync(BIN, join(binDir, 'continuity'));
  return {
    state,
    ledger,
    keys,
    binDir,
    continuityEnv: {
      CONTINUITY_STATE_DIR: state,
      CONTINUITY_LEDGER: ledger,
      CONTINUITY_DIGEST_KEY_FILE: keys.digest,
      CONTINUITY_CHAIN_KEY_FILE: keys.chain,
      CONTINUITY_OTLP_ENDPOINT: otlpEndpoint,
      CONTINUITY_OTLP_TIMEOUT_MS: '3000',
    },
  };
}

/** `continuity …` in `project`, as the human runs it (with `humanEnv`, unless `env` says otherwise). */
export function continuityCli(
  project: string,
  humanEnv: NodeJS.ProcessEnv,
): (args: string[], input?: string, env?: NodeJS.ProcessEnv) => Promise<Run> {
  return (args, input, env = humanEnv) =>
    // An approval or a seal is signed with the human's key, its passphrase typed at a terminal (./human.ts).
    args[0] === 'approve' || ((args[0] === 'task' || args[0] === 'config') && args[1] === 'seal')
      ? atTerminal(process.execPath, [BIN, ...args], {
          // This process's human (../support/human.ts), whose key the e2e suites' serve trusts.
          env: withApproverKey(env),
          cwd: project,
        })
      : run(process.execPath, [BIN, ...args], {
          env,
          cwd: project,
          ...(input !== undefined ? { input } : {}),
        });
}

/** What every world reads back, and its disposal. */
export interface WorldFiles {
  /** The ledger's records, in order. */
  ledgerRecords(): Array<Record<string, unknown>>;
  /** Every byte the adapter and the ledger wrote under the state directory. */
  stateBytes(): Buffer;
  /** The path of a project file. */
  file(rel: string): string;
  /** Removes the world (`CONTINUITY_E2E_KEEP=1` keeps it to look at). */
  dispose(): void;
}

/** The {@link WorldFiles} of a world rooted at `root`. */
export function worldFiles(
  root: string,
  project: string,
  dirs: Pick<EvidenceDirs, 'state' | 'ledger'>,
): WorldFiles {
  return {
    ledgerRecords: () => readLedger(dirs.ledger),
    stateBytes: () => bytesUnder(dirs.state),
    file: (rel) => join(project, rel),
    dispose: () => {
      if (process.env.CONTINUITY_E2E_KEEP !== '1') rmSync(root, { recursive: true, force: true });
    },
  };
}
