/**
 * `continuity status`: the latest boundary of each session (or one) with its continuity state,
 * computed from the evidence by the core classifier every time, and the activity state beside
 * it. Read-only unless `--receipt`. See docs/ledger.md.
 */
import type { Command } from 'commander';
import { DEFAULT_GATED_TOOLS } from '../../adapters/claude-code/config.js';
import { loadConfig, resolveEnv } from '../../adapters/core/config.js';
import { CONFIG_CHANGED, configChangedWords, sealedConfig } from '../../adapters/core/config-seal.js';
import type { Classification } from '../../classify/classify.js';
import type { ChainKey } from '../../ledger/chain.js';
import type { ActivityEvidence, BoundaryEvidence } from '../../ledger/evidence.js';
import { readAllLatestBoundaries, readLatestActivity, readLatestBoundary } from '../../ledger/latest.js';
import { Ledger } from '../../ledger/ledger.js';
import { classificationRecord, classifyEvidence, receiptIsCurrent } from '../../ledger/receipt.js';
import { spotCheck } from '../../ledger/spot-check.js';
import { renderTable } from '../../report/table.js';
import {
  addLedgerOptions,
  approverRootsOfEnv,
  chainKeyOf,
  checkIdFlags,
  type LedgerFlags,
  ledgerPathOf,
} from './ledger-options.js';

interface StatusFlags extends LedgerFlags {
  session?: string;
  json?: boolean;
  receipt?: boolean;
}

interface Row {
  evidence: BoundaryEvidence;
  classification: Classification;
  activity: ActivityEvidence | null;
}

/** The JSON document `status --json` prints for one session. */
function rowJson(r: Row) {
  const e = r.evidence;
  return {
    sessionId: e.sessionId,
    boundaryId: e.boundaryId,
    runtime: e.runtime ?? null,
    trigger: e.trigger ?? null,
    compactedAt: e.compactedAt ?? null,
    state: r.classification.state,
    action: r.classification.action,
    reason: r.classification.reason,
    primaryDecision: r.classification.primaryDecision,
    decisions: r.classification.decisions,
    activity: r.activity ? { state: r.activity.state, at: r.activity.at } : null,
    evidence: {
      pre: e.seqs.pre,
      post: e.seqs.post,
      boundary: e.seqs.boundary,
      approvals: e.seqs.approvals,
      missing: e.evidenceMissing.map((m) => ({ seq: m.seq, phase: m.phase, reason: m.reason })),
      // Approvals that do not count (no valid signature by the pinned approver key): evidence of an attempt.
      approvalAttempts: e.approvalAttempts.map((a) => ({
        seq: a.seq,
        decision: a.decision,
        result: a.result,
        ...(a.keyId !== undefined && { keyId: a.keyId }),
      })),
      ...(e.approverKeyChanged !== undefined && { approverKeyChanged: e.approverKeyChanged }),
    },
  };
}

function evidenceCell(e: BoundaryEvidence): string {
  const side = (seq: number | null, phase: 'pre' | 'post') => {
    if (seq !== null) return `${phase}#${seq}`;
    const m = e.evidenceMissing.filter((x) => x.phase === phase).at(-1);
    return m ? `${phase}:${m.reason}` : `${phase}:none`;
  };
  const approvals = e.seqs.approvals.length > 0 ? ` approvals:${e.seqs.approvals.length}` : '';
  const attempts =
    e.approvalAttempts.length > 0 ? ` approval_attempts:${e.approvalAttempts.length} (not counted)` : '';
  const key = e.approverKeyChanged !== undefined ? ' approver_key_changed' : '';
  return `${side(e.seqs.pre, 'pre')} ${side(e.seqs.post, 'post')}${approvals}${attempts}${key}`;
}

/**
 * Warns on stderr, in one line, when the records shown or the ledger's tail do not verify (the
 * spot check: a few reads, never a scan), and says how to check every record.
 */
function warnUnlessSpotChecked(
  path: string,
  evidence: readonly BoundaryEvidence[],
  flags: LedgerFlags,
): void {
  let chainKey: ChainKey | undefined;
  try {
    chainKey = chainKeyOf(flags);
  } catch {
    // Without a usable key the links and the head are still checked; `ledger verify` reports the key.
  }
  const problem = spotCheck(
    path,
    evidence.flatMap((e) => e.locations ?? []),
    { chainKey },
  );
  if (problem) {
    process.stderr.write(
      `continuity: warning: ledger ${path} does not verify (seq ${problem.seq}: ${problem.why}: ${problem.message}); the states below may rest on altered evidence: run \`continuity ledger verify --ledger ${path}\` to check every record\n`,
    );
  }
}

