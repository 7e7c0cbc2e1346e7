/**
 * The decision model: zod schemas for what is stored and exported, with types inferred from them.
 * The rules they enforce (patterns, bounds, versions) are plain values in `./rules.ts`, re-exported here.
 *
 * Raw decision values never appear here. They exist only as the input of the digest functions in
 * `src/digest/`; every type below carries digests, identifiers, integers and timestamps.
 */
import { z } from 'zod';
import { KEY_ID_PATTERN, SIGNATURE_PATTERN } from '../authority/patterns.js';
import { DECISION_NAME_PATTERN } from './names.js';
import { DIGEST_PATTERN, NORMALIZER_VERSION, OPAQUE_ID_PATTERN, secretShapeOf } from './rules.js';
import { isRfc3339Utc } from './time.js';

export type { ActivityState, DecisionBounds } from './rules.js';
export {
  ACTIVITY_STATES,
  checkDecisionCount,
  DEFAULT_DECISION_BOUNDS,
  DIGEST_PATTERN,
  NORMALIZER_VERSION,
  OPAQUE_ID_PATTERN,
} from './rules.js';

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

/** What an opaque identifier must be, as an error message says it. */
export const OPAQUE_ID_EXPECTED =
  'expected an opaque identifier: letters, digits and ._:@#+=/- only, no spaces, not a path, at most 256';

/** An opaque identifier (see {@link OPAQUE_ID_PATTERN}). */
export const OpaqueIdSchema = z
  .string({ error: 'expected an opaque identifier (string)' })
  .regex(OPAQUE_ID_PATTERN, {
    error: (issue) => {
      const secret = typeof issue.input === 'string' ? secretShapeOf(issue.input) : undefined;
      return secret ? `looks like ${secret}; never store secrets` : OPAQUE_ID_EXPECTED;
    },
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

/**
 * An approval of a change of one decision from one digest to another. It counts as a human's only
 * with its proof (`boundaryId`, `keyId`, `signature`) verified against a trusted approver key;
 * without it, it is kept as evidence of an attempt (docs/security.md).
 */
export const ApprovalSchema = z.strictObject({
  decision: DecisionNameSchema,
  fromDigest: DigestSchema,
  toDigest: DigestSchema,
  approvalRef: OpaqueIdSchema,
  approvedBy: OpaqueIdSchema,
  approvedAt: TimestampSchema,
  /** The boundary the approval is for (part of what is signed). */
  boundaryId: OpaqueIdSchema.optional(),
  /** The approver key that signed it: `ed25519:<32 hex>`. */
  keyId: z.string().regex(KEY_ID_PATTERN, { error: 'expected a key id ed25519:<32 hex>' }).optional(),
  /** The Ed25519 signature of the approval statement (docs/security.md), 128 hex digits. */
  signature: z
    .string()
    .regex(SIGNATURE_PATTERN, { error: 'expected a signature of 128 hex digits' })
    .optional(),
});
/** An explicit human approval of one decision's change from one digest to another. */
export type Approval = z.infer<typeof ApprovalSchema>;
