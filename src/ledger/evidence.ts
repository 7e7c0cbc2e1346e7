/**
 * One boundary's evidence, assembled from ledger records: what `classify()` needs and what the
 * gate and `status` show. The classification itself is never read from the ledger in place of
 * this evidence; it is recomputed from it.
 *
 * The latest boundary of a session is the one that appeared last (by the seq of its first
 * record): a new pre snapshot opens a new boundary, and a late record for an older boundary does
 * not make that boundary current again. An approval counts only when it was recorded after the
 * boundary's pre snapshot (ledger order: a higher seq than the latest pre record), so an approval
 * given before the decisions it would change were captured, or for an earlier boundary, never
 * turns this boundary's change into `approved_change`. Without a pre snapshot, approvals after
 * the boundary's first record are kept (the classifier answers `pre_snapshot_missing` anyway).
 *
 * **Only a human's approval counts.** Each approval is judged against the approver keys pinned
 * beside the ledger (`../authority/trust.ts`): it counts only with a valid signature by a trusted
 * key over its own fields and this boundary. An unsigned, badly signed or foreign-key approval,
 * or a signed one copied from another boundary, is kept in `approvalAttempts` as evidence of an
 * attempt and never reaches `classify()`.
 *
 * Imports only types (erased) and lean local modules (`approval-rule.ts`).
 */

import { type ApprovalProof, judgeApproval, type TrustedKeys } from '../authority/trust.js';
import { approvalCountsTowardPre } from '../classify/approval-rule.js';
import type { ActivityState, Approval, Snapshot } from '../decision/model.js';
import type { EntryKind } from './session-index.js';
import { type Phase, PROVENANCES, type Provenance, type Trigger } from './types.js';

/** The runtime's report of the compaction. */
export interface BoundaryReport {
  seq: number;
  compactedAt: string;
  runtime?: string;
  trigger?: Trigger;
  /** Context fill before the compaction, in tokens, when the runtime reported it. */
  tokensBefore?: number;
  /** Context fill after the compaction, in tokens, when the runtime reported it. */
  tokensAfter?: number;
}

/** A snapshot that could not be taken. */
export interface MissingEvidence {
  seq: number;
  phase: Phase;
  /** A reason code such as `capture_failed`. */
  reason: string;
  at: string;
}

/** The latest classification receipt recorded for the boundary (informational only). */
export interface ClassificationReceipt {
  seq: number;
  state: string;
  reason: string;
  classifiedAt: string;
  /** Seqs of the evidence the receipt was computed from. */
  evidence: { pre: number | null; post: number | null; boundary: number | null; approvals: number[] };
}

/** An approval that does not count: kept as the evidence of an attempt. */
export interface ApprovalAttempt {
  seq: number;
  decision: string;
  approvalRef: string;
  /** Why it does not count. */
  result: Exclude<ApprovalProof, 'signed'>;
  /** The key id it claims, when it names one. */
  keyId?: string;
}

/** The evidence of one session's boundary, ready for `classify()`. */
export interface BoundaryEvidence {
  sessionId: string;
  boundaryId: string;
  /** The latest pre snapshot of the boundary, or null when none was taken. */
  pre: Snapshot | null;
  /** The latest post snapshot of the boundary, or null when none was observed yet. */
  post: Snapshot | null;
  /** Where the latest post snapshot's restatement came from, when it says (see {@link Provenance}). */
  provenance?: Provenance;
  /**
   * The session's approvals recorded after the boundary's pre snapshot, in ledger order, that a
   * trusted approver key signed for this boundary: the only ones that count.
   */
  approvals: Approval[];
  /** Approvals recorded after the pre snapshot that do not count (unsigned, bad, foreign key). */
  approvalAttempts: ApprovalAttempt[];
  /** The approver key chain's break, when the pin beside the ledger does not hold. */
  approverKeyChanged?: string;
  /** The runtime's report of the compaction, or null. */
  boundary: BoundaryReport | null;
  /** Snapshots that could not be taken for this boundary, in ledger order. */
  evidenceMissing: MissingEvidence[];
  /** When the compaction happened (the boundary report's time), for `classify()`. */
  compactedAt?: string;
  /** The runtime, from the pre snapshot or the boundary report. */
  runtime?: string;
  /** The trigger, from the pre snapshot or the boundary report. */
  trigger?: Trigger;
  /** The seqs of the records used. */
  seqs: { pre: number | null; post: number | null; boundary: number | null; approvals: number[] };
  /** The latest classification receipt of this boundary, or null. */
  receipt: ClassificationReceipt | null;
  /**
   * Where each record used (pre, post, boundary report, approvals, missing evidence, receipt) is
   * in the ledger: byte offset and length of its line. Set by the ledger readers, for the spot
   * check `status` runs on what it shows.
   */
  locations?: RecordLocation[];
}

