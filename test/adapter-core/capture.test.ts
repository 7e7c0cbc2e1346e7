/**
 * The pure parts of capture: approved changes carried into the next pre snapshot, and the token
 * counts read from a Claude Code transcript (numbers only).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { compactBoundaryTokens, lastReplyTokens } from '../../src/adapters/claude-code/transcript.js';
import { CARRIED_SOURCE, carryForward } from '../../src/adapters/core/capture.js';
import type { Approval, DecisionMap } from '../../src/decision/model.js';
import { digestValue } from '../../src/digest/digest.js';

const A = digestValue('A');
const B = digestValue('B');
const C = digestValue('C');
const T = '2026-12-01T10:00:00Z';

function approval(decision: string, from: string, to: string, ref: string): Approval {
  return { decision, fromDigest: from, toDigest: to, approvalRef: ref, approvedBy: 'human-1', approvedAt: T };
}

const PRE: DecisionMap = {
  scope: { digest: A, revision: 2, observedAt: T, source: 'task-record' },
  target: { digest: digestValue('main'), revision: 1, observedAt: T, source: 'task-record' },
};

describe('carryForward', () => {
  it('leaves decisions without an approval leaving their digest as they are', () => {
    const r = carryForward(PRE, [approval('scope', B, C, 'x'), approval('target', A, B, 'y')]);
    expect(r).toEqual({ decisions: PRE, carried: [] });
  });

  it('follows a chain A→B→C to its end: one revision per step, the last reference', () => {
    const r = carryForward(PRE, [approval('scope', A, B, 'CHG-1'), approval('scope', B, C, 'CHG-2')]);
    expect(r.carried).toEqual(['scope']);
    expect(r.decisions.scope).toEqual({
      digest: C,
      revision: 4,
      observedAt: T,
      source: CARRIED_SOURCE,
      approvalRef: 'CHG-2',
    });
    expect(r.decisions.target).toEqual(PRE.target);
  });

  it('takes the latest approval when two leave the same digest, and never loops', () => {
    expect(
      carryForward(PRE, [approval('scope', A, B, 'old'), approval('scope', A, C, 'new')]).decisions.scope
        ?.digest,
    ).toBe(C);
    const cycle = carryForward(PRE, [approval('scope', A, B, 'go'), approval('scope', B, A, 'back')]);
    expect(cycle.decisions.scope?.digest).toBe(B);
    expect(cycle.decisions.scope?.revision).toBe(3);
  });
});

describe('Claude Code transcript numbers', () => {
  let dir = '';
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'transcript-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  function transcript(records: unknown[]): string {
    const p = join(dir, 't.jsonl');
    writeFileSync(p, `${records.map((r) => JSON.stringify(r)).join('\n')}\n`);
    return p;
  }

  it('reads the last reply’s context fill (input, cache and output tokens)', () => {
    const p = transcript([
      { type: 'assistant', message: { usage: { input_tokens: 5, output_tokens: 1 } } },
      { type: 'user', message: 'assistant "usage" in a user line is not a reply' },
      {
        type: 'assistant',
        message: {
          usage: {
            input_tokens: 100,
            cache_read_input_tokens: 50,
            cache_creation_input_tokens: 25,
            output_tokens: 10,
          },
        },
      },
    ]);
    expect(lastReplyTokens(p)).toBe(185);
    expect(lastReplyTokens(join(dir, 'missing.jsonl'))).toBeUndefined();
  });

  it('takes the latest compact_boundary written since the capture, and none older', () => {
    const p = transcript([
      {
        type: 'system',
        subtype: 'compact_boundary',
        timestamp: '2026-12-01T09:00:00Z',
        compactMetadata: { preTokens: 1, postTokens: 2 },
      },
      {
        type: 'system',
        subtype: 'compact_boundary',
        timestamp: '2026-12-01T10:00:05Z',
        compactMetadata: { preTokens: 190010, postTokens: 2632 },
      },
    ]);
    expect(compactBoundaryTokens(p, Date.parse('2026-12-01T10:00:00Z'))).toEqual({
      before: 190010,
      after: 2632,
    });
    expect(compactBoundaryTokens(p, Date.parse('2026-12-01T11:00:00Z'))).toBeUndefined();
  });
});
