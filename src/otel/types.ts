/**
 * Options and results of the SDK extension ({@link createContinuity}).
 */
import type { SpanContext, Tracer } from '@opentelemetry/api';
import type { ContinuityState } from '../classify/states.js';
import type { ActivityState, DecisionBounds, DecisionMap } from '../decision/model.js';
import type { DigestKey } from '../digest/digest.js';
import type { CompactionTrigger } from './semconv.js';

/**
 * The records the extension writes to a ledger. They match the ledger's record schemas
 * (`src/ledger/records.ts`): identifiers, digests, integers and timestamps only.
 */
export type ContinuityLedgerRecord =
  | {
      type: 'snapshot';
      phase: 'pre' | 'post';
      sessionId: string;
      boundaryId: string;
      runtime?: string;
      trigger?: CompactionTrigger;
      capturedAt: string;
      normalizerVersion: number;
      decisions: DecisionMap;
    }
  | {
      type: 'evidence_missing';
      phase: 'pre' | 'post';
      sessionId: string;
      boundaryId: string;
      runtime?: string;
      trigger?: CompactionTrigger;
      reason: string;
      at: string;
    }
  | {
      type: 'boundary';
      sessionId: string;
      boundaryId: string;
      runtime?: string;
      trigger?: CompactionTrigger;
      compactedAt: string;
    }
  | {
      type: 'approval';
      sessionId: string;
      decision: string;
      fromDigest: string;
      toDigest: string;
      approvalRef: string;
      approvedBy: string;
      approvedAt: string;
    }
  | { type: 'activity'; sessionId: string; state: ActivityState; at: string };

/**
 * Where the extension writes its evidence: the ledger of `src/ledger/` (`Ledger.open(path)`)
 * satisfies this, and so does anything with an `append` that stores one record durably.
 */
export interface ContinuityLedgerSink {
  append(record: ContinuityLedgerRecord): Promise<unknown>;
}

/** Options of {@link createContinuity}. */
export interface ContinuityOptions {
  /** The runtime name written on every boundary (`continuity.runtime`). Default `sdk`. */
  runtime?: string;
  /**
   * The tracer for the compaction spans. Default: the global tracer provider's tracer named
   * `agent-continuity`, so the spans go through whatever NodeSDK or provider the agent registered
   * (one trace per boundary, joined to the agent's active span: see `placement.ts`).
   */
  tracer?: Tracer;
  /** Ledger to write snapshots, approvals and activity to. Default: none (spans only). */
  ledger?: ContinuityLedgerSink;
  /** Key for keyed digests (HMAC-SHA-256). Default: none, plain SHA-256. */
  digestKey?: DigestKey;
  /** Bounds on the number of decisions a pre-compaction capture holds. Default 3 to 7. */
  decisionBounds?: DecisionBounds;
  /**
   * Longest a ledger write may hold a capture, in milliseconds; a slower write counts as failed
   * (evidence missing). Default 2 000.
   */
  ledgerTimeoutMs?: number;
  /** Clock, milliseconds since the epoch. Default `Date.now`. */
  now?: () => number;
  /**
   * Called when a capture or observation could not produce evidence (never with a value, only
   * a reason code and the decision name when there is one). Default: `diag.warn`.
   */
  onProblem?: (problem: ContinuityProblem) => void;
  /** Most sessions whose open boundary id is remembered between pre and post. Default 10 000. */
  maxOpenBoundaries?: number;
}

/** Why a call produced an evidence-missing mark instead of evidence. */
export interface ContinuityProblem {
  /** What was being done. */
  operation: 'capturePre' | 'observePost' | 'recordApproval' | 'reportActivity';
  /** A reason code: `invalid_decision`, `ledger_write_failed`, `invalid_session`, `invalid_input`. */
  reason: string;
  /** The decision at fault, when there is one. */
  decision?: string;
  /** A short description without any value. */
  detail: string;
}

/**
 * One decision as the agent gives it: the raw value (digested immediately, never stored) or a
 * digest computed elsewhere, plus its evidence.
 */
export type DecisionInput = ({ value: unknown; digest?: never } | { digest: string; value?: never }) & {
  /** Revision of the decision (integer >= 1). Default 1. */
  revision?: number;
  /** When this value was observed (RFC 3339 UTC). Default: the capture time. */
  observedAt?: string;
  /** Where the value was read from, an opaque id such as `task-record`. */
  source?: string;
  /** The approval that led to this revision, an opaque id. */
  approvalRef?: string;
};

/** Options of a pre-compaction capture. */
export interface CaptureOptions {
  /** `manual` or `auto`. */
  trigger?: CompactionTrigger;
  /** The boundary id, when the runtime has one. Default: a new random id. */
  boundaryId?: string;
  /** When the snapshot was captured (RFC 3339 UTC), for replay. Default: now. */
  capturedAt?: string;
}

