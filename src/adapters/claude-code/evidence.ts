/**
 * The adapter's view of the ledger (src/ledger): append records, and read one session's latest
 * boundary as classifier input. The ledger is the evidence; everything the adapter derives
 * (the gate cache, the printed state) is recomputed from it.
 */
import type { Classification } from '../../classify/classify.js';
import { classify } from '../../classify/classify.js';
import type { Approval, Snapshot } from '../../decision/model.js';
import { Ledger, loadChainKey, resolveLedgerPath } from '../../ledger/index.js';
import type { NewRecord } from '../../ledger/records.js';
import type { GateBoundary } from './session-state.js';

/** One session's latest boundary, ready for the classifier. */
export interface BoundaryEvidence {
  boundaryId: string;
  trigger: 'manual' | 'auto' | null;
  pre: Snapshot | null;
  post: Snapshot | null;
  approvals: Approval[];
  /** When the runtime reported the compaction (PostCompact / SessionStart compact). */
  compactedAt: string | null;
  /** Why the pre snapshot is missing, when an evidence_missing record says so. */
  evidenceMissing: string | null;
}

/** Appending to and reading from the ledger. */
export interface EvidenceStore {
  /** Appends one record (lock, one write, fsync). */
  append(record: NewRecord): Promise<void>;
  /** The session's latest boundary, or `undefined` when the ledger has none. */
  latest(sessionId: string): Promise<BoundaryEvidence | undefined>;
  close(): Promise<void>;
}

/** Opens the ledger named by `CONTINUITY_LEDGER` (or the default), with the chain key if configured. */
export async function openEvidence(env: NodeJS.ProcessEnv, ledgerFlag?: string): Promise<EvidenceStore> {
  const path = resolveLedgerPath({ flag: ledgerFlag, env });
  const chainKey = loadChainKey({ env });
  const ledger = await Ledger.open(path, { chainKey });
  return {
    async append(record) {
      await ledger.append(record);
    },
    async latest(sessionId) {
      const ev = await ledger.latestBoundary(sessionId);
      if (!ev) return undefined;
      return toEvidence(sessionId, ev as unknown as LedgerBoundary);
    },
    async close() {
      await (ledger as unknown as { close?: () => Promise<void> | void }).close?.();
    },
  };
}

// The shape `ledger.latestBoundary` returns (see src/ledger).
interface LedgerBoundary {
  boundaryId?: string;
  pre: (Snapshot & { boundaryId: string; trigger?: 'manual' | 'auto' }) | null;
  post: (Snapshot & { boundaryId: string }) | null;
  approvals: Approval[];
  boundary: { boundaryId: string; compactedAt: string; trigger?: 'manual' | 'auto' } | null;
  evidenceMissing: { boundaryId: string; phase: 'pre' | 'post'; reason: string } | null;
}

function toEvidence(sessionId: string, ev: LedgerBoundary): BoundaryEvidence {
  const snap = (s: LedgerBoundary['pre']): Snapshot | null =>
    s
      ? {
          sessionId,
          capturedAt: s.capturedAt,
          normalizerVersion: s.normalizerVersion,
          decisions: s.decisions,
        }
      : null;
  const boundaryId =
    ev.boundaryId ??
    ev.pre?.boundaryId ??
    ev.boundary?.boundaryId ??
    ev.evidenceMissing?.boundaryId ??
    ev.post?.boundaryId ??
    '';
  return {
    boundaryId,
    trigger: ev.pre?.trigger ?? ev.boundary?.trigger ?? null,
    pre: snap(ev.pre),
    post: snap(ev.post),
    approvals: ev.approvals.map((a) => ({
      decision: a.decision,
      fromDigest: a.fromDigest,
      toDigest: a.toDigest,
      approvalRef: a.approvalRef,
      approvedBy: a.approvedBy,
      approvedAt: a.approvedAt,
    })),
    compactedAt: ev.boundary?.compactedAt ?? null,
    evidenceMissing:
      ev.evidenceMissing && ev.evidenceMissing.phase === 'pre' ? ev.evidenceMissing.reason : null,
  };
}

/** Classifies a boundary: the compaction time is the runtime's report when there is one. */
export function classifyEvidence(ev: BoundaryEvidence): Classification {
  const input: Parameters<typeof classify>[0] = { pre: ev.pre, post: ev.post, approvals: ev.approvals };
  const at = ev.compactedAt ?? ev.pre?.capturedAt;
  if (at) input.compactedAt = at;
  return classify(input);
}

/** What the gate caches for a classified boundary (names, digests, states; never values). */
export function gateBoundaryOf(
  ev: BoundaryEvidence,
  c: Classification,
  fallbackNames: readonly string[],
): GateBoundary {
  const names = ev.pre ? Object.keys(ev.pre.decisions) : [...fallbackNames];
  const b: GateBoundary = {
    id: ev.boundaryId,
    state: c.state,
    reason: c.reason,
    primaryDecision: c.primaryDecision,
    decisionNames: names,
  };
  if (ev.compactedAt) b.compactedAt = ev.compactedAt;
  if (!ev.pre && ev.evidenceMissing) b.evidenceMissing = ev.evidenceMissing;
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
