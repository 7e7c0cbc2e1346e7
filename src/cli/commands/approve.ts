/**
 * `continuity approve`: records a human's approval of one decision's change, from one value (or
 * digest) to another. Values are digested with the scheme the session's pre snapshot used for the
 * decision and dropped. See docs/ledger.md.
 *
 * The approval is signed with the approver key, unlocked by the passphrase the human types at the
 * controlling terminal for this approval (docs/security.md); without a terminal it refuses (exit 4)
 * and records nothing. The first use of a key on a ledger pins it there.
 *
 * With an endpoint configured (`--otlp-endpoint`, `CONTINUITY_OTLP_ENDPOINT`) it then exports an
 * `continuity.approval` span (digests and ids only) in the trace of the session's latest
 * boundary, its id derived from the ledger seq; see `record-export.ts`.
 */
import type { Command } from 'commander';
import { approvalStatement, signStatement } from '../../authority/signing.js';
import { type Approval, DecisionNameSchema, DigestSchema } from '../../decision/model.js';
import { InputError, type InputProblem } from '../../decision/problems.js';
import { loadDigestKey } from '../../digest/key-file.js';
import { approvalSpan } from '../../export/ledger-spans.js';
import { type ApprovalSide, buildApproval } from '../../ledger/capture.js';
import type { BoundaryEvidence } from '../../ledger/evidence.js';
import { readLatestBoundary } from '../../ledger/latest.js';
import { Ledger } from '../../ledger/ledger.js';
import { atTerminal, certificateRecord, unlockForLedger } from './human.js';
import {
  addLedgerOptions,
  approverRootsOfEnv,
  chainKeyOf,
  checkIdFlags,
  type LedgerFlags,
  ledgerPathOf,
} from './ledger-options.js';
import { addExportOptions, checkExportFlags, type ExportFlags, exportRecorded } from './record-export.js';

interface ApproveFlags extends LedgerFlags, ExportFlags {
  session: string;
  decision: string;
  from?: string;
  fromDigest?: string;
  to?: string;
  toDigest?: string;
  ref: string;
  by: string;
  sensitive?: boolean;
}

/** A VALUE flag: JSON when it parses (`42`, `true`, `{"a":1}`, `"main"`), else the plain string. */
export function parseValueFlag(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function side(
  value: string | undefined,
  digest: string | undefined,
  name: 'from' | 'to',
  problems: InputProblem[],
): ApprovalSide {
  if ((value === undefined) === (digest === undefined)) {
    problems.push({
      path: `--${name}`,
      message: `give exactly one of --${name} VALUE or --${name}-digest D`,
    });
    return { digest: '' };
  }
  if (digest !== undefined) {
    const r = DigestSchema.safeParse(digest);
    if (!r.success)
      problems.push({ path: `--${name}-digest`, message: r.error.issues[0]?.message ?? 'bad digest' });
    return { digest };
  }
  return { value: parseValueFlag(value as string) };
}

function refuse(flag: string, message: string): never {
  throw new InputError('approve', [{ path: flag, message }]);
}

/**
 * An approval changes a decision a pre snapshot recorded: refuses (exit 2) an unknown session, a
 * latest boundary without a pre snapshot, and a decision that pre snapshot does not have.
 * Returns the pre snapshot's digest of the decision.
 */
function checkApprovable(latest: BoundaryEvidence | null, decision: string, path: string): string {
  if (!latest) {
    refuse(
      '--session',
      `no boundary of this session in ${path}: an approval changes a decision a pre snapshot recorded; check --session (and --ledger), or record the pre snapshot first with continuity snapshot --phase pre`,
    );
  }
  if (!latest.pre) {
    refuse(
      '--session',
      `the session's latest boundary ${latest.boundaryId} has no pre snapshot, so it has no recorded decision to approve a change of`,
    );
  }
  const digest = Object.hasOwn(latest.pre.decisions, decision)
    ? latest.pre.decisions[decision]?.digest
    : undefined;
  if (digest === undefined) {
    const names = Object.keys(latest.pre.decisions).sort().join(', ');
    refuse(
      '--decision',
      `not a decision of the pre snapshot of boundary ${latest.boundaryId} (it has: ${names}); give one of those names`,
    );
  }
  return digest;
}

/** Every digest an approved chain leads to from `start` for `decision`, `start` included. */
function reachable(start: string, approvals: readonly Approval[], decision: string): Set<string> {
  const seen = new Set([start]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const a of approvals) {
      if (a.decision === decision && seen.has(a.fromDigest) && !seen.has(a.toDigest)) {
        seen.add(a.toDigest);
        grew = true;
      }
    }
  }
  return seen;
}

