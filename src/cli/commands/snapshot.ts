/**
 * `continuity snapshot`: digests decision values and appends a pre or post snapshot to the ledger;
 * prints the boundary id. The values are dropped after digesting. See docs/ledger.md.
 */
import { randomUUID } from 'node:crypto';
import { type Command, Option } from 'commander';
import { InputError } from '../../decision/problems.js';
import { loadDigestKey } from '../../digest/key-file.js';
import { captureSnapshot } from '../../ledger/capture.js';
import { readLatestBoundary } from '../../ledger/latest.js';
import { Ledger } from '../../ledger/ledger.js';
import { PHASES, type Phase, TRIGGERS, type Trigger } from '../../ledger/types.js';
import { readJsonInput } from '../io.js';
import {
  addLedgerOptions,
  chainKeyOf,
  checkIdFlags,
  type LedgerFlags,
  ledgerPathOf,
} from './ledger-options.js';

interface SnapshotFlags extends LedgerFlags {
  session: string;
  phase: Phase;
  boundary?: string;
  runtime?: string;
  trigger?: Trigger;
  decisions: string;
}

/** Registers `continuity snapshot`. */
export function registerSnapshot(program: Command): void {
  const cmd = program
    .command('snapshot')
    .description(
      'digest task decisions and append a pre or post compaction snapshot to the ledger; prints the boundary id',
    )
    .requiredOption('--session <id>', 'session id (an opaque identifier)')
    .addOption(
      new Option('--phase <phase>', 'which side of the compaction').choices(PHASES).makeOptionMandatory(),
    )
    .option(
      '--boundary <id>',
      "boundary id (pre: default a new UUID; post: default the session's latest boundary)",
    )
    .option('--runtime <name>', 'agent runtime, e.g. claude-code')
    .addOption(new Option('--trigger <trigger>', 'what started the compaction').choices(TRIGGERS))
    .requiredOption(
      '--decisions <file>',
      'JSON file (- for stdin): name → value, or name → {value, revision?, observedAt?, source?, sensitive?}',
    );
  addLedgerOptions(cmd).action(async (opts: SnapshotFlags) => {
    checkIdFlags('snapshot', {
      '--session': opts.session,
      '--boundary': opts.boundary,
      '--runtime': opts.runtime,
    });
    const source = opts.decisions === '-' ? '(stdin)' : opts.decisions;
    const decisions = readJsonInput(opts.decisions);
    const path = ledgerPathOf(opts);
    const chainKey = chainKeyOf(opts);
    let boundaryId = opts.boundary;
    const latest = readLatestBoundary(path, opts.session);
    if (opts.phase === 'pre') {
      boundaryId ??= randomUUID();
    } else if (boundaryId === undefined) {
      if (!latest) {
        throw new InputError('snapshot', [
          {
            path: '--boundary',
            message: `session has no boundary in ${path} yet; record the pre snapshot first, or pass --boundary`,
          },
        ]);
      }
      boundaryId = latest.boundaryId;
    }
    const record = captureSnapshot({
      sessionId: opts.session,
      phase: opts.phase,
      boundaryId,
      runtime: opts.runtime,
      trigger: opts.trigger,
      decisions,
      source,
      nowMs: Date.now(),
      digestKey: loadDigestKey(),
      // A post snapshot digests each decision with the scheme its pre snapshot used.
      inherit: opts.phase === 'post' && latest?.boundaryId === boundaryId ? latest.pre : null,
    });
    const ledger = Ledger.open(path, { chainKey });
    try {
      await ledger.append(record);
    } finally {
      await ledger.close();
    }
    process.stdout.write(`${boundaryId}\n`);
  });
}
