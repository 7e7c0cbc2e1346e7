/**
 * Decision names: the pattern every name must match and the well-known names, defined once.
 */

/** A decision name: lower-case identifier, at most 64 characters. */
export const DECISION_NAME_PATTERN = /^[a-z][a-z0-9_]{0,63}$/;

/**
 * Well-known decision names, most critical first. The order is the tie-break for
 * `primaryDecision`: a missing approval boundary outranks a stale acceptance test because it
 * changes what the agent is allowed to do.
 */
export const WELL_KNOWN_DECISIONS = [
  'approval_boundary',
  'scope',
  'target',
  'constraint',
  'acceptance_test',
] as const;

/** One of the well-known decision names. */
export type WellKnownDecision = (typeof WELL_KNOWN_DECISIONS)[number];

/**
 * Orders decision names by criticality: well-known names in {@link WELL_KNOWN_DECISIONS} order,
 * then any other name alphabetically (by code unit, so the order does not depend on locale).
 */
export function compareCriticality(a: string, b: string): number {
  const ia = (WELL_KNOWN_DECISIONS as readonly string[]).indexOf(a);
  const ib = (WELL_KNOWN_DECISIONS as readonly string[]).indexOf(b);
  const ra = ia === -1 ? WELL_KNOWN_DECISIONS.length : ia;
  const rb = ib === -1 ? WELL_KNOWN_DECISIONS.length : ib;
  if (ra !== rb) return ra - rb;
  return a < b ? -1 : a > b ? 1 : 0;
}
