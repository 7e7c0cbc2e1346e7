/**
 * The recording steps of a runtime whose hooks are commands (a fresh process per event, the
 * session's memory only in its 0600 cache): the pre-compaction hook (capture + a pending pre in
 * the durable track), a compaction signal (the track confirms or opens a boundary, which goes to
 * the ledger with its pre span), a fresh session (no boundary yet, said once for the gate's fast
 * path) and the once-per-boundary restatement request. Each runtime's handlers translate its
 * payloads into the core events these take and its answers out of what they return; never
 * loaded by the gate's fast path.
 */

import { captureNames, capturePre, recordOpenedBoundary } from './capture.js';
import type { AdapterConfig } from './config.js';
import type { CompactedEvent, PreEvent } from './events.js';
import { taskRecordNames } from './evidence.js';
import { rememberSession, taskRecordLabel } from './recording.js';
import {
  createMarker,
  ledgerIdentity,
  markerFile,
  readGateState,
  type StateDir,
  writeGateState,
} from './state.js';
import { type TrackStep, trackStep, withSessionLock } from './track.js';

/** What a recording step needs: the session, the clock reading, the runtime's words and ids. */
export interface HookStepContext {
  config: AdapterConfig;
  state: StateDir;
  sessionId: string;
  /** The step's time, RFC 3339 UTC. */
  now: string;
  /** The runtime's name of its pre-compaction hook, for the warnings (`PreCompact`). */
  preHook: string;
  /** A fresh boundary id in the runtime's prefix. */
  newBoundaryId: () => string;
  /** Where the step's problems go (prefixed with the event by the runtime). */
  warn: (line: string) => void;
}

/**
 * The pre-compaction hook: records the project's current session, takes the pre capture of the
 * task record (digests only) and keeps it pending until a compaction confirms it. Returns the
 * captured decision names (for the summarizer's sentence). Never throws for a state directory
 * that cannot keep it: the compaction is then recorded without it.
 */
export async function preCompactStep(
  c: HookStepContext,
  event: PreEvent,
  tokensBefore: number | undefined,
): Promise<string[]> {
  const { config, state, sessionId, now, warn } = c;
  rememberSession(state, config.projectDir, sessionId, now, warn);
  const capture = capturePre({ config, label: taskRecordLabel(config), now, sessionId }, warn);
  const step = await trackStep(
    state,
    sessionId,
    {
      event: { ...event, ...(tokensBefore !== undefined ? { tokensBefore } : {}) },
      boundaryId: c.newBoundaryId(),
      capture,
    },
    now,
    () => captureNames(capture),
  );
  if (!step.durable) {
    warn(`pre capture not kept (session state: ${step.problem}); the compaction will be recorded without it`);
  }
  const discarded = step.assembly.outcome.kind === 'pending' ? step.assembly.outcome.discarded : null;
  if (discarded) warn(`an earlier ${c.preHook} was never followed by a compaction; it is discarded`);
  return captureNames(capture);
}

/**
 * A post-compaction signal: records the project's current session, confirms the pending pre (or
 * opens a boundary whose pre is missing) and records what it opened in the ledger with the pre
 * span. Returns the step (its `state.boundary` is the gate's boundary after it).
 */
export async function compactedStep(c: HookStepContext, event: CompactedEvent): Promise<TrackStep> {
  const { config, state, sessionId, now, warn } = c;
  rememberSession(state, config.projectDir, sessionId, now, warn);
  const label = taskRecordLabel(config);
  const step = await trackStep(state, sessionId, { event, boundaryId: c.newBoundaryId() }, now, () =>
    taskRecordNames(config, label),
  );
  const o = step.assembly.outcome;
  const current = step.assembly.track.current;
  if (!step.durable) warn(`session state unavailable (${step.problem}); recording from the ledger alone`);
  if ((o.kind === 'confirmed' || o.kind === 'opened_pre_missing') && current) {
    if (o.kind === 'opened_pre_missing' && step.durable) {
      warn(`compaction without a ${c.preHook} capture; continuity cannot be verified for it`);
    }
    await recordOpenedBoundary(config, state, sessionId, current, warn, {
      stateUnavailable: !step.durable,
    });
  }
  return step;
}

/**
 * True the first time the restatement request of a boundary goes to the agent (a marker file
 * records it), and also when the marker cannot be written: better twice than never.
 */
export function firstInjection(state: StateDir, sessionId: string, boundaryId: string): boolean {
  try {
    return createMarker(markerFile(state, sessionId, boundaryId, 'injected'));
  } catch {
    return true;
  }
}

/**
 * A session that starts with an id of its own (not a resumed one) has no boundary yet: the gate's
 * fast path knows that from now on, for as long as the ledger (`ledgerPath`) records nothing for
 * the session (the cache keeps the ledger's mark). A session with a cache already is left as it is.
 */
export async function markFreshSession(
  state: StateDir,
  sessionId: string,
  now: string,
  ledgerPath: string,
): Promise<void> {
  if (readGateState(state, sessionId)) return;
  await withSessionLock(state, sessionId, () => {
    if (readGateState(state, sessionId)) return;
    writeGateState(state, sessionId, null, now, undefined, ledgerIdentity(ledgerPath, sessionId));
  });
}
