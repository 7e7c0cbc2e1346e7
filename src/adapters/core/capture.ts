/**
 * Capture: task record → digests → (pending until a compaction confirms it) → ledger + span.
 * Never blocks and never throws into the agent: every failure becomes evidence missing.
 *
 * Why the pre capture waits for its confirmation before it reaches the ledger: a runtime's
 * pre-compaction event does not mean that a compaction happens (./boundary.ts). The digests are
 * taken at the pre event (so they are the decisions as they stood before compaction) and kept,
 * digests only, in the session's 0600 cache; the first signal that the compaction happened
 * appends the pre snapshot (with its original capture time) and the boundary record in one
 * batch, and exports the pre span. A pre that nothing confirms leaves no record and no span, so
 * neither the gate nor a span processor waits for a post observation that will never come.
 *
 * **An approved change carries forward.** When a human approved a decision's change (A→B, or a
 * chain A→B→C) in this session, the next pre snapshot holds the chain's end, not the task
 * record's value, as long as the task record still digests to the chain's start: restating B
 * after the next compaction is then `preserved`, and restating A is a change. Once the human
 * updates the task record itself (to B, or to anything else), the task record wins again. The
 * approval chain is the session's ledger approvals (a new session starts from the task record).
 */

import { matchesSeal, readSeal } from '../../authority/seal.js';
import { NO_KEYS, type TrustedKeys, trustedKeysOf } from '../../authority/trust.js';
import type { Approval, DecisionMap } from '../../decision/model.js';
import { compareCriticality } from '../../decision/names.js';
import { NORMALIZER_VERSION } from '../../decision/rules.js';
import { loadDigestKey } from '../../digest/key-file.js';
import { boundarySpanIds, type ExportSpan, timeNs } from '../../export/spans.js';
import { readApproverKeyRecords } from '../../ledger/latest.js';
import { evidenceMissingAttributes, snapshotAttributes } from '../../otel/attributes.js';
import { EVIDENCE_MISSING_REASONS, SPAN_COMPACTION_PRE } from '../../otel/semconv.js';
import type { TrackedBoundary } from './boundary.js';
import type { AdapterConfig } from './config.js';
import { openEvidence } from './evidence.js';
import type { PreCapture, StateDir } from './state.js';
import { digestTaskRecord, readTaskOutline } from './task-record.js';
import { markPreMissing } from './track.js';

/** Evidence-missing reason codes the adapters write besides the task record's. */
export const ADAPTER_EVIDENCE_REASONS = {
  /** A compaction was confirmed with no pre capture before it (the pre hook did not run). */
  preHookMissing: 'pre_hook_missing',
  /** The snapshot was taken but the ledger refused or failed the append. */
  ledgerWriteFailed: EVIDENCE_MISSING_REASONS.ledgerWriteFailed,
  /** The adapter's state (the session's cache, which keeps the pending pre capture) could not be read or written. */
  stateUnavailable: 'state_unavailable',
  /** Taking the pre capture failed unexpectedly. */
  captureFailed: EVIDENCE_MISSING_REASONS.captureFailed,
  /**
   * The configuration file exists but could not be read as one (a FIFO, a device, a link to one,
   * too large, not a JSON object): which task record it names is unknown, so none is captured.
   */
  configUnreadable: 'config_unreadable',
} as const;

/**
 * How long after a boundary recorded without the session's state another post-compaction signal
 * still joins it: with no state to tell one compaction's signals from the next, the signals that
 * follow within this window are taken as the same compaction (the gate asks for it either way).
 */
export const STATELESS_JOIN_MS = 60_000;

/** The `source` of a pre decision whose digest was carried forward along an approval chain. */
export const CARRIED_SOURCE = 'approval-chain';

/**
 * Carries approved changes forward into a pre snapshot's decisions (pure): per decision, follow
 * the session's approvals from the snapshot's digest (the latest approval leaving each digest,
 * never revisiting one) to the chain's end. The carried decision takes the end digest, one
 * revision per step, the source {@link CARRIED_SOURCE} and the last approval's reference.
 */
