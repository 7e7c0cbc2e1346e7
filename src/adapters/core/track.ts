/**
 * The boundary assembly made durable: one step of the pure assembly (./boundary.ts) applied to a
 * session's gate cache under the session's lock, so parallel hooks (the hooks of one event run in
 * parallel; a subagent's tool call can race the main thread's compaction) never lose each
 * other's update. Recording paths only; the gate's fast path reads the cache without the lock.
 */

import { unlinkSync } from 'node:fs';
import { BOUNDARY_REASONS } from '../../classify/states.js';
import { LedgerLock } from '../../ledger/lock.js';
import { type Assembly, type AssemblyInput, assemble, emptyTrack, type TrackedBoundary } from './boundary.js';
import {
  activityStep,
  ensureDir,
  type GateBoundary,
  type GateState,
  gateFile,
  type PreCapture,
  readActivityMark,
  readGateState,
  type StateDir,
  sessionDir,
  sessionLockFile,
  writeActivity,
  writeGateState,
} from './state.js';

/** Most milliseconds a hook waits for a session's lock. */
const SESSION_LOCK_TIMEOUT_MS = 3000;
/** A session lock older than this belongs to a hook that died holding it. */
const SESSION_LOCK_STALE_MS = 10_000;

/** Runs `fn` holding the session's lock (released in all cases). */
export async function withSessionLock<T>(
  state: StateDir,
  sessionId: string,
  fn: () => T | Promise<T>,
): Promise<T> {
  ensureDir(sessionDir(state, sessionId));
  const lock = await LedgerLock.acquire(sessionLockFile(state, sessionId), {
    timeoutMs: SESSION_LOCK_TIMEOUT_MS,
    staleMs: SESSION_LOCK_STALE_MS,
  });
  try {
    return await fn();
  } finally {
    lock.release();
  }
}

/**
 * A hook started at `atMs` reports the activity already recorded: the recorded time moves on, so
 * a background hook of an earlier event that finishes later is recognised as stale. Under the
 * session's lock; a report that is itself stale changes nothing. Never throws.
 */
export async function noteSameActivity(
  state: StateDir,
  sessionId: string,
  activity: string,
  atMs: number,
  warn: (line: string) => void,
): Promise<void> {
  try {
    await withSessionLock(state, sessionId, () => {
      if (activityStep(readActivityMark(state, sessionId), activity, atMs) === 'same')
        writeActivity(state, sessionId, { state: activity, atMs });
    });
  } catch (e) {
    warn(`activity time not recorded: ${(e as Error).message.split('\n')[0]}`);
  }
}

/** What the gate caches for a boundary the assembly just opened, before any restatement. */
export function openedGateBoundary(b: TrackedBoundary<PreCapture>, fallbackNames: string[]): GateBoundary {
  const capture = b.pre?.capture;
  const names = capture?.ok ? Object.keys(capture.decisions) : (capture?.names ?? fallbackNames);
  const missing = !b.pre ? 'pre_hook_missing' : capture && !capture.ok ? capture.reason : undefined;
  return {
    id: b.boundaryId,
    state: 'unverified',
    reason: missing ? BOUNDARY_REASONS.preSnapshotMissing : BOUNDARY_REASONS.postObservationMissing,
    primaryDecision: null,
    decisionNames: names,
    compactedAt: b.compactedAt,
    ...(missing ? { evidenceMissing: missing } : {}),
  };
}

/** One assembly step: the new cache and what the step did. */
export interface TrackStep {
  assembly: Assembly<PreCapture>;
  state: GateState;
  /**
   * False when the session's cache could not be locked, read or written: the step was computed
   * from whatever could be read and kept in memory only (`problem` says why), and the cache was
   * removed where possible so that the gate re-derives from the ledger. The caller still records
   * what the step opened in the ledger (`recordOpenedBoundary(…, { stateUnavailable: true })`).
   */
  durable: boolean;
  problem?: string;
}

function step(
  cached: GateState | undefined,
  input: AssemblyInput<PreCapture>,
  fallbackNames: () => string[],
): { assembly: Assembly<PreCapture>; boundary: GateBoundary | null } {
  const assembly = assemble(cached?.track ?? emptyTrack<PreCapture>(), input);
  const o = assembly.outcome;
  let boundary = cached?.boundary ?? null;
  if (o.kind === 'confirmed' || o.kind === 'opened_pre_missing') {
    let names: string[] = [];
    try {
      names = fallbackNames();
    } catch {
      // Names only word the messages; a task record that cannot be read must not lose the step.
    }
    boundary = openedGateBoundary(assembly.track.current!, names);
  }
  return { assembly, boundary };
}

/**
 * Applies one assembly step to the session's cache under its lock. A boundary that the step
 * opens (confirmed or pre-missing) replaces the gate's boundary at once, before anything is
 * written to the ledger: if everything after this fails, writes still wait. Never throws: when
 * the cache cannot be used the step is computed in memory (`durable: false`) so that the caller
 * can still record the compaction, never losing it.
 */
export async function trackStep(
  state: StateDir,
  sessionId: string,
  input: AssemblyInput<PreCapture>,
  now: string,
  fallbackNames: () => string[],
): Promise<TrackStep> {
  try {
    return await withSessionLock(state, sessionId, () => {
      const s = step(readGateState(state, sessionId), input, fallbackNames);
      const written = writeGateState(state, sessionId, s.boundary, now, s.assembly.track);
      return { assembly: s.assembly, state: written, durable: true };
    });
  } catch (e) {
    const problem = (e as Error).message.split('\n')[0] ?? String(e);
    // Computed from no state, not from the cache: a cache this run cannot replace may be stale (a
    // read-only or immutable directory kept the last compaction's signals), and would make this
    // compaction look like one already recorded. From nothing, it opens a boundary whose pre is
    // missing; the ledger then tells a repeated signal of it apart (./capture.ts, alreadyRecorded).
    const s = step(undefined, input, fallbackNames);
    // A cache that can no longer follow the session must not keep answering for it.
    try {
      unlinkSync(gateFile(state, sessionId));
    } catch {
      // Not there, or not removable (then the gate cannot read it either, or sees it untrusted).
    }
    const memory: GateState = {
      v: 2,
      sessionId,
      boundary: s.boundary,
      track: s.assembly.track,
      updatedAt: now,
    };
    return { assembly: s.assembly, state: memory, durable: false, problem };
  }
}

/** Marks the cached boundary's pre snapshot missing for `reason` (the ledger refused it), under the lock. */
export async function markPreMissing(
  state: StateDir,
  sessionId: string,
  boundaryId: string,
  reason: string,
  now: string,
): Promise<void> {
  await withSessionLock(state, sessionId, () => {
    const cached = readGateState(state, sessionId);
    const b = cached?.boundary;
    if (!b || b.id !== boundaryId) return;
    writeGateState(
      state,
      sessionId,
      { ...b, state: 'unverified', reason: BOUNDARY_REASONS.preSnapshotMissing, evidenceMissing: reason },
      now,
      cached?.track,
    );
  });
}
