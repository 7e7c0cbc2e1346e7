/**
 * `continuity snapshot`: digests decision values and appends a pre or post snapshot to the ledger;
 * prints the boundary id. The values are dropped after digesting. See docs/ledger.md.
 *
 * With an endpoint configured (`--otlp-endpoint`, `CONTINUITY_OTLP_ENDPOINT`) it then exports the
 * snapshot as a `continuity.compaction.pre` / `.post` span (digests only), in the boundary's trace, the
 * post span linked to the pre span; see `record-export.ts`.
 */
import { randomUUID } from 'node:crypto';
import { type Command, Option } from 'commander';
import { InputError } from '../../decision/problems.js';
import { loadDigestKey } from '../../digest/key-file.js';
import { compactionSpan } from '../../export/ledger-spans.js';
import { nowNs } from '../../export/spans.js';
import { captureSnapshot } from '../../ledger/capture.js';
import { readBoundaryIdsOf, readLatestBoundary } from '../../ledger/latest.js';
import { Ledger } from '../../ledger/ledger.js';
import { PHASES, type Phase, TRIGGERS, type Trigger } from '../../ledger/types.js';
import { readJsonInput } from '../io.js';
import {
  addLedgerOptions,
  approverRootsOfEnv,
  chainKeyOf,
  checkIdFlags,
  type LedgerFlags,
  ledgerPathOf,
} from './ledger-options.js';
import { addExportOptions, checkExportFlags, type ExportFlags, exportRecorded } from './record-export.js';

interface SnapshotFlags extends LedgerFlags, ExportFlags {
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
      "boundary id (pre: default a new UUID; post: one of the session's boundaries, default its latest)",
    )
    .option('--runtime <name>', 'agent runtime, e.g. claude-code')
    .addOption(new Option('--trigger <trigger>', 'what started the compaction').choices(TRIGGERS))
    .requiredOption(
      '--decisions <file>',
      'JSON file (- for stdin): name → value, or name → {value, revision?, observedAt?, source?, sensitive?}',
    );
  addExportOptions(addLedgerOptions(cmd)).action(async (opts: SnapshotFlags) => {
    const startNs = nowNs();
    checkIdFlags('snapshot', {
      '--session': opts.session,
      '--boundary': opts.boundary,
      '--runtime': opts.runtime,
    });
    checkExportFlags('snapshot', opts);
    const source = opts.decisions === '-' ? '(stdin)' : opts.decisions;
    const decisions = readJsonInput(opts.decisions);
    const path = ledgerPathOf(opts);
    const chainKey = chainKeyOf(opts);
    let boundaryId = opts.boundary;
    const latest = readLatestBoundary(path, opts.session, { approverRoots: approverRootsOfEnv() });
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
    } else if (boundaryId !== latest?.boundaryId && !readBoundaryIdsOf(path, opts.session).has(boundaryId)) {
      // A post snapshot for a boundary nobody opened would open one (a typo), and hide the
      // session's real boundary in `status`.
      throw new InputError('snapshot', [
        {
          path: '--boundary',
          message: latest
            ? `session has no boundary with this id in ${path} (its latest is ${latest.boundaryId}); omit --boundary to attach the post snapshot to the latest boundary`
            : `session has no boundary in ${path} yet; record the pre snapshot first`,
        },
      ]);
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
    let seq: number;
    try {
      seq = (await ledger.append(record)).seq;
    } finally {
      await ledger.close();
    }
    process.stdout.write(`${boundaryId}\n`);

    // Recorded: from here on nothing changes the exit code.
    const same = latest?.boundaryId === boundaryId ? latest : null;
    const runtime = record.runtime ?? same?.runtime;
    const trigger = record.trigger ?? same?.trigger;
    const span = compactionSpan(
      opts.phase,
      {
        sessionId: record.sessionId,
        capturedAt: record.capturedAt,
        normalizerVersion: record.normalizerVersion,
        decisions: record.decisions,
      },
      {
        boundaryId,
        ...(runtime !== undefined && { runtime }),
        ...(trigger !== undefined && { trigger }),
        ...(opts.phase === 'post' && same?.compactedAt !== undefined && { compactedAt: same.compactedAt }),
      },
      {
        startNs,
        endNs: nowNs(),
        // The first pre of a boundary is the span the post links to. A re-capture (another pre for
        // the same boundary) and every post get their own span, derived from the ledger seq, so
        // a processor does not drop them as retries of an earlier span.
        ...((opts.phase === 'post' || same?.pre) && { part: `${opts.phase}-${seq}` }),
      },
    );
    await exportRecorded([span], opts, path);
  });
}
