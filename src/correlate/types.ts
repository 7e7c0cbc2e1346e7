/**
 * The correlator's options and what it answers: one {@link Resolution} per resolved boundary.
 */
import type { Classification } from '../classify/classify.js';
import type { ContinuityReason, ContinuityState } from '../classify/states.js';
import type { ActivityState, Approval, Snapshot } from '../decision/model.js';
import type { SpanRef } from '../otel/attributes.js';
import type { ACTIVITY_STATE_UNKNOWN, CompactionTrigger } from '../otel/semconv.js';

/**
 * Default post windows in milliseconds: how long a boundary waits for its post observation before
 * it resolves to `unverified` / `post_observation_missing`. Keyed by runtime; `default` applies to
 * every runtime not listed (and to spans without a runtime).
 *
 * - `sdk` 2 min: in-process agents observe right after their compaction call returns.
 * - `claude-code`, `claude-agent-sdk`, `codex-cli`, `opencode`, `gemini-cli`, and the framework
 *   integrations `langchain`, `openai-agents`, `mastra` 10 min: the post
 *   observation is the agent's restatement, asked for by a hook after
 *   the summarization model call and the reload of startup context.
 * - `default` 15 min.
 */
export const DEFAULT_POST_WINDOWS_MS: Readonly<Record<string, number>> = Object.freeze({
  'claude-code': 600_000,
  'claude-agent-sdk': 600_000,
  'codex-cli': 600_000,
  opencode: 600_000,
  'gemini-cli': 600_000,
  langchain: 600_000,
  'openai-agents': 600_000,
  mastra: 600_000,
  'ai-sdk': 600_000,
  sdk: 120_000,
  default: 900_000,
});

/** Options of the {@link Correlator}. Bad values are clamped with a warning, never thrown. */
export interface CorrelatorOptions {
  /**
   * Post windows in milliseconds by runtime, merged over {@link DEFAULT_POST_WINDOWS_MS}; the
   * `default` key applies to unlisted runtimes. Default {@link DEFAULT_POST_WINDOWS_MS}.
   */
  postWindowsMs?: Readonly<Record<string, number>>;
  /**
   * How long a post that arrives before its pre (or approvals that arrive before the pre) is held
   * waiting for it, in milliseconds. 0 resolves such a post at once as `pre_snapshot_missing`.
   * Default 5 000 (OTLP batches from different exporters can arrive out of order).
   */
  reorderGraceMs?: number;
  /** Most boundaries (and held posts) pending at once; the oldest is evicted above it. Default 100 000. */
  maxPendingBoundaries?: number;
  /** Most approvals counted toward one boundary; older ones are dropped above it. Default 256. */
  maxApprovalsPerBoundary?: number;
  /**
   * Most sessions remembered for the sessions summary (least recently active forgotten first).
   * Never below `maxPendingBoundaries`. Default 100 000.
   */
  maxSessions?: number;
  /** A session with nothing pending is forgotten after this long without an event, in ms. Default 86 400 000 (24 h). */
  sessionTtlMs?: number;
  /**
   * Approver public keys (Ed25519, the raw key in 64 hex digits) whose signatures make an approval
   * count. When set (even to an empty list), an approval span counts only with a valid signature
   * by one of these keys over its fields and boundary; every other approval is kept out of the
   * classification and counted in {@link CorrelatorStats.approvalAttempts} (docs/security.md).
   * `continuity serve` always sets it, from its own configuration. Default: not set, for an
   * in-process processor whose approvals come from its own application.
   */
  approverKeys?: readonly string[];
}

/** The options after defaults and clamping. */
export interface ResolvedCorrelatorOptions {
  postWindowsMs: Readonly<Record<string, number>>;
  reorderGraceMs: number;
  maxPendingBoundaries: number;
  maxApprovalsPerBoundary: number;
  maxSessions: number;
  sessionTtlMs: number;
  /** The approver keys, or null when approvals are not verified. */
  approverKeys: readonly string[] | null;
}

/**
 * Why a boundary resolved:
 * - `post`: its post observation arrived (the post span is the one being observed).
 * - `late_pre`: a held post was paired with a pre that arrived after it.
 * - `reobserved`: a later post of an already resolved boundary re-classified it against its pre.
 * - `orphan_post`: a post with no pre (after the reorder grace): `pre_snapshot_missing`.
 * - `superseded`: a later pre in the same session opened a new boundary first.
 * - `post_window_expired`: no post within the runtime's window.
 * - `evicted`: dropped to keep memory bounded.
 * - `drained`: resolved by {@link Correlator.drain} (shutdown).
 * - `unrecoverable`: imported pending state that could not be read back.
 *
 * Every cause but `post`, `late_pre`, `reobserved` and `orphan_post` resolves to `unverified` /
 * `post_observation_missing` (or `pre_snapshot_missing` when the pre was lost).
 */
