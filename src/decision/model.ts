/**
 * The decision model: zod schemas for what is stored and exported, with types inferred from them.
 *
 * Raw decision values never appear here. They exist only as the input of the digest functions in
 * `src/digest/`; every type below carries digests, identifiers, integers and timestamps.
 */
import { z } from 'zod';
import { DECISION_NAME_PATTERN } from './names.js';
import { isRfc3339Utc } from './time.js';

/** The normalizer version this build writes. Snapshots carry it so digests stay comparable. */
export const NORMALIZER_VERSION = 1 as const;

/** `sha256:<64 hex>` or `hmac-sha256:<keyId>:<64 hex>`. */
export const DIGEST_PATTERN = /^(?:sha256|hmac-sha256:[0-9a-f]{16}):[0-9a-f]{64}$/;

/**
 * An opaque identifier (session, source, approver, approval reference): no white space, no
 * leading `/` or `~`, at most 256 characters. It is stored and exported, so it must never be
 * free text or a path.
 */
export const OPAQUE_ID_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9._:@#+=/-]{0,255}$/;

/** Default bounds on how many decisions a captured snapshot holds (the article's three to seven). */
export const DEFAULT_DECISION_BOUNDS = { min: 3, max: 7 } as const;

/** A decision name (see {@link DECISION_NAME_PATTERN}). */
export const DecisionNameSchema = z
  .string({ error: 'expected a decision name (string)' })
  .regex(DECISION_NAME_PATTERN, { error: 'expected a decision name matching ^[a-z][a-z0-9_]{0,63}$' });

/** A self-describing digest string (see {@link DIGEST_PATTERN}). */
export const DigestSchema = z.string({ error: 'expected a digest (string)' }).regex(DIGEST_PATTERN, {
  error: 'expected a digest sha256:<64 hex> or hmac-sha256:<16 hex key id>:<64 hex>',
});

/** An RFC 3339 UTC timestamp, `Z` only, up to nanoseconds; dates that do not exist are refused. */
export const TimestampSchema = z
  .string({ error: 'expected RFC 3339 UTC time (string)' })
  .refine(isRfc3339Utc, { error: 'expected RFC 3339 UTC time, e.g. 2026-11-30T12:00:00Z' });

/** An opaque identifier (see {@link OPAQUE_ID_PATTERN}). */
export const OpaqueIdSchema = z
  .string({ error: 'expected an opaque identifier (string)' })
  .regex(OPAQUE_ID_PATTERN, {
    error:
      'expected an opaque identifier: letters, digits and ._:@#+=/- only, no spaces, not a path, at most 256',
  });

/** A decision's revision: an integer >= 1. */
export const RevisionSchema = z
  .number({ error: 'expected a revision (integer >= 1)' })
  .int({ error: 'expected a revision (integer >= 1)' })
  .min(1, { error: 'expected a revision (integer >= 1)' });

/** The normalizer version this build can produce (only {@link NORMALIZER_VERSION}). */
export const NormalizerVersionSchema = z.literal(NORMALIZER_VERSION, {
  error: `expected normalizerVersion ${NORMALIZER_VERSION} (the only version this build knows)`,
});

/** One decision as observed at one moment: its digest and the evidence around it. */
export const DecisionObservationSchema = z.strictObject({
  digest: DigestSchema,
  revision: RevisionSchema,
  observedAt: TimestampSchema,
  source: OpaqueIdSchema.optional(),
  approvalRef: OpaqueIdSchema.optional(),
});
/** One decision as observed at one moment (digest, revision, time; never the raw value). */
export type DecisionObservation = z.infer<typeof DecisionObservationSchema>;

/** A map of decision name to observation. */
export const DecisionMapSchema = z.record(DecisionNameSchema, DecisionObservationSchema);
/** Decision name → observation. */
export type DecisionMap = z.infer<typeof DecisionMapSchema>;

/** The decisions of one session observed at one moment (before or after a compaction). */
export const SnapshotSchema = z.strictObject({
  sessionId: OpaqueIdSchema,
  capturedAt: TimestampSchema,
  normalizerVersion: z.number().int().min(1),
  decisions: DecisionMapSchema,
});
/** The decisions of one session observed at one moment, with the normalizer version. */
export type Snapshot = z.infer<typeof SnapshotSchema>;

/** An explicit human approval of a change of one decision from one digest to another. */
export const ApprovalSchema = z.strictObject({
  decision: DecisionNameSchema,
  fromDigest: DigestSchema,
  toDigest: DigestSchema,
  approvalRef: OpaqueIdSchema,
  approvedBy: OpaqueIdSchema,
  approvedAt: TimestampSchema,
});
/** An explicit human approval of one decision's change from one digest to another. */
export type Approval = z.infer<typeof ApprovalSchema>;

/** Bounds on the number of decisions in a captured snapshot. */
export interface DecisionBounds {
  /** Fewest decisions. Default 3. */
  min: number;
  /** Most decisions. Default 7. */
  max: number;
}

/**
 * Checks a captured snapshot's decision count against the bounds. Returns a problem message or
 * `undefined`. Only captures are bounded: a post snapshot with fewer decisions is evidence of a
 * dropped decision, not bad input.
 */
export function checkDecisionCount(decisions: object, bounds: DecisionBounds = DEFAULT_DECISION_BOUNDS) {
  const n = Object.keys(decisions).length;
  if (n < bounds.min || n > bounds.max) {
    return `expected ${bounds.min} to ${bounds.max} decisions, got ${n}`;
  }
  return undefined;
}

/** Activity is its own dimension beside continuity, never flattened into one health value. */
export const ACTIVITY_STATES = ['working', 'waiting_human', 'idle'] as const;
/** What the agent is doing (working, waiting_human, idle), beside its continuity state. */
export type ActivityState = (typeof ACTIVITY_STATES)[number];