/** Where one record is in the ledger file. */
export interface RecordLocation {
  seq: number;
  /** Byte offset of its line. */
  offset: number;
  /** Bytes of the line, newline included. */
  length: number;
}

/** The latest activity state of a session. */
export interface ActivityEvidence {
  seq: number;
  state: ActivityState;
  at: string;
}

/** A record or a handle to one, with what the index knows about it. */
export interface Candidate<T> {
  seq: number;
  kind: EntryKind;
  /** Boundary id, `-` for approvals. */
  tag: string;
  item: T;
}

/**
 * Picks, from one session's candidates fed in seq order, the ones that make up its latest
 * boundary's evidence. Works on index entries (records read later) and on parsed records alike.
 */
export class BoundarySelector<T> {
  boundaryId: string | null = null;
  pre: Candidate<T> | undefined;
  post: Candidate<T> | undefined;
  boundary: Candidate<T> | undefined;
  receipt: Candidate<T> | undefined;
  missing: Candidate<T>[] = [];
  /** Every approval of the session fed so far; {@link counted} are the ones that count. */
  approvals: Candidate<T>[] = [];
  /** The seq of the current boundary's first record. */
  openedSeq = 0;
  private readonly _seen = new Set<string>();

  /** Feeds one candidate; candidates must arrive in increasing seq order. */
  feed(c: Candidate<T>): void {
    // Activity has its own reader; key certificates belong to no session (../authority/trust.ts).
    if (c.kind === 'activity' || c.kind === 'approver_key') return;
    if (c.kind === 'approval') {
      this.approvals.push(c);
      return;
    }
    if (c.kind === 'classification') {
      // A receipt describes a boundary; it never opens one.
      if (c.tag === this.boundaryId) this.receipt = c;
      return;
    }
    if (!this._seen.has(c.tag)) {
      this._seen.add(c.tag);
      this.boundaryId = c.tag;
      this.openedSeq = c.seq;
      this.pre = this.post = this.boundary = this.receipt = undefined;
      this.missing = [];
    } else if (c.tag !== this.boundaryId) {
      return;
    }
    switch (c.kind) {
      case 'pre':
        this.pre = c;
        break;
      case 'post':
        this.post = c;
        break;
      case 'boundary':
        this.boundary = c;
        break;
      case 'missing_pre':
      case 'missing_post':
        this.missing.push(c);
        break;
    }
  }

  /** The approvals that count for the current boundary: recorded after its pre snapshot. */
  counted(): Candidate<T>[] {
    const after = this.pre?.seq ?? this.openedSeq;
    return this.approvals.filter((a) => a.seq > after);
  }

  /** Every candidate whose record the evidence is built from. */
  needed(): Candidate<T>[] {
    const out = [...this.counted(), ...this.missing];
    for (const c of [this.pre, this.post, this.boundary, this.receipt]) if (c) out.push(c);
    return out.sort((a, b) => a.seq - b.seq);
  }
}

/** A record read from the ledger whose shape does not fit its type. */
export class RecordShapeError extends Error {
  readonly seq: number;
  constructor(seq: number, message: string) {
    super(`ledger record seq ${seq}: ${message}; run \`continuity ledger verify\``);
    this.name = 'RecordShapeError';
    this.seq = seq;
  }
}

type Rec = Record<string, unknown>;

function str(rec: Rec, key: string, seq: number): string {
  const v = rec[key];
  if (typeof v !== 'string') throw new RecordShapeError(seq, `${key}: expected a string`);
  return v;
}

function toSnapshot(rec: Rec, seq: number): Snapshot {
  const decisions = rec.decisions;
  if (decisions === null || typeof decisions !== 'object' || Array.isArray(decisions)) {
    throw new RecordShapeError(seq, 'decisions: expected an object');
  }
  for (const [name, d] of Object.entries(decisions as Rec)) {
    const o = d as Rec | null;
    if (!o || typeof o.digest !== 'string' || typeof o.observedAt !== 'string') {
      throw new RecordShapeError(seq, `decisions.${name}: expected {digest, revision, observedAt}`);
    }
  }
  const normalizerVersion = rec.normalizerVersion;
  if (typeof normalizerVersion !== 'number')
    throw new RecordShapeError(seq, 'normalizerVersion: expected a number');
  return {
    sessionId: str(rec, 'sessionId', seq),
    capturedAt: str(rec, 'capturedAt', seq),
    normalizerVersion,
    decisions: decisions as Snapshot['decisions'],
  };
}

function toApproval(rec: Rec, seq: number): Approval {
  const opt = (key: 'boundaryId' | 'keyId' | 'signature') =>
    typeof rec[key] === 'string' ? { [key]: rec[key] as string } : {};
  return {
    decision: str(rec, 'decision', seq),
    fromDigest: str(rec, 'fromDigest', seq),
    toDigest: str(rec, 'toDigest', seq),
    approvalRef: str(rec, 'approvalRef', seq),
    approvedBy: str(rec, 'approvedBy', seq),
    approvedAt: str(rec, 'approvedAt', seq),
    ...opt('boundaryId'),
    ...opt('keyId'),
    ...opt('signature'),
  };
}