export function carryForward(
  decisions: DecisionMap,
  approvals: readonly Approval[],
): { decisions: DecisionMap; carried: string[] } {
  const out: DecisionMap = {};
  const carried: string[] = [];
  for (const [name, d] of Object.entries(decisions)) {
    const mine = approvals.filter((a) => a.decision === name);
    let digest = d.digest;
    let steps = 0;
    let ref: string | undefined;
    const seen = new Set([digest]);
    for (;;) {
      let next: Approval | undefined;
      for (const a of mine) if (a.fromDigest === digest && !seen.has(a.toDigest)) next = a;
      if (!next) break;
      digest = next.toDigest;
      seen.add(digest);
      ref = next.approvalRef;
      steps++;
    }
    if (steps === 0) {
      out[name] = d;
      continue;
    }
    out[name] = {
      digest,
      revision: d.revision + steps,
      observedAt: d.observedAt,
      source: CARRIED_SOURCE,
      ...(ref ? { approvalRef: ref } : {}),
    };
    carried.push(name);
  }
  return { decisions: out, carried };
}

/** What a pre capture needs. */
export interface PreCaptureInput {
  config: AdapterConfig;
  /** How messages name the task record (project-relative). */
  label: string;
  /** Capture time, RFC 3339 UTC. */
  now: string;
  /** The session id, to read its approvals from the ledger. */
  sessionId: string;
}

/**
 * Takes the pre capture: the task record's digests, approved changes carried forward (from the
 * session's ledger approvals), or the reason there are none. Never throws.
 */
export function capturePre(input: PreCaptureInput, warn: (line: string) => void): PreCapture {
  try {
    return takeCapture(input, warn);
  } catch (e) {
    warn(`no pre snapshot: ${(e as Error).message.split('\n')[0]}`);
    return { ok: false, capturedAt: input.now, reason: ADAPTER_EVIDENCE_REASONS.captureFailed, names: [] };
  }
}

function takeCapture(input: PreCaptureInput, warn: (line: string) => void): PreCapture {
  const { config, label, now } = input;
  if (config.configProblem) {
    warn(`no pre snapshot: ${config.configProblem}`);
    return { ok: false, capturedAt: now, reason: ADAPTER_EVIDENCE_REASONS.configUnreadable, names: [] };
  }
  const r = digestTaskRecord(config.taskRecordPath, label, now, () =>
    loadDigestKey({ env: config.env.vars }),
  );
  if (!r.ok) {
    warn(`no pre snapshot: ${r.problem.message}`);
    const o = readTaskOutline(config.taskRecordPath, label);
    const names = o.ok ? [...o.outline.names].sort(compareCriticality) : [];
    return { ok: false, capturedAt: now, reason: r.problem.code, names };
  }
  const sealed = againstSeal(config, r.digests.decisions, now, warn);
  if (!sealed.ok)
    return { ok: false, capturedAt: now, reason: sealed.reason, names: Object.keys(r.digests.decisions) };
  let approvals: Approval[] = [];
  try {
    approvals = openEvidence(config).latest(input.sessionId)?.approvals ?? [];
  } catch (e) {
    warn(`approvals not read (${(e as Error).message.split('\n')[0]}); the task record is used as it is`);
  }
  const { decisions, carried } = carryForward(sealed.decisions, approvals);
  return {
    ok: true,
    capturedAt: now,
    normalizerVersion: NORMALIZER_VERSION,
    decisions,
    ...(carried.length > 0 ? { carried } : {}),
    ...(sealed.changed ? { taskRecordChanged: true as const } : {}),
  };
}

/** The evidence reasons of the task record's seal. */
export const SEAL_EVIDENCE_REASONS = {
  /** The task record differs from its seal: the sealed digests were captured, not the record. */
  taskRecordChanged: 'task_record_changed',
  /** A seal exists but does not verify: no baseline can be trusted, so no pre snapshot is taken. */
  taskSealInvalid: 'task_seal_invalid',
} as const;

/**
 * The decisions the pre snapshot takes, given the task record's seal (../../authority/seal.ts):
 * the record's when it matches its seal or was never sealed; the sealed digests when it changed
 * since (never adopted); none when a seal exists but does not verify.
 */
