/**
 * The write gate's policy: what the gate answers for each continuity state, pure and lean.
 *
 * A verdict is `allow` (the gate has no objection: Claude Code's normal permission flow decides,
 * the gate never answers `permissionDecision: "allow"` and so never bypasses the user's own
 * permission rules), `ask` (Claude Code asks the human before the tool runs) or `deny` (the tool
 * does not run and the agent reads the reason).
 *
 * Keys are a state (`conflicting`) or a state and reason (`unverified/pre_snapshot_missing`); the
 * more specific key wins.
 */
import { ALL_REASONS, CONTINUITY_STATES, type ContinuityState } from '../../classify/states.js';

/** What the gate answers for a tool call. */
export const GATE_VERDICTS = ['allow', 'ask', 'deny'] as const;
export type GateVerdict = (typeof GATE_VERDICTS)[number];

/** State (or `state/reason`) → verdict. */
export type GatePolicy = Readonly<Record<string, GateVerdict>>;

/**
 * The default policy follows the five states' actions: `preserved` (continue) and
 * `approved_change` (continue with audit) pass; `unverified` (re-observe), `dropped` (pause and
 * restore) and `conflicting` (stop and ask a human) deny until the agent restates its decisions or
 * a human approves the change. One exception asks instead: when no snapshot was taken before
 * compaction, no re-observation can ever verify the boundary, so a human confirms each write
 * until the next boundary is captured properly.
 */
export const DEFAULT_GATE_POLICY: GatePolicy = Object.freeze({
  preserved: 'allow',
  approved_change: 'allow',
  unverified: 'deny',
  dropped: 'deny',
  conflicting: 'deny',
  'unverified/pre_snapshot_missing': 'ask',
});

/** The tools the gate checks by default: those that change files or run commands. */
export const DEFAULT_GATED_TOOLS: readonly string[] = Object.freeze([
  'Edit',
  'Write',
  'MultiEdit',
  'NotebookEdit',
  'Bash',
]);

/** True when `key` is a valid policy key: a state, or `state/reason` with a known reason. */
export function isPolicyKey(key: string): boolean {
  const slash = key.indexOf('/');
  const state = slash === -1 ? key : key.slice(0, slash);
  if (!(CONTINUITY_STATES as readonly string[]).includes(state)) return false;
  return slash === -1 || (ALL_REASONS as readonly string[]).includes(key.slice(slash + 1));
}

/** True when `value` is a gate verdict. */
export function isGateVerdict(value: unknown): value is GateVerdict {
  return typeof value === 'string' && (GATE_VERDICTS as readonly string[]).includes(value);
}

/** The verdict for a boundary in `state` with `reason`: `state/reason`, else `state`, else the default. */
export function policyVerdict(policy: GatePolicy, state: ContinuityState, reason: string): GateVerdict {
  return (
    policy[`${state}/${reason}`] ??
    policy[state] ??
    DEFAULT_GATE_POLICY[`${state}/${reason}`] ??
    DEFAULT_GATE_POLICY[state] ??
    'deny'
  );
}
