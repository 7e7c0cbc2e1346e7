/**
 * Turning raw decision values into ledger records: the only place in the ledger that sees a raw
 * value, and it digests it at once. The returned records hold digests, never values; the values
 * are dropped when the function returns.
 *
 * Keyed digests: a decision given as `{ "value": …, "sensitive": true }` is digested with
 * HMAC-SHA-256 under the digest key (`CONTINUITY_DIGEST_KEY_FILE`), so a low-entropy value
 * (yes/no, a short branch name) cannot be recovered by enumeration. A post snapshot or an approval
 * that does not say `sensitive` uses the scheme the boundary's pre snapshot used for that
 * decision, so both sides stay comparable.
 */
import { z } from 'zod';
import {
  checkDecisionCount,
  DEFAULT_DECISION_BOUNDS,
  type DecisionBounds,
  DecisionNameSchema,
  NORMALIZER_VERSION,
  OpaqueIdSchema,
  RevisionSchema,
  type Snapshot,
  TimestampSchema,
} from '../decision/model.js';
import { formatPath, InputError, type InputProblem, problemsFromZod } from '../decision/problems.js';
import { formatRfc3339Utc } from '../decision/time.js';
import type { DigestKey } from '../digest/digest.js';
import { digestValue } from '../digest/digest.js';
import { normalize } from '../digest/normalize.js';
import type { ApprovalRecord, SnapshotRecord } from './records.js';
import type { Phase, Trigger } from './types.js';

/** A keyed digest is needed but no digest key is configured. */
export class DigestKeyRequiredError extends Error {
  constructor(what: string) {
    super(
      `${what} needs a keyed digest but no digest key is configured; set CONTINUITY_DIGEST_KEY_FILE to a 0600 file holding at least 16 random bytes`,
    );
    this.name = 'DigestKeyRequiredError';
  }
}

const LONG_FORM_KEYS = new Set(['value', 'revision', 'observedAt', 'source', 'approvalRef', 'sensitive']);

const LongForm = z.strictObject({
  value: z.json(),
  revision: RevisionSchema.optional(),
  observedAt: TimestampSchema.optional(),
  source: OpaqueIdSchema.optional(),
  approvalRef: OpaqueIdSchema.optional(),
  sensitive: z.boolean({ error: 'expected true or false' }).optional(),
});

/**
 * True when `v` is the long form `{ value, revision?, observedAt?, source?, approvalRef?,
 * sensitive? }`. Any other object is a raw value; to record an object that looks like the long
 * form, wrap it: `{ "value": { "value": … } }`.
 */
function isLongForm(v: unknown): v is Record<string, unknown> {
  return (
    v !== null &&
    typeof v === 'object' &&
    !Array.isArray(v) &&
    Object.hasOwn(v, 'value') &&
    Object.keys(v).every((k) => LONG_FORM_KEYS.has(k))
  );
}

/** Whether a decision's digest must be keyed: its own `sensitive`, else the pre snapshot's scheme. */
function wantsKey(sensitive: boolean | undefined, inherited: string | undefined): boolean {
  if (sensitive !== undefined) return sensitive;
  return inherited?.startsWith('hmac-sha256:') ?? false;
}

function digestOrProblem(
  value: unknown,
  keyed: boolean,
  key: DigestKey | undefined,
  what: string,
  path: PropertyKey[],
  problems: InputProblem[],
): string {
  const r = normalize(value);
  if (!r.ok) {
    problems.push({ path: formatPath(path), message: `${r.problem.message} (at ${r.problem.path})` });
    return '';
  }
  if (keyed && !key) throw new DigestKeyRequiredError(what);
  return digestValue(value, keyed ? key : undefined);
}

/** What a snapshot is captured from. */
export interface CaptureInput {
  sessionId: string;
  phase: Phase;
  boundaryId: string;
  runtime?: string | undefined;
  trigger?: Trigger | undefined;
  /** The parsed decisions document: name → value, or name → long form. Dropped after digesting. */
  decisions: unknown;
  /** Names the input in errors, e.g. the file name or `(stdin)`. */
  source: string;
  /** Capture time in milliseconds since the epoch; the default observation time too. */
  nowMs: number;
  /** The digest key for sensitive decisions. Default none. */
  digestKey?: DigestKey | undefined;
  /** The boundary's pre snapshot, whose digest schemes and revisions a post snapshot inherits. */
  inherit?: Snapshot | null | undefined;
  /**
   * Bounds on the number of decisions of a pre snapshot (post snapshots are never bounded: fewer
   * decisions after compaction is evidence, not bad input). Default 3 to 7.
   */
  bounds?: DecisionBounds;
}

