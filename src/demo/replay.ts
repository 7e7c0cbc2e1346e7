/**
 * Replays classify-fixture boundaries (`examples/six-case/cases.json`) through the SDK extension:
 * for each case a pre capture, its approvals and a post observation, with the fixture's own
 * timestamps. The raw values go into the extension, which digests them; nothing else sees them.
 * Used by `npm run demo`, the wire test and the extension benchmark.
 */

import type { z } from 'zod';
import { eventOnlyRule } from '../classify/classify.js';
import { FixtureSchema, parseFixture } from '../fixture/cases.js';
import type { Continuity, DecisionInput, ObserveResult } from '../otel/types.js';
import type { DemoApprover } from './approver.js';

type Fixture = z.infer<typeof FixtureSchema>;
type FixtureCase = Fixture['cases'][number];
type FixtureSnapshot = NonNullable<FixtureCase['pre']>;

/** One replayed case: the session it ran as and what the calls returned. */
export interface ReplayedCase {
  /** The case id, also used as the session id. */
  id: string;
  /** What the event-only rule says (a pre and a post event were seen → healthy). */
  eventOnly: 'healthy' | 'unhealthy';
  /** The boundary id of the pre capture (or of the post, when the case has no pre). */
  boundaryId: string | undefined;
  /** The post observation's result, when the case has a post snapshot. */
  post: ObserveResult | undefined;
}

/**
 * Validates a fixture document (errors name the source and the field path) and returns its cases
 * with their raw values, ready for {@link replayCases}.
 */
export function loadReplayFixture(doc: unknown, source: string): Fixture['cases'] {
  parseFixture(doc, source); // throws InputError naming the source and every field at fault
  return FixtureSchema.parse(doc).cases;
}

function decisionsOf(snapshot: FixtureSnapshot): Record<string, DecisionInput> {
  const out: Record<string, DecisionInput> = {};
  for (const [name, o] of Object.entries(snapshot.decisions)) {
    const evidence = {
      revision: o.revision,
      observedAt: o.observedAt,
      ...(o.source !== undefined && { source: o.source }),
      ...(o.approvalRef !== undefined && { approvalRef: o.approvalRef }),
    };
    out[name] = o.digest !== undefined ? { digest: o.digest, ...evidence } : { value: o.value, ...evidence };
  }
  return out;
}

/**
 * Replays each case as its own session (the case id): capture pre, record approvals, observe post,
 * in that order and with the fixture's times. Returns what the extension returned per case.
 */
export async function replayCases(
  continuity: Continuity,
  cases: Fixture['cases'],
  options: { trigger?: 'manual' | 'auto'; approver?: DemoApprover } = {},
): Promise<ReplayedCase[]> {
  const out: ReplayedCase[] = [];
  for (const c of cases) {
    const trigger = options.trigger ?? 'auto';
    let boundaryId: string | undefined;
    if (c.pre) {
      const pre = await continuity.capturePre(c.id, decisionsOf(c.pre), {
        trigger,
        capturedAt: c.pre.capturedAt,
      });
      boundaryId = pre.boundaryId;
    }
    for (const a of c.approvals) {
      await continuity.recordApproval(c.id, {
        decision: a.decision,
        approvalRef: a.approvalRef,
        approvedBy: a.approvedBy,
        approvedAt: a.approvedAt,
        ...(a.fromDigest !== undefined ? { fromDigest: a.fromDigest } : { from: a.from }),
        ...(a.toDigest !== undefined ? { toDigest: a.toDigest } : { to: a.to }),
        ...(options.approver &&
          boundaryId !== undefined && { signer: options.approver.signerFor(boundaryId) }),
      } as Parameters<Continuity['recordApproval']>[1]);
    }
    let post: ObserveResult | undefined;
    if (c.post) {
      post = await continuity.observePost(c.id, decisionsOf(c.post), {
        capturedAt: c.post.capturedAt,
        ...(c.compactedAt !== undefined && { compactedAt: c.compactedAt }),
      });
      boundaryId ??= post.boundaryId;
    }
    out.push({
      id: c.id,
      eventOnly: eventOnlyRule(c.events ?? { pre: c.pre !== null, post: c.post !== null }),
      boundaryId,
      post,
    });
  }
  return out;
}
