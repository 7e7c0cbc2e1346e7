/**
 * The pending state rebuilt from its files: the snapshot imported into a fresh correlator, the
 * journal records after it replayed in order. Start-up recovery and the background snapshot
 * writer both use it, so a snapshot written at sequence number S holds exactly what a restart
 * at S would have rebuilt.
 *
 * It also rebuilds the outbox: every resolved verdict whose span the downstream has not taken
 * yet. A verdict is keyed by the journal record that produced it (`<seq>:<index>`), so replaying
 * that record produces it again under the same key; a `settled` record removes keys once their
 * span was delivered (or dropped for good); a snapshot carries the outbox at its sequence number.
 * So a verdict acknowledged to its client (its record fsynced) survives `kill -9`, and a restart
 * emits it again: counted in the metrics, shown on the page, sent as a check span.
 */
import type { Correlator } from '../correlate/correlator.js';
import { readPendingState } from '../correlate/persist.js';
import { PENDING_STATE_VERSION } from '../correlate/persist-version.js';
import type { Resolution } from '../correlate/types.js';
import type { CompactionEvent } from '../otel/attributes.js';
import type { Recovered, SnapshotEntry, SnapshotSource } from './state.js';

/** Resolved verdicts not yet delivered, by key (`<seq>:<index>`), in the order they resolved. */
export type Outbox = Map<string, Resolution>;

/** The key of the `index`-th resolution produced by journal record `seq`. */
export function outboxKey(seq: number, index: number): string {
  return `${seq}:${index}`;
}

/** Adds the resolutions journal record `seq` produced to `outbox`; returns their keys. */
export function addToOutbox(outbox: Outbox, seq: number, resolutions: readonly Resolution[]): string[] {
  return resolutions.map((r, i) => {
    const key = outboxKey(seq, i);
    outbox.set(key, r);
    return key;
  });
}

/** What {@link rebuildCorrelator} did. */
export interface Rebuilt {
  /** Resolutions the snapshot's import produced (superseded, unrecoverable). */
  fromImport: Resolution[];
  /** Journal records that could not be replayed, with why. */
  replayProblems: Array<{ seq: number; detail: string }>;
  /** Verdicts resolved and not yet delivered (see the module comment). */
  outbox: Outbox;
}

/** The snapshot list the outbox is kept in. */
const OUTBOX_ENTRY = 'outbox';

/** A snapshot outbox entry read back: our own checksummed file, so a shape check suffices. */
function readOutboxEntry(v: unknown): { key: string; resolution: Resolution } | undefined {
  if (v === null || typeof v !== 'object') return undefined;
  const { key, resolution } = v as { key?: unknown; resolution?: unknown };
  if (typeof key !== 'string' || resolution === null || typeof resolution !== 'object') return undefined;
  const r = resolution as Partial<Resolution>;
  if (typeof r.sessionId !== 'string' || typeof r.classification?.state !== 'string') return undefined;
  return { key, resolution: r as Resolution };
}

/**
 * Imports `recovered` into `correlator`, and rebuilds the outbox. Resolutions replay produces
 * that were delivered before (a `settled` record) are not returned again.
 */
export function rebuildCorrelator(correlator: Correlator, recovered: Recovered, nowMs: number): Rebuilt {
  const fromImport: Resolution[] = [];
  const outbox: Outbox = new Map();
  const replayProblems: Rebuilt['replayProblems'] = [];
  if (recovered.snapshot !== undefined) {
    fromImport.push(...correlator.importPending(readPendingState(recovered.snapshot), nowMs));
    const saved = recovered.snapshot[OUTBOX_ENTRY];
    if (Array.isArray(saved)) {
      for (const v of saved) {
        const entry = readOutboxEntry(v);
        if (entry) outbox.set(entry.key, entry.resolution);
        else replayProblems.push({ seq: 0, detail: 'a snapshot outbox entry is unreadable' });
      }
    }
  }
  for (const rec of recovered.records) {
    try {
      if (rec.op === 'observe')
        addToOutbox(outbox, rec.seq, correlator.observe(rec.event as CompactionEvent, rec.at));
      else if (rec.op === 'expire') addToOutbox(outbox, rec.seq, correlator.expire(rec.at));
      else for (const key of rec.keys) outbox.delete(key);
    } catch (e) {
      replayProblems.push({ seq: rec.seq, detail: (e as Error).message });
    }
  }
  return { fromImport, replayProblems, outbox };
}

/** The correlator's pending state and the outbox as a snapshot source (streamed entry by entry). */
export function correlatorSnapshot(correlator: Correlator, outbox: Outbox): SnapshotSource {
  return {
    meta: { version: PENDING_STATE_VERSION },
    entries: withOutbox(correlator.pendingEntries(), outbox),
  };
}

function* withOutbox(entries: Iterable<SnapshotEntry>, outbox: Outbox): Generator<SnapshotEntry> {
  yield* entries;
  for (const [key, resolution] of outbox) yield { k: OUTBOX_ENTRY, v: { key, resolution } };
}