/**
 * Refuses (exit 2) a change to the same digest, and a from digest that is neither the pre
 * snapshot's digest nor the end of an approved chain from it (approvals recorded after that pre
 * snapshot, the only ones that count for the boundary). Digests named in the message are the
 * ledger's, never one computed from a value given on the command line.
 */
function checkChange(
  from: string,
  to: string,
  preDigest: string,
  latest: BoundaryEvidence,
  decision: string,
): void {
  if (from === to) {
    refuse('--to', 'the same as --from: an approval records a change from one value to another');
  }
  const allowed = reachable(preDigest, latest.approvals, decision);
  if (!allowed.has(from)) {
    const ends = [...allowed].filter((d) => d !== preDigest);
    refuse(
      '--from',
      `neither the pre snapshot's digest of ${decision} (${preDigest}) nor the end of an approved chain from it${ends.length > 0 ? ` (${ends.join(', ')})` : ''}: give the value the pre snapshot recorded (or --from-digest with one of these digests)`,
    );
  }
}

/** Registers `continuity approve`. */
export function registerApprove(program: Command): void {
  const cmd = program
    .command('approve')
    .description("record a human's approval of a decision's change from one value (or digest) to another")
    .requiredOption('--session <id>', 'session id')
    .requiredOption('--decision <name>', 'decision name, e.g. scope')
    .option(
      '--from <value>',
      'the approved-from value (JSON if it parses, else a string); digested, never stored',
    )
    .option('--from-digest <digest>', 'the approved-from digest instead of a value')
    .option(
      '--to <value>',
      'the approved-to value (JSON if it parses, else a string); digested, never stored',
    )
    .option('--to-digest <digest>', 'the approved-to digest instead of a value')
    .requiredOption('--ref <ref>', 'approval reference (ticket, review or change id)')
    .requiredOption('--by <id>', 'who approved (an identifier, not a name with spaces)')
    .option(
      '--sensitive',
      "digest the values with the digest key (default: the scheme of the session's pre snapshot)",
    )
    .option('--no-sensitive', 'digest the values with plain SHA-256');
  addExportOptions(addLedgerOptions(cmd)).action(async (opts: ApproveFlags) => {
    checkIdFlags('approve', { '--session': opts.session, '--ref': opts.ref, '--by': opts.by });
    checkExportFlags('approve', opts);
    const problems: InputProblem[] = [];
    const name = DecisionNameSchema.safeParse(opts.decision);
    if (!name.success)
      problems.push({ path: '--decision', message: name.error.issues[0]?.message ?? 'bad name' });
    const from = side(opts.from, opts.fromDigest, 'from', problems);
    const to = side(opts.to, opts.toDigest, 'to', problems);
    if (problems.length > 0) throw new InputError('approve', problems);
    const path = ledgerPathOf(opts);
    const chainKey = chainKeyOf(opts);
    const latest = readLatestBoundary(path, opts.session, { approverRoots: approverRootsOfEnv() });
    const pre = checkApprovable(latest, opts.decision, path);
    const record = buildApproval({
      sessionId: opts.session,
      decision: opts.decision,
      from,
      to,
      approvalRef: opts.ref,
      approvedBy: opts.by,
      nowMs: Date.now(),
      sensitive: opts.sensitive,
      digestKey: loadDigestKey(),
      inherit: latest?.pre ?? null,
    });
    checkChange(record.fromDigest, record.toDigest, pre, latest!, opts.decision);
    const boundaryId = latest!.boundaryId;
    // The human: the passphrase typed at this terminal, for this approval, signs it.
    const signed = await atTerminal('approve', async (term) => {
      const key = await unlockForLedger(
        term,
        'approve',
        path,
        process.env,
        [
          `Approve a change of decision ${opts.decision}`,
          `  session  ${opts.session}`,
          `  boundary ${boundaryId}`,
          `  from     ${record.fromDigest}`,
          `  to       ${record.toDigest}`,
          `  ref ${opts.ref}, by ${opts.by}`,
        ].join('\n'),
      );
      const proof = { boundaryId, keyId: key.keyId };
      const signature = signStatement(
        approvalStatement({ ...record, ...proof, sessionId: opts.session }),
        key.privateKey,
      );
      return { key, record: { ...record, ...proof, signature } };
    });
    const ledger = Ledger.open(path, { chainKey });
    let seq: number;
    try {
      const stored = await ledger.appendBatch([
        ...signed.key.newCertificates.map(certificateRecord),
        signed.record,
      ]);
      seq = stored.at(-1)!.seq;
      signed.key.commitPin();
      process.stdout.write(
        `approval recorded: ${opts.decision} (ref ${opts.ref}), seq ${seq}, signed by ${signed.key.keyId}\n`,
      );
    } finally {
      await ledger.close();
    }
    // Recorded: from here on nothing changes the exit code.
    await exportRecorded([approvalSpan(opts.session, signed.record, seq, boundaryId)], opts, path);
  });
}
