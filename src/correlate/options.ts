/**
 * Correlator options: defaults applied with `??`, bad values clamped with a warning (returned, so
 * the pure correlator stays free of I/O; the processor and the service log them).
 */
import { PUBLIC_KEY_PATTERN } from '../authority/patterns.js';
import { type CorrelatorOptions, DEFAULT_POST_WINDOWS_MS, type ResolvedCorrelatorOptions } from './types.js';

/** Defaults of {@link CorrelatorOptions} other than the post windows. */
export const CORRELATOR_DEFAULTS = Object.freeze({
  reorderGraceMs: 5_000,
  maxPendingBoundaries: 100_000,
  maxApprovalsPerBoundary: 256,
  maxSessions: 100_000,
  sessionTtlMs: 86_400_000,
});

function positiveInt(
  name: string,
  value: number | undefined,
  fallback: number,
  warnings: string[],
  min = 1,
): number {
  const v = value ?? fallback;
  if (typeof v === 'number' && Number.isFinite(v) && v >= min) return Math.floor(v);
  warnings.push(`${name}: expected a number >= ${min}, got ${String(v)}; using ${fallback}`);
  return fallback;
}

/** The approver keys that are keys; each other entry adds a warning (and trusts nothing). */
function approverKeys(keys: readonly string[], warnings: string[]): readonly string[] {
  const out: string[] = [];
  for (const [i, k] of keys.entries()) {
    if (typeof k === 'string' && PUBLIC_KEY_PATTERN.test(k)) out.push(k);
    else warnings.push(`approverKeys[${i}]: expected an Ed25519 public key in 64 hex digits; ignored`);
  }
  return Object.freeze(out);
}

/** Applies defaults and clamps bad combinations; every clamp adds one warning. */
export function resolveCorrelatorOptions(options: CorrelatorOptions = {}): {
  options: ResolvedCorrelatorOptions;
  warnings: string[];
} {
  const warnings: string[] = [];
  const postWindowsMs: Record<string, number> = { ...DEFAULT_POST_WINDOWS_MS };
  for (const [runtime, ms] of Object.entries(options.postWindowsMs ?? {})) {
    const fallback = DEFAULT_POST_WINDOWS_MS[runtime] ?? DEFAULT_POST_WINDOWS_MS.default!;
    postWindowsMs[runtime] = positiveInt(`postWindowsMs.${runtime}`, ms, fallback, warnings);
  }
  const maxPendingBoundaries = positiveInt(
    'maxPendingBoundaries',
    options.maxPendingBoundaries,
    CORRELATOR_DEFAULTS.maxPendingBoundaries,
    warnings,
  );
  let reorderGraceMs = positiveInt(
    'reorderGraceMs',
    options.reorderGraceMs,
    CORRELATOR_DEFAULTS.reorderGraceMs,
    warnings,
    0,
  );
  // A post held longer than the shortest post window would outlive the pre it waits for.
  const shortestWindow = Math.min(...Object.values(postWindowsMs));
  if (reorderGraceMs > shortestWindow) {
    warnings.push(
      `reorderGraceMs ${reorderGraceMs} exceeds the shortest post window; using ${shortestWindow}`,
    );
    reorderGraceMs = shortestWindow;
  }
  let maxSessions = positiveInt(
    'maxSessions',
    options.maxSessions,
    CORRELATOR_DEFAULTS.maxSessions,
    warnings,
  );
  // Every pending boundary belongs to a session; fewer sessions than boundaries would evict them early.
  if (maxSessions < maxPendingBoundaries) {
    warnings.push(`maxSessions ${maxSessions} is below maxPendingBoundaries; using ${maxPendingBoundaries}`);
    maxSessions = maxPendingBoundaries;
  }
  return {
    options: {
      postWindowsMs: Object.freeze(postWindowsMs),
      reorderGraceMs,
      maxPendingBoundaries,
      maxApprovalsPerBoundary: positiveInt(
        'maxApprovalsPerBoundary',
        options.maxApprovalsPerBoundary,
        CORRELATOR_DEFAULTS.maxApprovalsPerBoundary,
        warnings,
      ),
      maxSessions,
      sessionTtlMs: positiveInt(
        'sessionTtlMs',
        options.sessionTtlMs,
        CORRELATOR_DEFAULTS.sessionTtlMs,
        warnings,
      ),
      approverKeys: options.approverKeys === undefined ? null : approverKeys(options.approverKeys, warnings),
    },
    warnings,
  };
}
