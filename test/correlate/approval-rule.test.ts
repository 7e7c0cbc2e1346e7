/**
 * One approval rule for the ledger and `continuity serve` (issue 26): an approval counts toward a
 * boundary only when it was recorded after that boundary's pre snapshot. The service counted an
 * approval that arrived up to the reorder grace (5 s) before the next pre; the ledger did not.
 * Each case is written to a real ledger and read back the way `status` and the gate read it, and
 * sent to the correlator `continuity serve` runs, in ledger order and in the arrival order that
 * used to differ (approvals first); all must give the same state.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { approvalCountsTowardPre } from '../../src/classify/approval-rule.js';
import { Correlator } from '../../src/correlate/correlator.js';
import type { Approval, Snapshot } from '../../src/decision/model.js';
import { readLatestBoundary } from '../../src/ledger/latest.js';
import { Ledger } from '../../src/ledger/ledger.js';
import { classifyEvidence } from '../../src/ledger/receipt.js';
import type { CompactionEvent } from '../../src/otel/attributes.js';
import { utcSecond as t, tempDir } from '../ledger/helpers.js';
import { testApprover } from '../support/approver.js';
import { A, approvalEvent, B, postEvent, preEvent, snap } from './helpers.js';

type Step =
  | { kind: 'pre' | 'post'; boundary: string; scope: string; at: number }
  | { kind: 'approval'; from: string; to: string; at: number };

const SESSION = 's';
/** The human's key: every approval here is signed and trusted, so only the time rule decides. */
const APPROVER = testApprover();

function snapshotAt(scope: string, at: number): Snapshot {
  return snap(SESSION, t(at), scope);
}

/** The boundary an approval is given for: the latest pre at or before it, else the first. */
function boundaryOf(steps: readonly Step[], at: number): string {
  let first: string | undefined;
  let b: string | undefined;
  for (const s of steps) {
    if (s.kind !== 'pre') continue;
    first ??= s.boundary;
    if (s.at <= at) b = s.boundary;
  }
  return b ?? first!;
}

function approvalAt(steps: readonly Step[], from: string, to: string, at: number): Approval {
  return APPROVER.sign(unsignedApprovalAt(from, to, at), SESSION, boundaryOf(steps, at));
}

function unsignedApprovalAt(from: string, to: string, at: number): Approval {
  return {
    decision: 'scope',
    fromDigest: from,
    toDigest: to,
    approvalRef: `approval-${at}`,
    approvedBy: 'reviewer-17',
    approvedAt: t(at),
  };
}

const tmp = tempDir('approval-rule-');
afterAll(() => tmp.cleanup());
let n = 0;

/** The state the ledger gives the latest boundary after `steps`, appended in order. */
async function ledgerState(steps: readonly Step[]): Promise<string> {
  const path = join(tmp.dir, `case-${++n}`, 'ledger.jsonl');
  const ledger = Ledger.open(path);
  // The approver key the approvals are signed with, trusted by the ledger (its own record).
  await ledger.append(APPROVER.keyRecord());
  for (const s of steps) {
    if (s.kind === 'approval')
      await ledger.append({ type: 'approval', sessionId: SESSION, ...approvalAt(steps, s.from, s.to, s.at) });
    else {
      const { sessionId: _, ...snapshot } = snapshotAt(s.scope, s.at);
      await ledger.append({
        type: 'snapshot',
        phase: s.kind,
        sessionId: SESSION,
        boundaryId: s.boundary,
        ...snapshot,
      });
    }
  }
  await ledger.close();
  return classifyEvidence(readLatestBoundary(path, SESSION)!).state;
}

function event(steps: readonly Step[], s: Step): CompactionEvent {
  if (s.kind === 'approval') return approvalEvent(SESSION, approvalAt(steps, s.from, s.to, s.at));
  const make = s.kind === 'pre' ? preEvent : postEvent;
  return make(snapshotAt(s.scope, s.at), { boundaryId: s.boundary, runtime: 'sdk' });
}