export type ResolutionCause =
  | 'post'
  | 'late_pre'
  | 'reobserved'
  | 'orphan_post'
  | 'superseded'
  | 'post_window_expired'
  | 'evicted'
  | 'drained'
  | 'unrecoverable';

/** One resolved boundary. */
export interface Resolution {
  sessionId: string;
  boundaryId: string | null;
  runtime: string | null;
  trigger: CompactionTrigger | null;
  /** The core classifier's answer (the same as the library and the CLI give for this evidence). */
  classification: Classification;
  cause: ResolutionCause;
  /**
   * True when this resolution was produced by observing its own post event just now, so an SDK
   * processor can still write the result onto that post span. Otherwise the result needs an
   * `continuity.check` span.
   */
  resolvedAtPost: boolean;
  /** The pre span, for the link from the post (or check) span. */
  preSpan: SpanRef | null;
  /** The post span, when one arrived. */
  postSpan: SpanRef | null;
  /** Seconds from the boundary to the post observation; null when there was no post or no times. */
  reobservationSeconds: number | null;
  /** Approvals counted toward this boundary. */
  approvalCount: number;
  /** The evidence-missing reason of the pre or post side, when one was missing. */
  evidenceMissing: string | null;
  /** The session's activity state when the boundary resolved. */
  activity: ActivityState | typeof ACTIVITY_STATE_UNKNOWN;
  /**
   * The evidence the classification was computed from: digests, ids and times only (the pre
   * snapshot, the post snapshot, the approvals counted). For readers that show a boundary, such
   * as the continuity page; the snapshots are shared, not copied.
   */
  evidence: ResolutionEvidence;
}

/** What a {@link Resolution} was classified from. */
export interface ResolutionEvidence {
  pre: Snapshot | null;
  post: Snapshot | null;
  approvals: readonly Approval[];
}

/** One cell of the sessions summary: never flattened into one health value. */
export interface SessionSummaryEntry {
  state: ContinuityState;
  activity: ActivityState | typeof ACTIVITY_STATE_UNKNOWN;
  sessions: number;
}

/** A session whose latest boundary needs a human (`dropped` or `conflicting`). */
export interface NeedsHumanEntry {
  sessionId: string;
  boundaryId: string | null;
  state: ContinuityState;
  reason: ContinuityReason;
  primaryDecision: string | null;
  runtime: string | null;
}

/** One session as the correlator knows it now (read-only; see {@link Correlator.sessions}). */
export interface SessionView {
  sessionId: string;
  activity: ActivityState | typeof ACTIVITY_STATE_UNKNOWN;
  /** When the session's last event was observed (ms since the epoch, the service's clock). */
  touchedAtMs: number;
  /** The latest resolved boundary, or null when none resolved yet. */
  latest: {
    boundaryId: string | null;
    state: ContinuityState;
    reason: ContinuityReason;
    primaryDecision: string | null;
    runtime: string | null;
  } | null;
  /** The boundary waiting for its post observation, or null. */
  pending: {
    boundaryId: string | null;
    runtime: string | null;
    trigger: CompactionTrigger | null;
    /** The pre snapshot (digests only), or null when it was missing. */
    pre: Snapshot | null;
    evidenceMissing: string | null;
    preSpan: SpanRef | null;
    openedAtMs: number;
    /** When it resolves `unverified` / `post_observation_missing` without a post. */
    deadlineMs: number;
  } | null;
}

/** Why an approval did not count (see `../authority/trust.ts`). */
export type ApprovalAttemptResult = 'unsigned' | 'bad_signature' | 'unknown_key' | 'other_boundary';

/** Counters the correlator keeps about itself (self-observability). */
export interface CorrelatorStats {
  /** Pending boundaries and held posts evicted to stay within `maxPendingBoundaries`. */
  evicted: number;
  /** Approvals dropped above `maxApprovalsPerBoundary`. */
  approvalsDropped: number;
  /** Approval spans whose attributes were malformed (ignored). */
  malformedApprovals: number;
  /**
   * Approvals that did not count because their proof failed (with `approverKeys` set), by result:
   * no signature, a bad one, an unknown key, or a signature for another boundary.
   */
  approvalAttempts: Record<ApprovalAttemptResult, number>;
  /** Duplicate pre or post spans ignored (same span, or a post of an already resolved boundary). */
  duplicates: number;
  /** Imported entries that could not be recovered (resolved to `unverified`, or unreadable). */
  unrecoverable: number;
}
