/**
 * The adapters' view of the ledger (src/ledger): append records, read one session's latest
 * boundary, classify it, and re-derive the gate cache from it. The ledger is the evidence;
 * everything the adapters derive (the gate cache, the printed state) is recomputed from it with
 * the core classifier.
 *
 * Reads use the ledger's lean, lock-free reader; only appends open the ledger (lock, schema and
 * leak guard, one write, fsync). The ledger only ever holds confirmed boundaries: a pre capture
 * reaches it when a compaction confirms it (./capture.ts), so its latest boundary is the one the
 * gate answers for.
 */
import type { Classification } from '../../classify/classify.js';
import { compareCriticality } from '../../decision/names.js';
import { OPAQUE_ID_PATTERN } from '../../decision/rules.js';
import { formatRfc3339Utc } from '../../decision/time.js';
import { loadChainKey } from '../../ledger/chain-key.js';
import type { BoundaryEvidence } from '../../ledger/evidence.js';
import { readLatestBoundary } from '../../ledger/latest.js';
import type { Ledger } from '../../ledger/ledger.js';
import { classificationRecord, classifyEvidence, receiptIsCurrent } from '../../ledger/receipt.js';
import type { NewRecord } from '../../ledger/records.js';
import type { AdapterConfig } from './config.js';
import type { Rederive } from './gate.js';
import {
  type GateBoundary,
  type GateState,
  isHealthy,
  ledgerIdentity,
  readGateState,
  type StateDir,
  writeGateState,
} from './state.js';
import { readTaskOutline } from './task-record.js';
import { withSessionLock } from './track.js';

export type { BoundaryEvidence } from '../../ledger/evidence.js';
export { classifyEvidence } from '../../ledger/receipt.js';

/** Most milliseconds a hook waits for the ledger lock: a hook must not hold the agent up. */
export const LEDGER_LOCK_TIMEOUT_MS = 3000;

/** Appending to and reading from the ledger. */
export interface EvidenceStore {
  /** The ledger file (for messages). */
  readonly path: string;
  /** Appends records in order (one lock, one write, fsync). */
  append(...records: NewRecord[]): Promise<void>;
  /** The session's latest boundary, or `undefined` when the ledger has none. */
  latest(sessionId: string): BoundaryEvidence | undefined;
  /** Appends a classification receipt unless the latest one already says the same. */
  receipt(evidence: BoundaryEvidence, classification: Classification, nowMs: number): Promise<void>;
  close(): Promise<void>;
}

/** The ledger of the resolved environment (or `ledgerPath`); opened on first append. */
export function openEvidence(config: AdapterConfig, ledgerPath?: string): EvidenceStore {
  const path = ledgerPath ?? config.env.ledgerPath;
  let ledger: Ledger | undefined;
  // The writer (schemas, leak guard, chain) is loaded on the first append only: a hook that only
  // reads the ledger (PreCompact, the gate's slow path) never loads zod.
  const open = async () => {
    if (!ledger) {
      const { Ledger } = await import('../../ledger/ledger.js');
      ledger = Ledger.open(path, {
        chainKey: loadChainKey({ env: config.env.vars }),
        timeoutMs: LEDGER_LOCK_TIMEOUT_MS,
      });
    }
    return ledger;
  };
  return {
    path,
    async append(...records) {
      await (await open()).appendBatch(records);
    },
    latest(sessionId) {
      return readLatestBoundary(path, sessionId, { approverRoots: config.env.approverRoots }) ?? undefined;
    },
    async receipt(evidence, classification, nowMs) {
      if (!receiptIsCurrent(evidence, classification)) {
        await (await open()).append(classificationRecord(evidence, classification, nowMs));
      }
    },
    async close() {
      await ledger?.close();
    },
  };
}

/** Why a boundary has no pre snapshot, from its evidence_missing records. */
export function preMissingReason(ev: BoundaryEvidence): string | undefined {
  for (let i = ev.evidenceMissing.length - 1; i >= 0; i--) {
    const m = ev.evidenceMissing[i]!;
    if (m.phase === 'pre') return m.reason;
  }
  return undefined;
}

/** What the gate caches for a classified boundary (names, digests, states; never values). */
export function gateBoundaryOf(
  ev: BoundaryEvidence,
  c: Classification,
  fallbackNames: readonly string[],
): GateBoundary {
  const names = (ev.pre ? Object.keys(ev.pre.decisions) : [...fallbackNames]).sort(compareCriticality);
  const b: GateBoundary = {
    id: ev.boundaryId,
    state: c.state,
    reason: c.reason,
    primaryDecision: c.primaryDecision,
    decisionNames: names,
  };
  if (ev.compactedAt) b.compactedAt = ev.compactedAt;
  if (ev.post) b.observed = true;
  const missing = preMissingReason(ev);
  if (!ev.pre && missing) b.evidenceMissing = missing;
  const primary = c.primaryDecision;
  if (c.state === 'conflicting' && primary && ev.pre && ev.post) {
    const from = ev.pre.decisions[primary]?.digest;
    const to = ev.post.decisions[primary]?.digest;
    if (from && to) b.change = { decision: primary, fromDigest: from, toDigest: to };
  }
  if (c.state === 'approved_change' && primary) {
    const refs = c.decisions[primary]?.approvalRefs;
    if (refs) b.approvalRefs = refs;
  }
  return b;
}

