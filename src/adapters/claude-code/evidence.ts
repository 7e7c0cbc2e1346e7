/**
 * The adapter's view of the ledger (src/ledger): append records, and read one session's latest
 * boundary. The ledger is the evidence; everything the adapter derives (the gate cache, the
 * printed state) is recomputed from it with the core classifier.
 *
 * Reads use the ledger's lean, lock-free reader; only appends open the ledger (lock, schema and
 * leak guard, one write, fsync).
 */
import type { Classification } from '../../classify/classify.js';
import { compareCriticality } from '../../decision/names.js';
import { loadChainKey } from '../../ledger/chain-key.js';
import type { BoundaryEvidence } from '../../ledger/evidence.js';
import { readLatestBoundary } from '../../ledger/latest.js';
import { Ledger } from '../../ledger/ledger.js';
import { resolveLedgerPath } from '../../ledger/paths.js';
import { classificationRecord, receiptIsCurrent } from '../../ledger/receipt.js';
import type { NewRecord } from '../../ledger/records.js';
import type { GateBoundary } from './state.js';

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

/** The ledger named by `--ledger`, else `CONTINUITY_LEDGER`, else the state directory; opened on first append. */
export function openEvidence(env: NodeJS.ProcessEnv, ledgerFlag?: string): EvidenceStore {
  const path = resolveLedgerPath({ flag: ledgerFlag, env });
  let ledger: Ledger | undefined;
  const open = () => {
    ledger ??= Ledger.open(path, { chainKey: loadChainKey({ env }), timeoutMs: LEDGER_LOCK_TIMEOUT_MS });
    return ledger;
  };
  return {
    path,
    async append(...records) {
      await open().appendBatch(records);
    },
    latest(sessionId) {
      return readLatestBoundary(path, sessionId) ?? undefined;
    },
    async receipt(evidence, classification, nowMs) {
      if (!receiptIsCurrent(evidence, classification)) {
        await open().append(classificationRecord(evidence, classification, nowMs));
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
