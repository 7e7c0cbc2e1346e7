/**
 * The background snapshot writer (a worker thread): rebuilds the pending state at sequence
 * number `seq` from the state directory's files alone (snapshot + journal up to `seq`) into its
 * own correlator, and writes it as the new snapshot. The service's event loop only switches the
 * journal file, so no request waits on a snapshot, however many boundaries are pending.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Correlator } from '../correlate/correlator.js';
import type { CorrelatorOptions } from '../correlate/types.js';
import { correlatorSnapshot, rebuildCorrelator } from './rebuild.js';
import { readState, SNAPSHOT_SYNC_BYTES, writeSnapshot } from './state.js';

/** What the service passes to the worker. */
export interface CompactJob {
  dir: string;
  seq: number;
  correlator: CorrelatorOptions;
  nowMs: number;
}

async function run(job: CompactJob): Promise<number> {
  const state = await readState(job.dir, { uptoSeq: job.seq });
  const correlator = new Correlator(job.correlator);
  const { outbox } = rebuildCorrelator(correlator, state, job.nowMs);
  // Written while the service's journal takes requests: flushed as it goes (see SNAPSHOT_SYNC_BYTES).
  return writeSnapshot(job.dir, job.seq, correlatorSnapshot(correlator, outbox), SNAPSHOT_SYNC_BYTES);
}

run(workerData as CompactJob).then(
  (entries) => parentPort?.postMessage({ ok: true, entries }),
  (e: unknown) =>
    parentPort?.postMessage({ ok: false, error: (e as NodeJS.ErrnoException).code ?? String(e) }),
);