/** The task record's decision names (sorted by criticality), or none when it cannot be read. */
export function taskRecordNames(config: AdapterConfig, label: string): string[] {
  const o = readTaskOutline(config.taskRecordPath, label);
  return o.ok ? [...o.outline.names].sort(compareCriticality) : [];
}

/**
 * Writes the classification of the ledger's boundary `b` into the session's gate cache, under the
 * session lock, unless the cache has meanwhile moved to another boundary that still objects (a
 * newer compaction confirmed while this one was read): a stale writer never hides a newer
 * boundary, and never relaxes one. `b.ledgerId` should name the ledger file `b` was read from.
 */
export async function storeGateBoundary(
  state: StateDir,
  sessionId: string,
  b: GateBoundary,
  now: string,
): Promise<GateState> {
  return withSessionLock(state, sessionId, () => {
    const cached = readGateState(state, sessionId);
    const currentId = cached?.track?.current?.boundaryId ?? cached?.boundary?.id;
    const objects = cached?.boundary ? !isHealthy(cached.boundary.state) : false;
    if (cached && currentId !== undefined && currentId !== b.id && objects) return cached;
    if (!b.evidenceMissing && cached?.boundary?.id === b.id && cached.boundary.evidenceMissing) {
      b.evidenceMissing = cached.boundary.evidenceMissing;
    }
    return writeGateState(state, sessionId, b, now, cached?.track);
  });
}

/**
 * A {@link Rederive} reading the configured ledger: the gate's slow path. Loaded only when the
 * cache is missing, says a write must wait, or was not derived from this ledger file, so an
 * approval recorded by a human, or a new restatement, is seen at the next call.
 *
 * What it derives is returned even when the cache cannot be written (`warn` says so): a verdict
 * the ledger gives is never thrown away. Where the cache and the ledger disagree about which
 * boundary is the latest, the one that objects wins (a boundary just opened in the cache whose
 * append is late or failed; a boundary the ledger holds that the cache never learnt of). A cached
 * state with no objection that the ledger has no record of is not confirmed: it throws, and the
 * gate asks.
 */
export function ledgerRederive(
  config: AdapterConfig,
  state: StateDir,
  label: string,
  warn?: (line: string) => void,
): Rederive {
  return async (sessionId, cached) => {
    const now = formatRfc3339Utc(Date.now());
    // An id the ledger could not hold has no boundary: the recording hooks refuse to store it.
    if (!OPAQUE_ID_PATTERN.test(sessionId)) return { v: 2, sessionId, boundary: null, updatedAt: now };
    const ledgerPath = config.env.ledgerPath;
    // The ledger's identity and size before the read: an append during it makes the mark stale
    // (the next call reads again), never newer than what was read.
    const id = ledgerIdentity(ledgerPath, sessionId);
    const ev =
      readLatestBoundary(ledgerPath, sessionId, { approverRoots: config.env.approverRoots }) ?? undefined;
    const kept = cached?.boundary;
    const store = async (b: GateBoundary | null): Promise<GateState> => {
      try {
        if (b) return await storeGateBoundary(state, sessionId, b, now);
        return await withSessionLock(state, sessionId, () => {
          const again = readGateState(state, sessionId);
          if (again?.boundary) return again;
          return writeGateState(state, sessionId, null, now, again?.track, id);
        });
      } catch (e) {
        warn?.(`gate cache not updated (${(e as Error).message.split('\n')[0]}); answering from the ledger`);
        return { v: 2, sessionId, boundary: b, updatedAt: now };
      }
    };
    if (!ev) {
      // The cache knows of a boundary the ledger failed to record: an objection stands, no
      // objection cannot be confirmed. With neither, the session has not been compacted.
      if (kept && !isHealthy(kept.state)) return cached;
      if (kept) throw new Error('the ledger has no record of the cached boundary');
      return store(null);
    }
    if (kept && kept.id !== ev.boundaryId && !isHealthy(kept.state)) return cached;
    const b = gateBoundaryOf(ev, classifyEvidence(ev), taskRecordNames(config, label));
    if (id) b.ledgerId = id;
    return store(b);
  };
}
