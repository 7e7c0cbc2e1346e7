/**
 * The decision model's rules as plain values: the normalizer version, the digest and identifier
 * patterns, the bounds on a capture's decisions and the activity states. The zod schemas in
 * `./model.ts` enforce exactly these (and re-export them); this module has no dependency, so the
 * runtime hooks' recording paths (PreCompact above all, a process per event) can check an id or
 * a count without loading zod.
 */

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
