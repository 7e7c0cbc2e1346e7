/**
 * The gate's slow path: re-derive a session's gate state from the ledger (the evidence) and the
 * classifier, then write the cache back. Loaded only when the cache is missing or says a write
 * must wait, so an approval recorded by a human, or a new restatement, is seen at the next call.
 */
import { OPAQUE_ID_PATTERN } from '../../decision/model.js';
import type { AdapterConfig } from './config.js';
import { classifyEvidence, gateBoundaryOf, openEvidence } from './evidence.js';
import type { Rederive } from './gate.js';
import { systemNow, taskRecordLabel } from './handlers.js';
import { type GateState, writeGateState } from './state.js';
import { readTaskOutline } from './task-record.js';

/** A {@link Rederive} reading the ledger configured in `env`. */
export function ledgerRederive(config: AdapterConfig, env: NodeJS.ProcessEnv): Rederive {
  return async (sessionId: string, cached: GateState | undefined) => {
    // Only ids the ledger could hold are looked up or cached.
    if (!OPAQUE_ID_PATTERN.test(sessionId)) return cached;
    const store = openEvidence(env);
    try {
      const ev = store.latest(sessionId);
      const now = systemNow();
      if (!ev) {
        // The cache knows of a boundary the ledger failed to record: keep it (never relax on a
        // missing record). With neither, the session has not been compacted.
        if (cached?.boundary) return cached;
        return writeGateState(sessionId, null, now, env);
      }
      if (cached?.boundary && cached.boundary.id !== ev.boundaryId) return cached;
      const outline = readTaskOutline(config.taskRecordPath, taskRecordLabel(config));
      const b = gateBoundaryOf(ev, classifyEvidence(ev), outline.ok ? outline.outline.names : []);
      if (!b.evidenceMissing && cached?.boundary?.evidenceMissing && !ev.pre) {
        b.evidenceMissing = cached.boundary.evidenceMissing;
      }
      return writeGateState(sessionId, b, now, env);
    } finally {
      await store.close().catch(() => {});
    }
  };
}
