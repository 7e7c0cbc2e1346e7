/**
 * The boundary assembly as a pure function, against every hook order recorded from the real
 * Claude Code 2.1.328 (test/fixtures/claude-code-2.1.328/, sanitized: paths, ids and free text
 * replaced), every order of the post-compaction signals with any of them missing, and the orders
 * the other runtimes were observed to send (Codex CLI 0.171.0, OpenCode 1.18.33, Agent SDK 0.3.328).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { boundaryEventOf } from '../../src/adapters/claude-code/events.js';
import { toPayload } from '../../src/adapters/claude-code/payload.js';
import {
  type AssemblyInput,
  type AssemblyOutcome,
  assemble,
  type BoundaryTrack,
  DUPLICATE_WINDOW_MS,
  emptyTrack,
} from '../../src/adapters/core/boundary.js';
import type { BoundaryEvent } from '../../src/adapters/core/events.js';
import { ROOT } from '../claude-code/harness.js';

const FIXTURES = join(ROOT, 'test', 'fixtures', 'claude-code-2.1.328');
const T0 = Date.parse('2026-12-01T09:00:00Z');

interface Replay {
  track: BoundaryTrack<string>;
  outcomes: AssemblyOutcome[];
  /** Ids of the pre captures, in order. */
  pres: string[];
  /** Boundaries opened, in order, with whether they had a pre capture. */
  opened: Array<{ id: string; pre: string | null }>;
}

/** Feeds core boundary events through the assembly; ids are `pre-N` for pres, `fresh-N` otherwise. */
function feed(events: BoundaryEvent[], into?: Replay): Replay {
  const r: Replay = into ?? { track: emptyTrack<string>(), outcomes: [], pres: [], opened: [] };
  for (const [i, event] of events.entries()) {
    let input: AssemblyInput<string>;
    if (event.type === 'pre') {
      const id = `pre-${r.pres.length + 1}`;
      r.pres.push(id);
      input = { event, boundaryId: id, capture: `capture of ${id}` };
    } else if (event.type === 'compacted') {
      input = { event, boundaryId: `fresh-${r.outcomes.length + i + 1}` };
    } else {
      input = { event };
    }
    const step = assemble(r.track, input);
    r.track = step.track;
    r.outcomes.push(step.outcome);
    if (step.outcome.kind === 'confirmed' || step.outcome.kind === 'opened_pre_missing') {
      r.opened.push({ id: step.outcome.boundaryId, pre: step.track.current!.pre?.boundaryId ?? null });
    }
  }
  return r;
}

function at(ms: number): string {
  return new Date(T0 + ms).toISOString();
}

/** A recorded Claude Code fixture replayed per session: payloads through the adapter's own translation. */
function replayFixture(name: string, dir = FIXTURES): Map<string, Replay> {
  const rows = JSON.parse(readFileSync(join(dir, name), 'utf8')) as Array<{
    event: string;
    fields: Record<string, unknown>;
  }>;
  const sessions = new Map<string, Replay>();
  rows.forEach((row, i) => {
    const parsed = toPayload(row.fields);
    expect(parsed.ok, `${name}[${i}] ${parsed.problem ?? ''}`).toBe(true);
    const p = parsed.payload!;
    // Hooks ran 0.1–0.25 s each; the arrival order is the recorded one.
    const event = boundaryEventOf(p, at(i * 300));
    if (!event) return;
    sessions.set(p.sessionId, feed([event], sessions.get(p.sessionId)));
  });
  return sessions;
}

