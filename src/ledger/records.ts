/**
 * Record schemas: what one ledger line may hold, validated once at the edge before anything is
 * written, and again by `verify` for every stored line.
 *
 * Only identifiers, digests, integers and timestamps. Raw decision values, prompts, responses,
 * tool payloads, transcript paths, compaction summaries and keys have no field to go in; the
 * schemas are strict (unknown fields are refused) and `guard.ts` refuses strings that look like
 * paths, secrets or free text inside the fields that do exist.
 */
import { z } from 'zod';
import { KEY_ID_PATTERN, PUBLIC_KEY_PATTERN, SIGNATURE_PATTERN } from '../authority/patterns.js';
import { ALL_REASONS, CONTINUITY_STATES } from '../classify/states.js';
import {
  ACTIVITY_STATES,
  ApprovalSchema,
  DecisionMapSchema,
  DecisionNameSchema,
  DigestSchema,
  OpaqueIdSchema,
  TimestampSchema,
} from '../decision/model.js';
import { LEDGER_FORMAT_VERSION, PHASES, PROVENANCES, TRIGGERS } from './types.js';

/** A reason code (evidence missing): lower-case identifier such as `capture_failed`. */
export const REASON_CODE_PATTERN = /^[a-z][a-z0-9_]{0,63}$/;

const PhaseSchema = z.enum(PHASES, { error: 'expected phase "pre" or "post"' });
const TriggerSchema = z.enum(TRIGGERS, { error: 'expected trigger "manual" or "auto"' });
const ReasonCodeSchema = z
  .string({ error: 'expected a reason code (string)' })
  .regex(REASON_CODE_PATTERN, { error: 'expected a reason code matching ^[a-z][a-z0-9_]{0,63}$' });
const SeqSchema = z.number().int().min(1);

/** Decisions of one side of a boundary, with the evidence of when and where they were observed. */
export const SnapshotRecordSchema = z.strictObject({
  type: z.literal('snapshot'),
  phase: PhaseSchema,
  sessionId: OpaqueIdSchema,
  boundaryId: OpaqueIdSchema,
  runtime: OpaqueIdSchema.optional(),
  trigger: TriggerSchema.optional(),
  capturedAt: TimestampSchema,
  normalizerVersion: z.number({ error: 'expected an integer >= 1' }).int().min(1),
  decisions: DecisionMapSchema,
  /** On a post snapshot recorded from a restatement: where it came from (absent on older records). */
  provenance: z.enum(PROVENANCES, { error: 'expected provenance "context" or "record"' }).optional(),
});

/** A human's approval of one decision's change from one digest to another: the core approval, in a session. */
export const ApprovalRecordSchema = ApprovalSchema.extend({
  type: z.literal('approval'),
  sessionId: OpaqueIdSchema,
});

const VerdictSchema = z.enum([...CONTINUITY_STATES, 'added']);
const ReasonSchema = z.enum(ALL_REASONS as [string, ...string[]]);

/**
 * A receipt of the classifier's result for one boundary. It never replaces the evidence: `status`
 * recomputes the classification from the snapshots and approvals; the receipt names the seqs of
 * the evidence it was computed from.
 */
export const ClassificationRecordSchema = z.strictObject({
  type: z.literal('classification'),
  sessionId: OpaqueIdSchema,
  boundaryId: OpaqueIdSchema,
  state: z.enum(CONTINUITY_STATES),
  action: z.string().regex(REASON_CODE_PATTERN),
  reason: ReasonSchema,
  primaryDecision: DecisionNameSchema.nullable(),
  decisions: z.record(
    DecisionNameSchema,
    z.strictObject({
      verdict: VerdictSchema,
      reason: ReasonSchema,
      approvalRefs: z.array(OpaqueIdSchema).optional(),
    }),
  ),
  evidence: z.strictObject({
    pre: SeqSchema.nullable(),
    post: SeqSchema.nullable(),
    boundary: SeqSchema.nullable(),
    approvals: z.array(SeqSchema),
  }),
  classifiedAt: TimestampSchema,
});

/** A snapshot that could not be taken, with a reason code instead of the decisions. */
export const EvidenceMissingRecordSchema = z.strictObject({
  type: z.literal('evidence_missing'),
  phase: PhaseSchema,
  sessionId: OpaqueIdSchema,
  boundaryId: OpaqueIdSchema,
  runtime: OpaqueIdSchema.optional(),
  trigger: TriggerSchema.optional(),
  reason: ReasonCodeSchema,
  at: TimestampSchema,
});

