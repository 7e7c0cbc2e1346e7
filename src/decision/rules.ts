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
 * Known secret shapes, each with what it is: the one definition of "secret-shaped". The ledger's
 * leak guard refuses any string holding one (`src/ledger/guard.ts`), and {@link OPAQUE_ID_PATTERN}
 * refuses an id holding one, so a token pasted or forged as a session id (`sk-ant-…`, `ghp_…`,
 * `AKIA…`) is refused wherever an id is taken: hook payloads, `observe --session`, spans read by
 * the processor and `continuity serve`, ledger records. An id refused there is never written to
 * the gate cache, the project index, the spool, a metric label, a log or an answer.
 */
export const SECRET_SHAPES: ReadonlyArray<readonly [RegExp, string]> = [
  [/(?:^|[^A-Za-z0-9])sk-[A-Za-z0-9_-]{16,}/, 'an API key (sk-…)'],
  [/\bgh[pousr]_[A-Za-z0-9]{20,}/, 'a GitHub token (ghp_…)'],
  [/github_pat_[A-Za-z0-9_]{20,}/, 'a GitHub token (github_pat_…)'],
  [/\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/, 'an AWS access key id'],
  [/\bxox[abposr]-[A-Za-z0-9-]{10,}/, 'a Slack token'],
  [/-----BEGIN/, 'a PEM block'],
  [/\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}/, 'a JSON Web Token'],
  [/\bAIza[0-9A-Za-z_-]{30,}/, 'a Google API key'],
  [/\bglpat-[A-Za-z0-9_-]{16,}/, 'a GitLab token'],
  [/\bnpm_[A-Za-z0-9]{30,}/, 'an npm token'],
  [/(?:password|passwd|secret|token|api[_-]?key)=/i, 'a credential assignment'],
];

/** A regex source matching `source` in any letter case, without the `i` flag (so it can be joined). */
function anyCase(source: string): string {
  return source.replace(/[a-z]/g, (c) => `[${c}${c.toUpperCase()}]`);
}

/** Every secret shape in one source (case-insensitive shapes spelled out in both cases). */
const SECRET_SOURCE = SECRET_SHAPES.map(([r]) => (r.flags.includes('i') ? anyCase(r.source) : r.source)).join(
  '|',
);

/** What secret `s` looks like (`a GitHub token (ghp_…)`), or undefined when it holds none. */
export function secretShapeOf(s: string): string | undefined {
  for (const [pattern, what] of SECRET_SHAPES) if (pattern.test(s)) return what;
  return undefined;
}

/** Whether `s` holds a known secret shape ({@link SECRET_SHAPES}). */
export const SECRET_SHAPE_PATTERN = new RegExp(SECRET_SOURCE);

/**
 * An opaque identifier (session, source, approver, approval reference): no white space, no
 * leading `/` or `~`, at most 256 characters, and no known secret shape ({@link SECRET_SHAPES}).
 * It is stored and exported, so it must never be free text, a path or a credential.
 */
export const OPAQUE_ID_PATTERN = new RegExp(
  `^(?!.*(?:${SECRET_SOURCE}))[A-Za-z0-9_][A-Za-z0-9._:@#+=/-]{0,255}$`,
);

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