/** What each recorded order must assemble into: compactions per session (all with their pre capture). */
const EXPECTED: Record<string, Record<string, { boundaries: number; pendingLeft: boolean }>> = {
  'auto-compact-lone-precompact.json': { '<session-1>': { boundaries: 1, pendingLeft: false } },
  'auto-compact.json': { '<session-1>': { boundaries: 1, pendingLeft: false } },
  'concurrency-stream.json': { '<session-1>': { boundaries: 1, pendingLeft: false } },
  'instructions-loaded.json': { '<session-1>': { boundaries: 1, pendingLeft: false } },
  'instructions-multi.json': { '<session-1>': { boundaries: 1, pendingLeft: false } },
  'manual-compact-stream.json': { '<session-1>': { boundaries: 1, pendingLeft: false } },
  'manual-compact.json': { '<session-1>': { boundaries: 2, pendingLeft: false } },
  'precompact-auto-exit2-blocked.json': { '<session-1>': { boundaries: 0, pendingLeft: true } },
  'precompact-exit2-blocked.json': { '<session-1>': { boundaries: 0, pendingLeft: true } },
  'precompact-stdout-manual.json': { '<session-1>': { boundaries: 2, pendingLeft: false } },
  'transcript.json': { '<session-1>': { boundaries: 2, pendingLeft: false } },
};