function againstSeal(
  config: AdapterConfig,
  decisions: DecisionMap,
  now: string,
  warn: (line: string) => void,
): { ok: true; decisions: DecisionMap; changed: boolean } | { ok: false; reason: string } {
  const ledgerPath = config.env.ledgerPath;
  let trust: TrustedKeys = NO_KEYS;
  try {
    trust = trustedKeysOf(ledgerPath, readApproverKeyRecords(ledgerPath), config.env.approverRoots);
  } catch {
    // An unreadable ledger trusts no key: a seal then does not verify (task_seal_invalid), and the
    // append that follows says what is wrong with the ledger.
  }
  const read = readSeal(config.env.stateRoot, config.projectDir, trust);
  if (read.kind === 'absent') {
    if (trust.keys.size > 0) warn('the task record is not sealed: run `continuity task seal` in a terminal');
    return { ok: true, decisions, changed: false };
  }
  if (read.kind === 'invalid') {
    warn(
      `no pre snapshot: ${read.message} (${SEAL_EVIDENCE_REASONS.taskSealInvalid}); seal the task record again`,
    );
    return { ok: false, reason: SEAL_EVIDENCE_REASONS.taskSealInvalid };
  }
  if (matchesSeal(decisions, read.seal)) return { ok: true, decisions, changed: false };
  warn(
    `the task record differs from its seal (${SEAL_EVIDENCE_REASONS.taskRecordChanged}): the sealed decisions are captured; if you changed it, run \`continuity task seal\``,
  );
  const out: DecisionMap = {};
  for (const [name, d] of Object.entries(read.seal.decisions)) {
    out[name] = { digest: d.digest, revision: d.revision, observedAt: now, source: 'task-seal' };
  }
  return { ok: true, decisions: out, changed: true };
}

/** The names a capture is about (for the summarizer's instruction and the restatement request). */
export function captureNames(c: PreCapture): string[] {
  return (c.ok ? Object.keys(c.decisions) : c.names).sort(compareCriticality);
}

/** How a boundary is recorded. */
export interface RecordOptions {
  /**
   * The assembly step ran without the session's state (`TrackStep.durable` false): a boundary
   * with no pre capture is recorded as `state_unavailable` rather than `pre_hook_missing`, and a
   * signal that follows a boundary recorded so within {@link STATELESS_JOIN_MS} joins it.
   */
  stateUnavailable?: boolean;
}

/**
 * Records a boundary the assembly just opened: the pre snapshot (or why there is none) and the
 * boundary record in one ledger batch, then the pre span. When the ledger refuses, the gate cache
 * is marked `ledger_write_failed` (the gate then asks). A boundary the ledger already holds is not
 * recorded again. Never throws.
 */
export async function recordOpenedBoundary(
  config: AdapterConfig,
  state: StateDir,
  sessionId: string,
  b: TrackedBoundary<PreCapture>,
  warn: (line: string) => void,
  options: RecordOptions = {},
): Promise<void> {
  const runtime = config.runtime;
  const trigger = b.trigger;
  const base = { sessionId, boundaryId: b.boundaryId, runtime, ...(trigger ? { trigger } : {}) };
  const capture = b.pre?.capture;
  const missing = !b.pre
    ? options.stateUnavailable
      ? ADAPTER_EVIDENCE_REASONS.stateUnavailable
      : ADAPTER_EVIDENCE_REASONS.preHookMissing
    : capture && !capture.ok
      ? capture.reason
      : undefined;
  if (alreadyRecorded(config, sessionId, b, options, warn)) return;
  const preAt = capture?.capturedAt ?? b.compactedAt;
  const tokens = {
    ...(b.tokens.before !== undefined ? { tokensBefore: b.tokens.before } : {}),
    ...(b.tokens.after !== undefined ? { tokensAfter: b.tokens.after } : {}),
  };
  const store = openEvidence(config);
  let failed: string | undefined;
  // A task record changed since its seal is evidence of its own, beside the sealed pre snapshot.
  const changed: Array<{
    type: 'evidence_missing';
    phase: 'pre';
    sessionId: string;
    boundaryId: string;
    runtime: string;
    trigger?: 'manual' | 'auto';
    reason: string;
    at: string;
  }> =
    capture?.ok && capture.taskRecordChanged
      ? [
          {
            type: 'evidence_missing' as const,
            phase: 'pre' as const,
            ...base,
            reason: SEAL_EVIDENCE_REASONS.taskRecordChanged,
            at: capture.capturedAt,
          },
        ]
      : [];
  // So is a configuration that relaxes the gate without the human's seal (its defaults held).
  if (config.unsealed) {
    const seal = await import('./config-seal.js');
    const check = seal.checkConfig(config, config.unsealed);
    if (check.kind !== 'sealed') {
      warn(seal.configChangedWords(config.unsealed, check));
      changed.push({
        type: 'evidence_missing' as const,
        phase: 'pre' as const,
        ...base,
        reason: seal.CONFIG_CHANGED,
        at: preAt,
      });
    }
  }
  try {
    await store.append(
      ...changed,
      capture?.ok
        ? {
            type: 'snapshot',
            phase: 'pre',
            ...base,
            capturedAt: capture.capturedAt,
            normalizerVersion: capture.normalizerVersion,
            decisions: capture.decisions,
          }
        : { type: 'evidence_missing', phase: 'pre', ...base, reason: missing!, at: preAt },
      { type: 'boundary', ...base, compactedAt: b.compactedAt, ...tokens },
    );
  } catch (e) {
    failed = (e as Error).message.split('\n')[0];
    warn(`ledger: ${failed}`);
  } finally {
    await store.close().catch(() => {});
  }
  if (failed !== undefined && capture?.ok) {
    await markPreMissing(
      state,
      sessionId,
      b.boundaryId,
      ADAPTER_EVIDENCE_REASONS.ledgerWriteFailed,
      b.compactedAt,
    ).catch((e: Error) => warn(`gate cache: ${e.message.split('\n')[0]}`));
  }
  const reason = failed !== undefined && capture?.ok ? ADAPTER_EVIDENCE_REASONS.ledgerWriteFailed : missing;
  const ctx = { boundaryId: b.boundaryId, runtime, ...(trigger ? { trigger } : {}), ...tokens };
  const start = timeNs(preAt);
  const span: ExportSpan = {
    name: SPAN_COMPACTION_PRE,
    ids: boundarySpanIds(sessionId, b.boundaryId, 'pre'),
    // The capture instant: the span stands for the pre capture, recorded now that it counts.
    startNs: start,
    endNs: start,
    attributes:
      capture?.ok && reason === undefined
        ? snapshotAttributes(
            'pre',
            {
              sessionId,
              capturedAt: capture.capturedAt,
              normalizerVersion: capture.normalizerVersion,
              decisions: capture.decisions,
            },
            ctx,
          )
        : evidenceMissingAttributes('pre', sessionId, reason ?? ADAPTER_EVIDENCE_REASONS.preHookMissing, ctx),
    error: reason !== undefined,
  };
  // The exporter is loaded only here and in the other exporting paths, never by a pure capture.
  const { exportAdapterSpans } = await import('./export.js');
  await exportAdapterSpans([span], config, warn);
}

