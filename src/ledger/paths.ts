/**
 * Where the ledger and its side files live. The default is the user's state directory, outside
 * any repository working tree, so the record survives the conversation and is never committed.
 */
import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { assertRealDir, onFile } from './files.js';
import { defaultStateDir } from './state-home.js';
import { DIR_MODE, LEDGER_ENV } from './types.js';

/** How the ledger path is chosen. */
export interface LedgerPathOptions {
  /** `--ledger PATH`; wins over everything. */
  flag?: string | undefined;
  /** Environment to read `CONTINUITY_LEDGER`, `XDG_STATE_HOME` and `HOME` from. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
}

/** The ledger file name inside the default state directory. */
export const DEFAULT_LEDGER_FILE = 'ledger.jsonl';
export { defaultStateDir, STATE_DIR_NAME } from './state-home.js';

/**
 * Resolves the ledger path: `flag` > `CONTINUITY_LEDGER` > `$XDG_STATE_HOME/agent-continuity/ledger.jsonl`
 * (only when `XDG_STATE_HOME` is an absolute path: the XDG specification says relative values
 * are ignored) > `~/.local/state/agent-continuity/ledger.jsonl` (with `HOME` likewise only when
 * absolute). Always returns an absolute path; the flag and `CONTINUITY_LEDGER`, named by the user,
 * are resolved against the working directory.
 */
export function resolveLedgerPath(options: LedgerPathOptions = {}): string {
  const env = options.env ?? process.env;
  if (options.flag) return resolve(options.flag);
  if (env[LEDGER_ENV]) return resolve(env[LEDGER_ENV]);
  return join(defaultStateDir(env), DEFAULT_LEDGER_FILE);
}

/** The files kept beside a ledger. */
export interface LedgerSidecars {
  /** The exclusive lock file: `<ledger>.lock`. */
  lock: string;
  /** Torn tails moved aside on open: `<ledger>.quarantine`. */
  quarantine: string;
  /** The last record appended (seq, end, hash), so a removed tail is caught: `<ledger>.head`. */
  head: string;
  /** The per-session index (a rebuildable cache): `<ledger>.index/`. */
  indexDir: string;
}

/** The side files of the ledger at `ledgerPath`. */
export function sidecarPaths(ledgerPath: string): LedgerSidecars {
  return {
    lock: `${ledgerPath}.lock`,
    quarantine: `${ledgerPath}.quarantine`,
    head: `${ledgerPath}.head`,
    indexDir: `${ledgerPath}.index`,
  };
}

/**
 * Creates the ledger's directory (and missing parents) with mode 0700. Directories that already
 * exist keep their mode: the ledger never changes the permissions of a directory it did not
 * create (it could be a user's project folder). Refuses a directory that is a symbolic link.
 */
export function ensureLedgerDir(ledgerPath: string): void {
  const dir = dirname(ledgerPath);
  assertRealDir(dir);
  onFile(dir, 'create the directory', () => mkdirSync(dir, { recursive: true, mode: DIR_MODE }));
}
