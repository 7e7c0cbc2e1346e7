/**
 * `continuity ledger verify`: checks every record of the ledger and its hash chain. Exit 0 with a
 * one-line summary when intact; exit 1 naming the first bad seq and why when not. See
 * docs/ledger.md.
 */
import { basename } from 'node:path';
import type { Command } from 'commander';
import { auditApprovals } from '../../ledger/approval-audit.js';
import { sidecarPaths } from '../../ledger/paths.js';
import { type VerifyResult, verifyLedger } from '../../ledger/verify.js';
import { CliError, EXIT } from '../exit-codes.js';
import {
  addLedgerOptions,
  approverRootsOfEnv,
  chainKeyOf,
  type LedgerFlags,
  ledgerPathOf,
} from './ledger-options.js';

interface VerifyFlags extends LedgerFlags {
  json?: boolean;
}

/** Registers `continuity ledger` and its subcommand `verify`. */
export function registerLedger(program: Command): void {
  const ledger = program.command('ledger').description('inspect the continuity ledger');
  const verify = ledger
    .command('verify')
    .description(
      'check every record, the hash chain and the head: exit 0 when intact, 1 naming the first bad seq and why (edited, removed, reordered, duplicated, torn, invalid, unkeyed, head), 3 when it cannot be checked',
    )
    .option(
      '--json',
      'print the result as one JSON document on stdout, whatever it is: intact, the first bad seq and why, or why the ledger could not be checked',
    );
  addLedgerOptions(verify).action((opts: VerifyFlags) => {
    const path = ledgerPathOf(opts);
    const json = (doc: Record<string, unknown>) => {
      if (opts.json) process.stdout.write(`${JSON.stringify({ ledger: path, ...doc })}\n`);
    };
    let result: VerifyResult;
    try {
      result = verifyLedger(path, { chainKey: chainKeyOf(opts) });
    } catch (e) {
      // Could not be checked (no ledger, a key missing or unusable, an unreadable file): exit 3.
      const message = (e as Error).message;
      json({ ok: false, error: message });
      throw new CliError(message, EXIT.environment);
    }
    if (!result.ok) {
      json(result);
      process.stderr.write(
        `continuity: ledger ${path}: seq ${result.seq}: ${result.why} (line ${result.line}): ${result.message}\n`,
      );
      process.exitCode = EXIT.checkFailed;
      return;
    }
    const audit = auditApprovals(path, approverRootsOfEnv());
    // A key chain that does not hold is evidence of tampering: the check fails.
    if (audit.keyChanged !== undefined) process.exitCode = EXIT.checkFailed;
    if (opts.json) {
      json({ ...result, approvals: audit });
      return;
    }
    const range =
      result.records === 0 ? 'no records' : `${result.records} records (seq 1..${result.lastSeq})`;
    const q =
      result.quarantined > 0
        ? `; ${result.quarantined} torn tail${result.quarantined === 1 ? '' : 's'} quarantined earlier in ${sidecarPaths(path).quarantine}`
        : '';
    const head =
      result.head === 'absent' && result.records > 0
        ? `; no head file yet (${basename(sidecarPaths(path).head)}), so a removed tail cannot be checked until the next append writes one`
        : '';
    process.stdout.write(`ledger ${path}: intact, ${range}, chain ${result.scheme}${q}${head}\n`);
    const notCounted = Object.values(audit.attempts).reduce((a, b) => a + b, 0);
    if (audit.signed + notCounted > 0) {
      const why = Object.entries(audit.attempts)
        .filter(([, n]) => n > 0)
        .map(([r, n]) => `${r} ${n}`)
        .join(', ');
      process.stdout.write(
        `approvals: ${audit.signed} signed by the approver key${notCounted > 0 ? `; ${notCounted} approval${notCounted === 1 ? '' : 's'} that do${notCounted === 1 ? 'es' : ''} not count (${why}): attempts without the human's key, or approvals recorded before approvals were signed (docs/security.md)` : ''}\n`,
      );
    }
    if (audit.keyChanged !== undefined) {
      process.stderr.write(`continuity: ledger ${path}: approver key: ${audit.keyChanged}\n`);
    }
  });
}