/**
 * True when the ledger already holds this boundary, or (without the session's state) a boundary
 * recorded so moments ago that this signal joins. A ledger that cannot be read answers false: the
 * append then says what is wrong.
 */
function alreadyRecorded(
  config: AdapterConfig,
  sessionId: string,
  b: TrackedBoundary<PreCapture>,
  options: RecordOptions,
  warn: (line: string) => void,
): boolean {
  let latest: ReturnType<ReturnType<typeof openEvidence>['latest']>;
  try {
    latest = openEvidence(config).latest(sessionId);
  } catch {
    return false;
  }
  if (!latest) return false;
  if (latest.boundaryId === b.boundaryId) return true;
  if (!options.stateUnavailable || b.pre || !latest.compactedAt) return false;
  const age = Date.parse(b.compactedAt) - Date.parse(latest.compactedAt);
  const stateless = latest.evidenceMissing.some(
    (m) => m.reason === ADAPTER_EVIDENCE_REASONS.stateUnavailable,
  );
  if (stateless && age >= 0 && age < STATELESS_JOIN_MS) {
    warn('joins the compaction recorded moments ago (no session state to tell them apart)');
    return true;
  }
  return false;
}

/**
 * Records context-fill numbers learnt after the boundary was recorded: another boundary record
 * for the same boundary and compaction time, with the numbers. Never throws.
 */
export async function recordMeasured(
  config: AdapterConfig,
  sessionId: string,
  b: TrackedBoundary<PreCapture>,
  warn: (line: string) => void,
): Promise<void> {
  const store = openEvidence(config);
  try {
    await store.append({
      type: 'boundary',
      sessionId,
      boundaryId: b.boundaryId,
      runtime: config.runtime,
      ...(b.trigger ? { trigger: b.trigger } : {}),
      compactedAt: b.compactedAt,
      ...(b.tokens.before !== undefined ? { tokensBefore: b.tokens.before } : {}),
      ...(b.tokens.after !== undefined ? { tokensAfter: b.tokens.after } : {}),
    });
  } catch (e) {
    warn(`ledger: ${(e as Error).message.split('\n')[0]}`);
  } finally {
    await store.close().catch(() => {});
  }
}