/**
 * The state `continuity serve`'s correlator gives the latest boundary when the steps arrive in
 * `order` (indexes into `steps`), 1 s apart: within the 5 s reorder grace.
 */
function serviceState(steps: readonly Step[], order: readonly number[]): string | undefined {
  const c = new Correlator({ reorderGraceMs: 5_000, approverKeys: [APPROVER.publicKeyHex] });
  const start = Date.parse(t(100));
  let last: string | undefined;
  order.forEach((i, k) => {
    for (const r of c.observe(event(steps, steps[i]!), start + k * 1000)) last = r.classification.state;
  });
  return last;
}

/** Ledger order, and the same steps with every approval moved first (as an OTLP batch may bring them). */
function orders(steps: readonly Step[]): number[][] {
  const ledger = steps.map((_, i) => i);
  const approvalsFirst = [...ledger].sort(
    (a, b) => Number(steps[b]!.kind === 'approval') - Number(steps[a]!.kind === 'approval'),
  );
  return [ledger, approvalsFirst];
}

const CASES: Array<{ name: string; steps: Step[]; want: string }> = [
  {
    name: 'an approval recorded 3 s before the pre does not count',
    steps: [
      { kind: 'approval', from: A, to: B, at: 0 },
      { kind: 'pre', boundary: 'b1', scope: A, at: 3 },
      { kind: 'post', boundary: 'b1', scope: B, at: 10 },
    ],
    want: 'conflicting',
  },
  {
    name: 'an approval recorded between the pre and the post counts, whatever order it arrives in',
    steps: [
      { kind: 'pre', boundary: 'b1', scope: A, at: 0 },
      { kind: 'approval', from: A, to: B, at: 3 },
      { kind: 'post', boundary: 'b1', scope: B, at: 10 },
    ],
    want: 'approved_change',
  },
  {
    name: 'an approval recorded in the same second as the pre counts',
    steps: [
      { kind: 'pre', boundary: 'b1', scope: A, at: 0 },
      { kind: 'approval', from: A, to: B, at: 0 },
      { kind: 'post', boundary: 'b1', scope: B, at: 10 },
    ],
    want: 'approved_change',
  },
  {
    name: 'an approval given for the previous boundary does not count toward the next',
    steps: [
      { kind: 'pre', boundary: 'b1', scope: A, at: 0 },
      { kind: 'approval', from: A, to: B, at: 2 },
      { kind: 'post', boundary: 'b1', scope: A, at: 5 },
      { kind: 'pre', boundary: 'b2', scope: A, at: 10 },
      { kind: 'post', boundary: 'b2', scope: B, at: 15 },
    ],
    want: 'conflicting',
  },
  {
    name: 'an approval recorded after the post counts once the agent re-observes',
    steps: [
      { kind: 'pre', boundary: 'b1', scope: A, at: 0 },
      { kind: 'post', boundary: 'b1', scope: B, at: 10 },
      { kind: 'approval', from: A, to: B, at: 12 },
      { kind: 'post', boundary: 'b1', scope: B, at: 14 },
    ],
    want: 'approved_change',
  },
];

describe('approval rule: the ledger and continuity serve agree', () => {
  for (const c of CASES) {
    it(c.name, async () => {
      expect(await ledgerState(c.steps)).toBe(c.want);
      for (const order of orders(c.steps)) {
        expect(serviceState(c.steps, order), `arrival order ${order.join(',')}`).toBe(c.want);
      }
    });
  }
});

describe('approvalCountsTowardPre', () => {
  it('counts an approval at or after the pre, never before it, nor one whose time does not parse', () => {
    expect(approvalCountsTowardPre(t(5), t(5))).toBe(true);
    expect(approvalCountsTowardPre('2026-11-30T12:00:05.001Z', t(5))).toBe(true);
    expect(approvalCountsTowardPre('2026-11-30T12:00:04.999Z', t(5))).toBe(false);
    expect(approvalCountsTowardPre('yesterday', t(5))).toBe(false);
    expect(approvalCountsTowardPre(t(0), null)).toBe(true);
  });
});