describe('boundary assembly', () => {
  describe('every order recorded from the real Claude Code 2.1.337 (the Agent SDK 0.3.337 bundle)', () => {
    // Past the level where 2.1.337 may write a summary early, under the threshold, then over it
    // (test/claude-code-e2e/current.test.ts); and an interrupted turn.
    const dir = join(ROOT, 'test', 'fixtures', 'claude-code-2.1.337');
    it('auto-compact.json: one boundary with its PreCompact capture, nothing left pending', () => {
      const r = replayFixture('auto-compact.json', dir).get('<session-1>')!;
      expect(r.opened).toHaveLength(1);
      expect(r.opened[0]!.pre).toBe(r.opened[0]!.id);
      expect(r.track.pending).toBeNull();
    });
    it('interrupt-client.json: an interrupt is no boundary event', () => {
      expect(replayFixture('interrupt-client.json', dir).size).toBe(0);
    });
  });

  describe('every order recorded from the real Claude Code 2.1.328', () => {
    const files = readdirSync(FIXTURES).filter((f) => f.endsWith('.json'));

    it('has a recorded fixture for each expectation', () => {
      for (const name of Object.keys(EXPECTED)) expect(files).toContain(name);
      expect(files.length).toBeGreaterThanOrEqual(20);
    });

    for (const name of files) {
      it(`${name}: one boundary per real compaction, each with its own PreCompact capture`, () => {
        const sessions = replayFixture(name);
        const want = EXPECTED[name] ?? {};
        for (const [session, w] of Object.entries(want)) {
          const r = sessions.get(session);
          expect(r, session).toBeDefined();
          expect(r!.opened.length).toBe(w.boundaries);
          // Every boundary is the one its PreCompact opened, never a pre-missing one.
          for (const b of r!.opened) expect(b.pre).toBe(b.id);
          expect(r!.outcomes.filter((o) => o.kind === 'opened_pre_missing')).toEqual([]);
          expect(r!.track.pending !== null).toBe(w.pendingLeft);
        }
        // Sessions without a compaction (startup, resume, fork, clear, subagent, gate runs) open nothing.
        for (const [session, r] of sessions) if (!want[session]) expect(r.opened).toEqual([]);
      });
    }

    it('the lone PreCompact(auto) is discarded by the next one, which the compaction confirms', () => {
      const r = replayFixture('auto-compact-lone-precompact.json').get('<session-1>')!;
      expect(r.pres).toEqual(['pre-1', 'pre-2']);
      expect(r.opened).toEqual([{ id: 'pre-2', pre: 'pre-2' }]);
      expect(r.outcomes).toContainEqual({ kind: 'pending', boundaryId: 'pre-2', discarded: 'pre-1' });
    });

    it('InstructionsLoaded(compact), once per file, joins the boundary and never opens one', () => {
      const r = replayFixture('instructions-multi.json').get('<session-1>')!;
      const kinds = r.outcomes.map((o) => o.kind);
      expect(kinds.filter((k) => k === 'confirmed')).toHaveLength(1);
      expect(kinds.filter((k) => k === 'joined').length).toBeGreaterThanOrEqual(8);
    });

    it('two registrations of the hook (parallel duplicates) make one boundary', () => {
      const r = replayFixture('concurrency-stream.json').get('<session-1>')!;
      expect(r.outcomes.map((o) => o.kind).filter((k) => k === 'duplicate').length).toBeGreaterThanOrEqual(1);
      expect(r.opened).toHaveLength(1);
    });
  });

  describe('any order of the post-compaction signals, any of them missing', () => {
    const SIGNALS: Array<{ signal: string; repeatable?: boolean }> = [
      { signal: 'session_start_compact' },
      { signal: 'post_compact' },
      { signal: 'instructions_loaded_compact', repeatable: true },
      { signal: 'instructions_loaded_compact', repeatable: true },
    ];
    function subsets<T>(xs: T[]): T[][] {
      let acc: T[][] = [[]];
      for (const x of xs) acc = acc.concat(acc.map((s) => [...s, x]));
      return acc;
    }
    function permutations<T>(xs: T[]): T[][] {
      if (xs.length <= 1) return [xs];
      return xs.flatMap((x, i) =>
        permutations([...xs.slice(0, i), ...xs.slice(i + 1)]).map((p) => [x, ...p]),
      );
    }
    const orders = subsets(SIGNALS).flatMap((s) => permutations(s));

    it(`with a PreCompact first: the same one boundary in all ${orders.length} orders`, () => {
      for (const order of orders) {
        const events: BoundaryEvent[] = [
          { type: 'pre', at: at(0), trigger: 'auto' },
          ...order.map((s, i) => ({ type: 'compacted' as const, at: at(200 + i * 150), ...s })),
        ];
        const r = feed(events);
        const label = order.map((s) => s.signal).join(',') || '(none)';
        if (order.length === 0) {
          expect(r.opened, label).toEqual([]);
          expect(r.track.pending?.boundaryId, label).toBe('pre-1');
        } else {
          expect(r.opened, label).toEqual([{ id: 'pre-1', pre: 'pre-1' }]);
          expect(r.track.current?.compactedAt, label).toBe(at(200));
          expect(r.track.current?.trigger, label).toBe('auto');
        }
      }
    });

    it('with no PreCompact: one boundary whose pre is missing, in every non-empty order', () => {
      for (const order of orders.filter((o) => o.length > 0)) {
        const r = feed(order.map((s, i) => ({ type: 'compacted' as const, at: at(i * 150), ...s })));
        expect(r.opened, order.map((s) => s.signal).join(',')).toHaveLength(1);
        expect(r.opened[0]!.pre).toBeNull();
      }
    });

    it('a second compaction opens a new boundary; without its PreCompact, one whose pre is missing', () => {
      const one = (t: number): BoundaryEvent[] => [
        { type: 'compacted', at: at(t), signal: 'session_start_compact' },
        { type: 'compacted', at: at(t + 100), signal: 'post_compact' },
      ];
      const withPre = feed([
        { type: 'pre', at: at(0) },
        ...one(100),
        { type: 'pre', at: at(60_000) },
        ...one(60_100),
      ]);
      expect(withPre.opened).toEqual([
        { id: 'pre-1', pre: 'pre-1' },
        { id: 'pre-2', pre: 'pre-2' },
      ]);
      const second = feed([{ type: 'pre', at: at(0) }, ...one(100), ...one(DUPLICATE_WINDOW_MS + 60_000)]);
      expect(second.opened.map((b) => b.pre)).toEqual(['pre-1', null]);
    });

    it('the same signal twice within the duplicate window is one delivery, not a compaction', () => {
      const r = feed([
        { type: 'pre', at: at(0) },
        { type: 'compacted', at: at(100), signal: 'session_start_compact' },
        { type: 'compacted', at: at(150), signal: 'session_start_compact' },
        { type: 'compacted', at: at(300), signal: 'post_compact' },
        { type: 'compacted', at: at(320), signal: 'post_compact' },
      ]);
      expect(r.opened).toHaveLength(1);
      expect(r.outcomes.map((o) => o.kind)).toEqual([
        'pending',
        'confirmed',
        'duplicate',
        'joined',
        'duplicate',
      ]);
    });

    it('keeps the context-fill numbers: before from the pre, after when measured later', () => {
      const r = feed([
        { type: 'pre', at: at(0), tokensBefore: 190_010 },
        { type: 'compacted', at: at(100), signal: 'session_start_compact' },
        { type: 'measured', at: at(5_000), tokens: { before: 190_010, after: 2_632 } },
        { type: 'measured', at: at(6_000), tokens: { after: 2_632 } },
      ]);
      expect(r.track.current?.tokens).toEqual({ before: 190_010, after: 2_632 });
      expect(r.outcomes.slice(2)).toEqual([
        { kind: 'measured', boundaryId: 'pre-1', changed: true },
        { kind: 'measured', boundaryId: 'pre-1', changed: false },
      ]);
      expect(feed([{ type: 'measured', at: at(0), tokens: { after: 1 } }]).outcomes[0]).toEqual({
        kind: 'measured',
        boundaryId: null,
        changed: false,
      });
    });
  });

  describe('the orders the other runtimes send (from their findings)', () => {
    it('Codex CLI: PreCompact → PostCompact, SessionStart(compact) on the next turn, minutes later', () => {
      const r = feed([
        { type: 'pre', at: at(0), trigger: 'manual' },
        { type: 'compacted', at: at(500), signal: 'post_compact', trigger: 'manual' },
        { type: 'compacted', at: at(45 * 60_000), signal: 'session_start_compact' },
      ]);
      expect(r.opened).toEqual([{ id: 'pre-1', pre: 'pre-1' }]);
      expect(r.outcomes.at(-1)!.kind).toBe('joined');
    });

    it('Codex CLI: SessionStart(compact) lost across processes; the next compaction is its own boundary', () => {
      const r = feed([
        { type: 'pre', at: at(0) },
        { type: 'compacted', at: at(500), signal: 'post_compact' },
        { type: 'pre', at: at(90_000) },
        { type: 'compacted', at: at(90_500), signal: 'post_compact' },
        { type: 'compacted', at: at(90_900), signal: 'session_start_compact' },
      ]);
      expect(r.opened).toEqual([
        { id: 'pre-1', pre: 'pre-1' },
        { id: 'pre-2', pre: 'pre-2' },
      ]);
    });

    it('OpenCode: experimental.session.compacting → session.compacted; a compacting hook alone is no boundary', () => {
      expect(
        feed([
          { type: 'pre', at: at(0), trigger: 'auto' },
          { type: 'compacted', at: at(1300), signal: 'session_compacted' },
        ]).opened,
      ).toEqual([{ id: 'pre-1', pre: 'pre-1' }]);
      expect(feed([{ type: 'pre', at: at(0) }]).opened).toEqual([]);
    });

    it('Agent SDK: PreCompact → SessionStart(compact) → PostCompact → compact_boundary with the token counts', () => {
      const r = feed([
        { type: 'pre', at: at(0), trigger: 'manual' },
        { type: 'compacted', at: at(300), signal: 'session_start_compact' },
        { type: 'compacted', at: at(400), signal: 'post_compact', trigger: 'manual' },
        {
          type: 'compacted',
          at: at(450),
          signal: 'compact_boundary',
          tokens: { before: 1250, after: 2756 },
        },
      ]);
      expect(r.opened).toHaveLength(1);
      expect(r.track.current!.tokens).toEqual({ before: 1250, after: 2756 });
      // A failed auto-compaction (too_few_groups) fires PreCompact only.
      expect(feed([{ type: 'pre', at: at(0), trigger: 'auto' }]).opened).toEqual([]);
    });
  });
});