/** The project's configuration when it relaxes the write gate: whether the human's seal holds. */
interface ConfigNote {
  file: string;
  sealed: boolean;
  relaxations: ReadonlyArray<{ setting: string; effect: string }>;
  /** Why the relaxations are not obeyed (`config_changed`), when they are not. */
  message?: string;
}

/**
 * The configuration of the project in the current directory, checked now against its seal, so
 * an unsealed relaxation is seen at once (the ledger records it only at the next compaction).
 * Named against Claude Code's gated tools, the longest list, as `config seal` does.
 */
function configNote(ledgerPath: string): ConfigNote | undefined {
  const env = resolveEnv({ ...process.env, CONTINUITY_LEDGER: ledgerPath });
  const { config } = loadConfig(process.cwd(), env, { runtime: 'cli', gatedTools: DEFAULT_GATED_TOOLS });
  const unsealed = config.unsealed;
  if (!unsealed) return undefined;
  const { check } = sealedConfig(config);
  const sealed = check?.kind === 'sealed';
  return {
    file: unsealed.label,
    sealed,
    relaxations: unsealed.relaxations,
    ...(!sealed && check && { message: configChangedWords(unsealed, check) }),
  };
}

/** Registers `continuity status`. */
export function registerStatus(program: Command): void {
  const cmd = program
    .command('status')
    .description(
      'show the latest compaction boundary per session with its continuity state (recomputed from the evidence) and activity',
    )
    .option('--session <id>', 'only this session')
    .option('--json', 'print a JSON document instead of a table')
    .option(
      '--receipt',
      'append a classification receipt for each boundary shown (skipped when one is current)',
    );
  addLedgerOptions(cmd).action(async (opts: StatusFlags) => {
    checkIdFlags('status', { '--session': opts.session });
    const path = ledgerPathOf(opts);
    let evidence: BoundaryEvidence[];
    if (opts.session !== undefined) {
      const one = readLatestBoundary(path, opts.session, { approverRoots: approverRootsOfEnv() });
      evidence = one ? [one] : [];
    } else {
      evidence = readAllLatestBoundaries(path, { approverRoots: approverRootsOfEnv() });
    }
    warnUnlessSpotChecked(path, evidence, opts);
    const rows: Row[] = evidence.map((e) => ({
      evidence: e,
      classification: classifyEvidence(e),
      activity: readLatestActivity(path, e.sessionId),
    }));
    if (opts.receipt && rows.length > 0) {
      const fresh = rows.filter((r) => !receiptIsCurrent(r.evidence, r.classification));
      if (fresh.length > 0) {
        const ledger = Ledger.open(path, { chainKey: chainKeyOf(opts) });
        try {
          const now = Date.now();
          await ledger.appendBatch(fresh.map((r) => classificationRecord(r.evidence, r.classification, now)));
        } finally {
          await ledger.close();
        }
      }
    }
    const configured = configNote(path);
    if (opts.json) {
      const doc = {
        ledger: path,
        sessions: rows.map(rowJson),
        ...(configured && {
          config: { ...configured, ...(!configured.sealed && { reason: CONFIG_CHANGED }) },
        }),
      };
      process.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
      return;
    }
    if (configured?.message) process.stdout.write(`configuration: ${configured.message}\n`);
    if (rows.length === 0) {
      process.stdout.write(
        opts.session !== undefined
          ? `no boundary recorded for session ${opts.session} in ${path}\n`
          : `no boundary recorded in ${path}\n`,
      );
      return;
    }
    const table = renderTable(
      ['session', 'boundary', 'state', 'action', 'decision', 'reason', 'activity', 'evidence'],
      rows.map((r) => [
        r.evidence.sessionId,
        r.evidence.boundaryId,
        r.classification.state,
        r.classification.action,
        r.classification.primaryDecision ?? '-',
        r.classification.reason,
        r.activity?.state ?? '-',
        evidenceCell(r.evidence),
      ]),
    );
    process.stdout.write(`${table}\n`);
  });
}
