/**
 * The five continuity states, their actions and every reason code, defined once.
 */

/** Continuity states, most severe first. */
export const CONTINUITY_STATES = [
  'conflicting',
  'dropped',
  'unverified',
  'approved_change',
  'preserved',
] as const;
/** One of the five continuity states. */
export type ContinuityState = (typeof CONTINUITY_STATES)[number];

/** A per-decision verdict: a state, or `added` for a decision that appears only after compaction. */
export type DecisionVerdict = ContinuityState | 'added';

/** The smallest safe response to each state. */
export const ACTIONS = {
  preserved: 'continue',
  approved_change: 'continue_with_audit',
  dropped: 'pause_and_restore',
  conflicting: 'stop_and_ask_human',
  unverified: 'reobserve',
} as const satisfies Record<ContinuityState, string>;
/** The action routed from a continuity state. */
export type ContinuityAction = (typeof ACTIONS)[ContinuityState];

/** Reason codes for one decision's verdict. */
export const DECISION_REASONS = {
  /** Same digest, observed after the boundary. */
  digestMatchFresh: 'digest_match_fresh',
  /** Different digest, joined to the pre digest by a chain of approvals, observed after the boundary. */
  approvedChain: 'approved_chain',
  /** Required before compaction, absent after it. */
  absentAfterCompaction: 'absent_after_compaction',
  /** Different digest, no approval chain, observed after the boundary. */
  unapprovedChange: 'unapproved_change',
  /** The post observation is not after the boundary: a repeated digest is not fresh evidence. */
  staleObservation: 'stale_observation',
  /** Pre and post were normalized by different normalizer versions. */
  normalizerMismatch: 'normalizer_mismatch',
  /** Pre and post digests use different algorithms or key ids. */
  digestSchemeMismatch: 'digest_scheme_mismatch',
  /** Present only after compaction. */
  addedAfterCompaction: 'added_after_compaction',
} as const;
/** A reason code for one decision's verdict. */
export type DecisionReason = (typeof DECISION_REASONS)[keyof typeof DECISION_REASONS];

/** Reason codes that only a whole boundary has. */
export const BOUNDARY_REASONS = {
  /** No snapshot before compaction: continuity evidence is missing. */
  preSnapshotMissing: 'pre_snapshot_missing',
  /** No observation after compaction (yet, or within the window). */
  postObservationMissing: 'post_observation_missing',
  /** The pre snapshot recorded no decisions, so there is nothing to compare. */
  noRequiredDecisions: 'no_required_decisions',
} as const;
/** A reason code only a whole boundary has. */
export type BoundaryReason = (typeof BOUNDARY_REASONS)[keyof typeof BOUNDARY_REASONS];

/** The reason of a boundary: its own code, or the primary decision's reason. */
export type ContinuityReason = BoundaryReason | DecisionReason;

/** Every reason code, for documentation and checks. */
export const ALL_REASONS: readonly ContinuityReason[] = [
  ...Object.values(DECISION_REASONS),
  ...Object.values(BOUNDARY_REASONS),
];

/** Severity rank, 0 the most severe. */
export function severity(state: ContinuityState): number {
  return CONTINUITY_STATES.indexOf(state);
}