function optTrigger(rec: Rec): Trigger | undefined {
  return rec.trigger === 'manual' || rec.trigger === 'auto' ? rec.trigger : undefined;
}

/**
 * Builds the evidence from a selector whose needed candidates have been resolved to parsed
 * records by `load`. Returns null when the session has no boundary.
 */
export function buildEvidence<T>(
  sessionId: string,
  sel: BoundarySelector<T>,
  load: (c: Candidate<T>) => Rec,
  trust: TrustedKeys,
): BoundaryEvidence | null {
  if (sel.boundaryId === null) return null;
  const boundaryId = sel.boundaryId;
  const preRec = sel.pre ? load(sel.pre) : undefined;
  const postRec = sel.post ? load(sel.post) : undefined;
  const bRec = sel.boundary ? load(sel.boundary) : undefined;
  const rRec = sel.receipt ? load(sel.receipt) : undefined;
  // Recorded after the pre by ledger order (counted) and by the records' own times: the rule the
  // service applies too, where only the times are known (approval-rule.ts); then judged by its proof.
  const preCapturedAt = preRec && typeof preRec.capturedAt === 'string' ? preRec.capturedAt : null;
  const approvals: Array<{ seq: number; approval: Approval }> = [];
  const approvalAttempts: ApprovalAttempt[] = [];
  for (const c of sel.counted()) {
    const rec = load(c);
    // A malformed record is left for toApproval to report.
    if (typeof rec.approvedAt === 'string' && !approvalCountsTowardPre(rec.approvedAt, preCapturedAt))
      continue;
    const approval = toApproval(rec, c.seq);
    const result = judgeApproval({ ...approval, sessionId }, trust, boundaryId);
    if (result === 'signed') approvals.push({ seq: c.seq, approval });
    else
      approvalAttempts.push({
        seq: c.seq,
        decision: approval.decision,
        approvalRef: approval.approvalRef,
        result,
        ...(approval.keyId !== undefined && { keyId: approval.keyId }),
      });
  }
  const boundary: BoundaryReport | null =
    bRec && sel.boundary
      ? {
          seq: sel.boundary.seq,
          compactedAt: str(bRec, 'compactedAt', sel.boundary.seq),
          ...(typeof bRec.runtime === 'string' && { runtime: bRec.runtime }),
          ...(optTrigger(bRec) && { trigger: optTrigger(bRec) }),
          ...(typeof bRec.tokensBefore === 'number' && { tokensBefore: bRec.tokensBefore }),
          ...(typeof bRec.tokensAfter === 'number' && { tokensAfter: bRec.tokensAfter }),
        }
      : null;
  const runtime =
    (typeof preRec?.runtime === 'string' ? preRec.runtime : undefined) ??
    (typeof bRec?.runtime === 'string' ? bRec.runtime : undefined);
  const trigger = (preRec && optTrigger(preRec)) ?? (bRec && optTrigger(bRec));
  let receipt: ClassificationReceipt | null = null;
  if (rRec && sel.receipt) {
    const ev = rRec.evidence as ClassificationReceipt['evidence'] | undefined;
    receipt = {
      seq: sel.receipt.seq,
      state: str(rRec, 'state', sel.receipt.seq),
      reason: str(rRec, 'reason', sel.receipt.seq),
      classifiedAt: str(rRec, 'classifiedAt', sel.receipt.seq),
      evidence: ev ?? { pre: null, post: null, boundary: null, approvals: [] },
    };
  }
  return {
    sessionId,
    boundaryId: sel.boundaryId,
    pre: preRec && sel.pre ? toSnapshot(preRec, sel.pre.seq) : null,
    post: postRec && sel.post ? toSnapshot(postRec, sel.post.seq) : null,
    ...(postRec && PROVENANCES.includes(postRec.provenance as Provenance)
      ? { provenance: postRec.provenance as Provenance }
      : {}),
    approvals: approvals.map((a) => a.approval),
    approvalAttempts,
    ...(trust.broken && { approverKeyChanged: trust.broken.message }),
    boundary,
    evidenceMissing: sel.missing.map((c) => {
      const r = load(c);
      return {
        seq: c.seq,
        phase: c.kind === 'missing_post' ? 'post' : 'pre',
        reason: str(r, 'reason', c.seq),
        at: str(r, 'at', c.seq),
      };
    }),
    ...(boundary && { compactedAt: boundary.compactedAt }),
    ...(runtime !== undefined && { runtime }),
    ...(trigger !== undefined && { trigger }),
    seqs: {
      pre: sel.pre?.seq ?? null,
      post: sel.post?.seq ?? null,
      boundary: sel.boundary?.seq ?? null,
      approvals: approvals.map((a) => a.seq),
    },
    receipt,
  };
}