/**
 * Builds a snapshot record from raw decision values. Throws {@link InputError} naming the source
 * and field path of every problem, or {@link DigestKeyRequiredError}. Nothing is written here.
 */
export function captureSnapshot(input: CaptureInput): SnapshotRecord {
  const doc = input.decisions;
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
    throw new InputError(input.source, [
      {
        path: '(root)',
        message:
          'expected an object of decision name → value (or → {value, revision, observedAt, source, sensitive})',
      },
    ]);
  }
  const problems: InputProblem[] = [];
  const capturedAt = formatRfc3339Utc(input.nowMs);
  const decisions: SnapshotRecord['decisions'] = {};
  for (const [name, raw] of Object.entries(doc)) {
    const nameCheck = DecisionNameSchema.safeParse(name);
    if (!nameCheck.success) {
      problems.push({ path: formatPath([name]), message: nameCheck.error.issues[0]?.message ?? 'bad name' });
      continue;
    }
    let long: z.infer<typeof LongForm> = { value: raw as z.infer<typeof LongForm>['value'] };
    if (isLongForm(raw)) {
      const parsed = LongForm.safeParse(raw);
      if (!parsed.success) {
        problems.push(...problemsFromZod(parsed.error, [name]));
        continue;
      }
      long = parsed.data;
    }
    const before = input.inherit?.decisions[name];
    const digest = digestOrProblem(
      long.value,
      wantsKey(long.sensitive, before?.digest),
      input.digestKey,
      `decision ${name}`,
      isLongForm(raw) ? [name, 'value'] : [name],
      problems,
    );
    decisions[name] = {
      digest,
      revision: long.revision ?? before?.revision ?? 1,
      observedAt: long.observedAt ?? capturedAt,
      ...(long.source !== undefined && { source: long.source }),
      ...(long.approvalRef !== undefined && { approvalRef: long.approvalRef }),
    };
  }
  if (problems.length === 0 && input.phase === 'pre') {
    const bad = checkDecisionCount(decisions, input.bounds ?? DEFAULT_DECISION_BOUNDS);
    if (bad) problems.push({ path: '(root)', message: `${bad} in a pre snapshot` });
  }
  if (problems.length > 0) throw new InputError(input.source, problems);
  return {
    type: 'snapshot',
    phase: input.phase,
    sessionId: input.sessionId,
    boundaryId: input.boundaryId,
    ...(input.runtime !== undefined && { runtime: input.runtime }),
    ...(input.trigger !== undefined && { trigger: input.trigger }),
    capturedAt,
    normalizerVersion: NORMALIZER_VERSION,
    decisions,
  };
}

/** One side of an approval: a raw value (digested here) or a digest. */
export type ApprovalSide = { value: unknown; digest?: never } | { digest: string; value?: never };

/** What an approval is built from. */
export interface ApprovalRecordInput {
  sessionId: string;
  decision: string;
  from: ApprovalSide;
  to: ApprovalSide;
  approvalRef: string;
  approvedBy: string;
  /** Approval time in milliseconds since the epoch. */
  nowMs: number;
  /** Force a keyed (true) or plain (false) digest of raw values; default: the pre snapshot's scheme. */
  sensitive?: boolean | undefined;
  digestKey?: DigestKey | undefined;
  /** The session's latest pre snapshot, whose digest scheme raw values inherit. */
  inherit?: Snapshot | null | undefined;
}

/**
 * Builds an approval record; raw values are digested (with the decision's scheme) and dropped.
 * Throws {@link InputError} (source `approval`) or {@link DigestKeyRequiredError}.
 */
export function buildApproval(input: ApprovalRecordInput): ApprovalRecord {
  const problems: InputProblem[] = [];
  const inherited = input.inherit?.decisions[input.decision]?.digest;
  const side = (s: ApprovalSide, flag: string): string =>
    s.digest !== undefined
      ? s.digest
      : digestOrProblem(
          s.value,
          wantsKey(input.sensitive, inherited),
          input.digestKey,
          `approval of ${input.decision}`,
          [flag],
          problems,
        );
  const fromDigest = side(input.from, '--from');
  const toDigest = side(input.to, '--to');
  if (problems.length > 0) throw new InputError('approval', problems);
  return {
    type: 'approval',
    sessionId: input.sessionId,
    decision: input.decision,
    fromDigest,
    toDigest,
    approvalRef: input.approvalRef,
    approvedBy: input.approvedBy,
    approvedAt: formatRfc3339Utc(input.nowMs),
  };
}

/** Checks an identifier given on the command line; returns a problem or undefined. */
export function checkOpaqueId(flag: string, value: string): InputProblem | undefined {
  const r = OpaqueIdSchema.safeParse(value);
  return r.success ? undefined : { path: flag, message: r.error.issues[0]?.message ?? 'invalid identifier' };
}
