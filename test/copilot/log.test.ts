import { mkdirSync, mkdtempSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  copilotCompactionEvidence,
  copilotEventLog,
  latestCheckpoint,
  latestCompaction,
} from '../../src/adapters/copilot/log.js';

/** A record as Copilot 1.0.102 writes it (data trimmed to the fields read; summaryContent is never read). */
function complete(at: string, success: boolean, outcome: string): string {
  return JSON.stringify({
    type: 'session.compaction_complete',
    data: { success, outcome, summaryContent: 'SECRET SUMMARY', trigger: 'threshold' },
    id: 'x',
    timestamp: at,
  });
}

describe('Copilot event log', () => {
  const since = Date.parse('2026-12-06T01:00:00.000Z');

  it('a completed compaction after the pending pre is evidence; the latest one wins', () => {
    const text = [
      complete('2026-12-06T01:00:05.000Z', true, 'applied'),
      '{"type":"assistant.turn_start","data":{},"timestamp":"2026-12-06T01:00:06.000Z"}',
      complete('2026-12-06T01:00:09.000Z', true, 'applied'),
    ].join('\n');
    expect(latestCompaction(text, since)).toBe('2026-12-06T01:00:09.000Z');
  });

  it('a cancelled compaction, one before the pre, and broken lines are not evidence', () => {
    const text = [
      complete('2026-12-06T00:59:59.000Z', true, 'applied'),
      complete('2026-12-06T01:00:05.000Z', false, 'cancelled'),
      'e":"session.compaction_complete","data":{"success":true}',
      '{"type":"session.compaction_complete","data":{"success":"true"},"timestamp":"2026-12-06T01:00:07.000Z"}',
    ].join('\n');
    expect(latestCompaction(text, since)).toBeUndefined();
  });

  it('reads the log of the session only, as a regular file; an id that is not Copilot’s is no path', () => {
    const home = mkdtempSync(join(tmpdir(), 'copilot-log-'));
    const env = { HOME: home };
    const dir = join(home, '.copilot', 'session-state', 'abc-123');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'events.jsonl'), `${complete('2026-12-06T01:00:05.000Z', true, 'applied')}\n`);
    expect(copilotCompactionEvidence(env, 'abc-123', since)).toBe('2026-12-06T01:00:05.000Z');
    expect(copilotCompactionEvidence(env, 'other', since)).toBeUndefined();
    expect(copilotEventLog(env, '../abc-123')).toBeUndefined();
    expect(copilotEventLog({ HOME: home, COPILOT_HOME: '/srv/cp' }, 'abc-123')).toBe(
      '/srv/cp/session-state/abc-123/events.jsonl',
    );
  });

  it('a checkpoint file written at or after the pre is evidence even before the log records the compaction', () => {
    const home = mkdtempSync(join(tmpdir(), 'copilot-log-'));
    const dir = join(home, '.copilot', 'session-state', 'abc-123');
    mkdirSync(join(dir, 'checkpoints'), { recursive: true });
    // Copilot's log as flushed when the next tool call's hook ran: the start, not the completion.
    writeFileSync(
      join(dir, 'events.jsonl'),
      '{"type":"session.compaction_start","data":{},"timestamp":"2026-12-06T01:00:01.000Z"}\n',
    );
    writeFileSync(join(dir, 'checkpoints', 'index.md'), '# Checkpoint History\n');
    expect(copilotCompactionEvidence({ HOME: home }, 'abc-123', since)).toBeUndefined();
    const file = join(dir, 'checkpoints', '001-session-abc.md');
    writeFileSync(file, '## Summary\nSECRET SUMMARY\n');
    const at = new Date('2026-12-06T01:00:14.112Z');
    utimesSync(file, at, at);
    expect(copilotCompactionEvidence({ HOME: home }, 'abc-123', since)).toBe('2026-12-06T01:00:14.112Z');
    // Before the pre: an earlier compaction's checkpoint.
    expect(
      latestCheckpoint(join(dir, 'checkpoints'), Date.parse('2026-12-06T01:00:15.000Z')),
    ).toBeUndefined();
  });

  it('a link, a directory or the index in the checkpoints, or a link in place of the directory, is no evidence', () => {
    const root = mkdtempSync(join(tmpdir(), 'copilot-cp-'));
    const real = join(root, 'real');
    mkdirSync(real);
    writeFileSync(join(real, '001-x.md'), 'x');
    const dir = join(root, 'checkpoints');
    mkdirSync(dir);
    symlinkSync(join(real, '001-x.md'), join(dir, '002-link.md'));
    mkdirSync(join(dir, '003-dir.md'));
    writeFileSync(join(dir, 'index.md'), 'x');
    writeFileSync(join(dir, 'notes.md'), 'x');
    expect(latestCheckpoint(dir, since)).toBeUndefined();
    symlinkSync(real, join(root, 'linked'));
    expect(latestCheckpoint(join(root, 'linked'), since)).toBeUndefined();
    expect(latestCheckpoint(real, since)).toBeDefined();
    expect(latestCheckpoint(join(root, 'missing'), since)).toBeUndefined();
  });
});