/** Options of a post-compaction observation. */
export interface ObserveOptions {
  /** When the compaction happened (RFC 3339 UTC), when the runtime reported it. */
  compactedAt?: string;
  /** The boundary id. Default: the one the last capture of this session opened. */
  boundaryId?: string;
  /** `manual` or `auto`. Default: the trigger of the capture. */
  trigger?: CompactionTrigger;
  /** When the snapshot was observed (RFC 3339 UTC), for replay. Default: now. */
  capturedAt?: string;
}

/** What a capture or observation produced. Never thrown: failures are `ok: false`. */
export interface CaptureResult {
  /** True when the digests were recorded (span, and ledger when configured). */
  ok: boolean;
  /** The boundary id the span (and ledger) carry. */
  boundaryId: string;
  /** Decision name → digest (empty when the capture failed). */
  digests: Record<string, string>;
  /** The reason code written as `continuity.evidence_missing`, when `ok` is false. */
  evidenceMissing?: string;
  /** The span's context (for links), when a span was recorded. */
  spanContext?: SpanContext;
}

/** What an observation produced: a capture result plus the state the processor wrote, if any. */
export interface ObserveResult extends CaptureResult {
  /**
   * The continuity state the `ContinuityProcessor` wrote on the post span when it ended, when one
   * is registered on the same tracer provider; undefined otherwise.
   */
  state?: ContinuityState;
}

/** An approval as the agent records it: the values (digested) or their digests. */
export type ApprovalInput = {
  /** The decision whose value changed. */
  decision: string;
  /** An opaque approval reference (ticket, review id). */
  approvalRef: string;
  /** An opaque id of who approved. */
  approvedBy: string;
  /** When (RFC 3339 UTC). Default: now. */
  approvedAt?: string;
  /**
   * The human's signature (docs/security.md): signs the approval statement the extension builds
   * (`approvalStatement` in `src/authority/signing.ts`) for `boundaryId` with the approver key
   * `keyId`, and returns the signature in hex. Without it the approval is recorded, but every
   * reader that verifies approvals (the ledger's, `continuity serve`) keeps it as an attempt.
   */
  signer?: ApprovalSigner;
} & ({ from: unknown; fromDigest?: never } | { fromDigest: string; from?: never }) &
  ({ to: unknown; toDigest?: never } | { toDigest: string; to?: never });

/** Signs an approval for one boundary with one approver key (see {@link ApprovalInput.signer}). */
export interface ApprovalSigner {
  boundaryId: string;
  keyId: string;
  sign(statement: Record<string, unknown>): string;
}

/** The result of recording an approval or an activity change. */
export interface RecordResult {
  ok: boolean;
  /** The reason code when `ok` is false. */
  problem?: string;
}

/** The extension bound to one session: the same calls without the session id. */
export interface SessionContinuity {
  readonly sessionId: string;
  capturePre(decisions: Record<string, DecisionInput>, options?: CaptureOptions): Promise<CaptureResult>;
  observePost(decisions: Record<string, DecisionInput>, options?: ObserveOptions): Promise<ObserveResult>;
  recordApproval(approval: ApprovalInput): Promise<RecordResult>;
  reportActivity(state: ActivityState, options?: { at?: string }): Promise<RecordResult>;
}

/** The SDK extension: what an agent calls at its compaction points. */
export interface Continuity {
  /**
   * Captures the pre-compaction snapshot: digests the decisions (the values go nowhere else),
   * emits `continuity.compaction.pre` as a child of the active span (a root when there is none;
   * the boundary's later spans go under it), writes the ledger when configured and returns the
   * boundary id. Never throws: a failure is an evidence-missing mark.
   */
  capturePre(
    sessionId: string,
    decisions: Record<string, DecisionInput>,
    options?: CaptureOptions,
  ): Promise<CaptureResult>;
  /**
   * Observes the post-compaction snapshot: emits `continuity.compaction.post` (with
   * `gen_ai.conversation.compacted`), on which a registered `ContinuityProcessor` writes the
   * continuity state. Never throws.
   */
  observePost(
    sessionId: string,
    decisions: Record<string, DecisionInput>,
    options?: ObserveOptions,
  ): Promise<ObserveResult>;
  /** Records a human approval of a decision change (`continuity.approval`). Never throws. */
  recordApproval(sessionId: string, approval: ApprovalInput): Promise<RecordResult>;
  /** Reports the agent's activity state (`continuity.activity`), its own dimension. Never throws. */
  reportActivity(sessionId: string, state: ActivityState, options?: { at?: string }): Promise<RecordResult>;
  /** The same calls bound to one session. */
  forSession(sessionId: string): SessionContinuity;
}
