/**
 * The pending state rebuilt from its files: the snapshot imported into a fresh correlator, the
 * journal records after it replayed in order. Start-up recovery and the background snapshot
 * writer both use it, so a snapshot written at sequence number S holds exactly what a restart
 * at S would have rebuilt.
 */
import type { Correlator } from '../correlate/correlator.js';
import { PENDING_STATE_VERSION } from '../correlate/persist.js';
import type { Resolution } from '../correlate/types.js';
import type { CompactionEvent } from '../otel/attributes.js';
import type { Recovered, SnapshotSource } from './state.js';

/** What {@link rebuildCorrelator} did. */
export interface Rebuilt {
  /** Resolutions the snapshot's import produced (superseded, unrecoverable). */
  fromImport: Resolution[];
  /** Journal records that could not be replayed, with why. */
  replayProblems: Array<{ seq: number; detail: string }>;
}

/**
 * Imports `recovered` into `correlator`. Replayed resolutions were emitted before the restart:
 * replay rebuilds state, it does not return them.
 */
export function rebuildCorrelator(correlator: Correlator, recovered: Recovered, nowMs: number): Rebuilt {
  const fromImport: Resolution[] = [];
  if (recovered.snapshot !== undefined)
    fromImport.push(...correlator.importPending(recovered.snapshot, nowMs));
  const replayProblems: Rebuilt['replayProblems'] = [];
  for (const rec of recovered.records) {
    try {
      if (rec.op === 'observe') correlator.observe(rec.event as CompactionEvent, rec.at);
      else correlator.expire(rec.at);
    } catch (e) {
      replayProblems.push({ seq: rec.seq, detail: (e as Error).message });
    }
  }
  return { fromImport, replayProblems };
}

/** The correlator's pending state as a snapshot source (streamed entry by entry). */
export function correlatorSnapshot(correlator: Correlator): SnapshotSource {
  return { meta: { version: PENDING_STATE_VERSION }, entries: correlator.pendingEntries() };
}
