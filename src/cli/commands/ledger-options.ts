/**
 * Options shared by the ledger commands (`snapshot`, `approve`, `status`, `ledger verify`):
 * where the ledger is and which chain key seals it, and the checks of identifiers given as flags.
 */

import type { Command } from 'commander';
import { approverRootsOf } from '../../authority/patterns.js';
import { InputError, type InputProblem } from '../../decision/problems.js';
import { checkOpaqueId } from '../../ledger/capture.js';
import type { ChainKey } from '../../ledger/chain.js';
import { loadChainKey } from '../../ledger/chain-key.js';
import { checkString } from '../../ledger/guard.js';
import { resolveLedgerPath } from '../../ledger/paths.js';

/** The flags every ledger command accepts. */
export interface LedgerFlags {
  ledger?: string;
  chainKeyFile?: string;
}

/** Adds `--ledger PATH` and `--chain-key-file FILE` to `cmd`. */
export function addLedgerOptions(cmd: Command): Command {
  return cmd
    .option(
      '--ledger <path>',
      'ledger file (default: CONTINUITY_LEDGER, else $XDG_STATE_HOME/agent-continuity/ledger.jsonl, else ~/.local/state/agent-continuity/ledger.jsonl)',
    )
    .option(
      '--chain-key-file <file>',
      'chain key file (0600) for an HMAC chain (default: CONTINUITY_CHAIN_KEY_FILE; none: plain SHA-256)',
    );
}

/** The ledger path the flags and the environment select. */
export function ledgerPathOf(flags: LedgerFlags): string {
  return resolveLedgerPath({ flag: flags.ledger });
}

/**
 * The approver keys this run trusts as the first of a ledger's key chain
 * (`CONTINUITY_APPROVER_KEYS`), or none: the ledger's own pin decides.
 */
export function approverRootsOfEnv(): readonly string[] {
  return approverRootsOf(process.env.CONTINUITY_APPROVER_KEYS);
}

/** The chain key the flags and the environment select, or undefined for a plain chain. */
export function chainKeyOf(flags: LedgerFlags): ChainKey | undefined {
  return loadChainKey({ file: flags.chainKeyFile });
}

/**
 * Checks identifiers given as flags (`--session` …) with the opaque-id rule and the leak guard.
 * Throws one {@link InputError} naming every bad flag; undefined values are skipped.
 */
export function checkIdFlags(command: string, ids: Record<string, string | undefined>): void {
  const problems: InputProblem[] = [];
  for (const [flag, value] of Object.entries(ids)) {
    if (value === undefined) continue;
    const p = checkOpaqueId(flag, value);
    if (p) {
      problems.push(p);
      continue;
    }
    const leak = checkString(value);
    if (leak) problems.push({ path: flag, message: leak.message });
  }
  if (problems.length > 0) throw new InputError(command, problems);
}
