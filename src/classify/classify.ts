/**
 * The classifier: compares the snapshot taken before a compaction with the one observed after
 * it, and decides what survived. Pure: no I/O, and the boundary time is an input, not a clock.
 */
import type { Approval, Snapshot } from '../decision/model.js';
import { compareCriticality } from '../decision/names.js';
import { parseRfc3339Utc } from '../decision/time.js';
import { digestScheme } from '../digest/scheme.js';
import {
  ACTIONS,
  BOUNDARY_REASONS,
  type ContinuityAction,
  type ContinuityReason,
  type ContinuityState,
  DECISION_REASONS,
  type DecisionReason,
  type DecisionVerdict,
  severity,
} from './states.js';

/** What the classifier compares. */
export interface ClassifyInput {
  /** The snapshot captured before compaction, or null when none was taken. */
  pre: Snapshot | null;
  /** The snapshot observed after compaction, or null when none arrived. */
  post: Snapshot | null;
  /** Approvals that may connect a pre digest to a post digest. Default none. */
  approvals?: readonly Approval[];
  /** When the compaction happened. Default: the pre snapshot's `capturedAt`. */
  compactedAt?: string;
}

/** One decision's verdict. */
export interface DecisionResult {
  verdict: DecisionVerdict;
  reason: DecisionReason;
  /** For `approved_change`: the approval references of the chain, in order (the audit link). */
  approvalRefs?: string[];
}

/** The classifier's answer for one boundary. */
export interface Classification {
  state: ContinuityState;
  action: ContinuityAction;
  reason: ContinuityReason;
  /** The most critical decision among those with the boundary's state; null when none applies. */
  primaryDecision: string | null;
  /** A verdict for every decision seen on either side. */
  decisions: Record<string, DecisionResult>;
}

function boundaryOnly(state: ContinuityState, reason: ContinuityReason): Classification {
  return { state, action: ACTIONS[state], reason, primaryDecision: null, decisions: {} };
}

/**
 * Finds a chain of approvals for one decision leading from `from` to `to` (A→B, A→B→C, …),
 * breadth-first so the shortest chain is reported. Returns the approval refs, or undefined.
 */
export function findApprovalChain(
  approvals: readonly Approval[],
  decision: string,
  from: string,
  to: string,
): string[] | undefined {
  const edges = new Map<string, Approval[]>();
  for (const a of approvals) {
    if (a.decision !== decision || a.fromDigest === a.toDigest) continue;
    const list = edges.get(a.fromDigest);
    if (list) list.push(a);
    else edges.set(a.fromDigest, [a]);
  }
  const seen = new Set([from]);
  let frontier: Array<{ digest: string; refs: string[] }> = [{ digest: from, refs: [] }];
  while (frontier.length > 0) {
    const next: typeof frontier = [];
    for (const node of frontier) {
      for (const a of edges.get(node.digest) ?? []) {
        const refs = [...node.refs, a.approvalRef];
        if (a.toDigest === to) return refs;
        if (!seen.has(a.toDigest)) {
          seen.add(a.toDigest);
          next.push({ digest: a.toDigest, refs });
        }
      }
    }
    frontier = next;
  }
  return undefined;
}

/**
 * Classifies one compaction boundary.
 *
 * Per required decision (the pre snapshot's): absent after → `dropped`; normalizer or digest
 * scheme differ → `unverified`; same digest → `preserved` if observed strictly after the
 * boundary, else `unverified` (stale); different digest → `approved_change` with an approval chain
 * and a fresh observation, `conflicting` with a fresh observation and no chain, else
 * `unverified`. The boundary takes the most severe verdict.
 */
export function classify(input: ClassifyInput): Classification {
  const { pre, post } = input;
  if (!pre) return boundaryOnly('unverified', BOUNDARY_REASONS.preSnapshotMissing);
  if (!post) return boundaryOnly('unverified', BOUNDARY_REASONS.postObservationMissing);
  const required = Object.keys(pre.decisions);
  if (required.length === 0) return boundaryOnly('unverified', BOUNDARY_REASONS.noRequiredDecisions);

  const compactedAt = input.compactedAt ?? pre.capturedAt;
  const boundaryNs = parseRfc3339Utc(compactedAt);
  if (boundaryNs === undefined)
    throw new TypeError(`compactedAt: expected RFC 3339 UTC time, got ${compactedAt}`);
  const approvals = input.approvals ?? [];
  const sameNormalizer = pre.normalizerVersion === post.normalizerVersion;
  const decisions: Record<string, DecisionResult> = {};

  for (const name of required) {
    const before = pre.decisions[name]!;
    // Own properties only: a decision named `constructor` must not find Object.prototype's.
    const after = Object.hasOwn(post.decisions, name) ? post.decisions[name] : undefined;
    if (!after) {
      decisions[name] = { verdict: 'dropped', reason: DECISION_REASONS.absentAfterCompaction };
      continue;
    }
    if (!sameNormalizer) {
      decisions[name] = { verdict: 'unverified', reason: DECISION_REASONS.normalizerMismatch };
      continue;
    }
    if (digestScheme(before.digest) !== digestScheme(after.digest)) {
      decisions[name] = { verdict: 'unverified', reason: DECISION_REASONS.digestSchemeMismatch };
      continue;
    }
    const observedNs = parseRfc3339Utc(after.observedAt);
    const fresh = observedNs !== undefined && observedNs > boundaryNs;
    if (!fresh) {
      decisions[name] = { verdict: 'unverified', reason: DECISION_REASONS.staleObservation };
      continue;
    }
    if (before.digest === after.digest) {
      decisions[name] = { verdict: 'preserved', reason: DECISION_REASONS.digestMatchFresh };
      continue;
    }
    const chain = findApprovalChain(approvals, name, before.digest, after.digest);
    decisions[name] = chain
      ? { verdict: 'approved_change', reason: DECISION_REASONS.approvedChain, approvalRefs: chain }
      : { verdict: 'conflicting', reason: DECISION_REASONS.unapprovedChange };
  }

  for (const name of Object.keys(post.decisions)) {
    if (!Object.hasOwn(pre.decisions, name)) {
      decisions[name] = { verdict: 'added', reason: DECISION_REASONS.addedAfterCompaction };
    }
  }

  let state: ContinuityState = 'preserved';
  for (const name of required) {
    const v = decisions[name]!.verdict as ContinuityState;
    if (severity(v) < severity(state)) state = v;
  }
  // The most critical of the decisions with the boundary's state: the first of them in
  // criticality order (what sorting them and taking the first gives, without the arrays).
  let primaryDecision: string | undefined;
  for (const n of required) {
    if (decisions[n]!.verdict !== state) continue;
    if (primaryDecision === undefined || compareCriticality(n, primaryDecision) < 0) primaryDecision = n;
  }
  return {
    state,
    action: ACTIONS[state],
    reason: decisions[primaryDecision!]!.reason,
    primaryDecision: primaryDecision!,
    decisions,
  };
}

/**
 * The event-only rule the classifier replaces: a boundary is healthy when both a pre and a post
 * event were seen, whatever the decisions did. Kept to show what it misses.
 */
export function eventOnlyRule(events: { pre: boolean; post: boolean }): 'healthy' | 'unhealthy' {
  return events.pre && events.post ? 'healthy' : 'unhealthy';
}