const TokenCountSchema = z
  .number({ error: 'expected a token count (integer >= 0)' })
  .int({ error: 'expected a token count (integer >= 0)' })
  .min(0, { error: 'expected a token count (integer >= 0)' })
  .max(Number.MAX_SAFE_INTEGER);

/**
 * The runtime reported a compaction (for example Claude Code's SessionStart(compact) or
 * PostCompact), with the context fill before and after it when the runtime gave the numbers.
 * A later record for the same boundary (same `compactedAt`) adds numbers learnt afterwards.
 */
export const BoundaryRecordSchema = z.strictObject({
  type: z.literal('boundary'),
  sessionId: OpaqueIdSchema,
  boundaryId: OpaqueIdSchema,
  runtime: OpaqueIdSchema.optional(),
  trigger: TriggerSchema.optional(),
  compactedAt: TimestampSchema,
  tokensBefore: TokenCountSchema.optional(),
  tokensAfter: TokenCountSchema.optional(),
});

/** The agent's activity state, a dimension of its own beside continuity. */
export const ActivityRecordSchema = z.strictObject({
  type: z.literal('activity'),
  sessionId: OpaqueIdSchema,
  state: z.enum(ACTIVITY_STATES, { error: 'expected state working, waiting_human or idle' }),
  at: TimestampSchema,
});

/**
 * An approver key certificate (docs/security.md): the key, when it was made, the key it replaces
 * and the signature (by the replaced key, or its own for the first). Appended when a human pins a
 * key on this ledger, so `ledger verify` can check the pin beside the ledger against it.
 */
export const ApproverKeyRecordSchema = z.strictObject({
  type: z.literal('approver_key'),
  keyId: z.string().regex(KEY_ID_PATTERN, { error: 'expected a key id ed25519:<32 hex>' }),
  publicKey: z.string().regex(PUBLIC_KEY_PATTERN, { error: 'expected a public key of 64 hex digits' }),
  createdAt: TimestampSchema,
  previous: z.string().regex(KEY_ID_PATTERN).nullable(),
  signature: z.string().regex(SIGNATURE_PATTERN, { error: 'expected a signature of 128 hex digits' }),
});

/** Any record as given to `append`: without `v`, `seq`, `prev` and `hash`, which the ledger adds. */
export const NewRecordSchema = z.discriminatedUnion(
  'type',
  [
    SnapshotRecordSchema,
    ApprovalRecordSchema,
    ClassificationRecordSchema,
    EvidenceMissingRecordSchema,
    BoundaryRecordSchema,
    ActivityRecordSchema,
    ApproverKeyRecordSchema,
  ],
  {
    error:
      'expected type snapshot, approval, classification, evidence_missing, boundary, activity or approver_key',
  },
);

/** The chain fields every stored line carries. */
export const ChainFieldsSchema = z.strictObject({
  v: z.literal(LEDGER_FORMAT_VERSION),
  seq: SeqSchema,
  prev: DigestSchema.nullable(),
  hash: DigestSchema,
});

/** A stored line: a record plus its chain fields. */
export const StoredRecordSchema = z.discriminatedUnion('type', [
  SnapshotRecordSchema.extend(ChainFieldsSchema.shape),
  ApprovalRecordSchema.extend(ChainFieldsSchema.shape),
  ClassificationRecordSchema.extend(ChainFieldsSchema.shape),
  EvidenceMissingRecordSchema.extend(ChainFieldsSchema.shape),
  BoundaryRecordSchema.extend(ChainFieldsSchema.shape),
  ActivityRecordSchema.extend(ChainFieldsSchema.shape),
  ApproverKeyRecordSchema.extend(ChainFieldsSchema.shape),
]);

export type SnapshotRecord = z.infer<typeof SnapshotRecordSchema>;
export type ApprovalRecord = z.infer<typeof ApprovalRecordSchema>;
export type ClassificationRecord = z.infer<typeof ClassificationRecordSchema>;
export type EvidenceMissingRecord = z.infer<typeof EvidenceMissingRecordSchema>;
export type BoundaryRecord = z.infer<typeof BoundaryRecordSchema>;
export type ActivityRecord = z.infer<typeof ActivityRecordSchema>;
export type ApproverKeyRecord = z.infer<typeof ApproverKeyRecordSchema>;
/** A record as given to `append`. */
export type NewRecord = z.infer<typeof NewRecordSchema>;
/** The chain fields the ledger adds to every record. */
export type ChainFields = z.infer<typeof ChainFieldsSchema>;
/** A record as stored: the record and its chain fields. */
export type StoredRecord = NewRecord & ChainFields;
/** A stored record of one type. */
export type Stored<T extends NewRecord> = T & ChainFields;
