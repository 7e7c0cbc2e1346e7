/**
 * The orders recorded from the real opencode-ai 1.18.33 (test/fixtures/opencode-1.18.33/, written
 * by the e2e with CONTINUITY_E2E_RECORD=1, sanitized) replayed through the adapter's pure
 * translation: which hook or event becomes which core event, without starting OpenCode.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Recorded, ROOT } from './harness.js';
import { replay, word } from './replay.js';

function fixture(name: string): Recorded[] {
  return JSON.parse(
    readFileSync(join(ROOT, 'test', 'fixtures', 'opencode-1.18.33', `${name}.json`), 'utf8'),
  ) as Recorded[];
}

const hooks = (lines: Recorded[]) =>
  lines
    .filter((l) => l.hook !== 'event' || l.event?.type === 'session.compacted')
    .map((l) => (l.hook === 'event' ? l.event!.type : l.hook));

describe('OpenCode 1.18.33 recorded orders, replayed', () => {
  it('automatic compaction: pre at the compacting hook, confirmed by autocontinue and session.compacted, measured by the first reply after', () => {
    const lines = fixture('compact-auto');
    const r = replay(lines);
    expect(r.map((x) => word(x.event))).toEqual([
      'pre',
      'compacted:compaction_autocontinue',
      'compacted:session_compacted',
      'measured',
    ]);
    expect(r[0]!.event).toMatchObject({ trigger: 'auto', tokensBefore: 9600 });
    expect(r[1]!.event).toMatchObject({ trigger: 'auto', tokens: { before: 9600 } });
    expect(r[3]!.event).toMatchObject({ tokens: { after: 1200 } });
    // The summarizer's model call comes between the compacting hook and the confirmations.
    const h = hooks(lines);
    const compacting = lines.findIndex((l) => l.hook === 'experimental.session.compacting');
    const summarizer = lines.findIndex((l) => l.hook === 'chat.params' && l.input?.agent === 'compaction');
    expect(compacting).toBeGreaterThan(-1);
    expect(compacting).toBeLessThan(summarizer);
    expect(h.indexOf('experimental.compaction.autocontinue')).toBeLessThan(h.indexOf('session.compacted'));
  });

  it('a session resumed in a second process: nothing new for the translation there', () => {
    const r = replay(fixture('compact-auto-then-resume'));
    expect(r.filter((x) => x.pid === 2)).toEqual([]);
    expect(r.map((x) => word(x.event))).toEqual([
      'pre',
      'compacted:compaction_autocontinue',
      'compacted:session_compacted',
      'measured',
    ]);
  });

  it('manual compaction through serve: no autocontinue, session.compacted alone confirms it', () => {
    const lines = fixture('compact-manual-serve-then-run');
    expect(lines.some((l) => l.hook === 'experimental.compaction.autocontinue')).toBe(false);
    const r = replay(lines);
    expect(r.map((x) => `${x.pid}:${word(x.event)}`)).toEqual(['1:pre', '1:compacted:session_compacted']);
    expect(r[0]!.event).toMatchObject({ trigger: 'manual', tokensBefore: 110 });
    expect(r[1]!.event).toMatchObject({ trigger: 'manual' });
  });
});
