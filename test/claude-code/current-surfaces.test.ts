/**
 * Claude Code's newer hook surfaces at the hook entry, with the payload shapes of the 2.1.337
 * binary (its Agent SDK 0.3.337 `sdk.d.ts`, `InterruptHookInput`): the `Interrupt` hook ends the
 * session's `working` activity (Stop does not fire on an interrupt), and a SessionStart on a task
 * record that is still init's template answers with a `systemMessage` for the human. The same
 * surfaces on the real binary are in test/claude-code-e2e/current.test.ts.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskRecordTemplate } from '../../src/adapters/core/task-record.js';
import {
  hook,
  ledgerRecords,
  makeWorld,
  PAYMENTS_DECISIONS,
  type Receiver,
  startReceiver,
  type World,
  writeTaskRecord,
} from './harness.js';

const FIXTURES = fileURLToPath(new URL('../fixtures', import.meta.url));

let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
});

function activities(world: World): unknown[] {
  return ledgerRecords(world)
    .filter((x) => x.type === 'activity')
    .map((x) => x.state);
}

describe('Interrupt (Claude Code 2.1.337)', () => {
  // Recorded from the real 2.1.337: a stream-json client's interrupt while a tool ran
  // (test/claude-code-e2e/current.test.ts); the others are the shapes its sdk.d.ts documents.
  const recorded = (
    JSON.parse(
      readFileSync(join(FIXTURES, 'claude-code-2.1.337', 'interrupt-client.json'), 'utf8'),
    ) as Array<{ fields: Record<string, unknown> }>
  )[0]!.fields;
  const { session_id: _s, transcript_path: _t, cwd: _c, hook_event_name: _e, ...realFields } = recorded;
  it.each([
    ['a client interrupt, as the real binary sent it', realFields],
    ['the user pressed Esc', { source: 'user', reason: 'stop', via: 'terminal' }],
    ["an SDK program's interrupt()", { source: 'user', reason: 'stop', via: 'client' }],
    ['a denied permission', { source: 'system', reason: 'permission_denied' }],
    ['a rewind', { source: 'user', reason: 'rewind' }],
  ])('ends the working activity: %s makes the session idle, answering nothing', async (_, fields) => {
    const world = makeWorld(receiver.endpoint);
    try {
      mkdirSync(world.state, { recursive: true });
      const sid = 'interrupt-1';
      await hook(world, sid, 'UserPromptSubmit', { prompt: 'do the thing' });
      expect(activities(world)).toEqual(['working']);
      const r = await hook(world, sid, 'Interrupt', fields);
      expect(r.status).toBe(0);
      expect(r.stdout).toBe(''); // its output is ignored
      expect(r.stderr).not.toContain('not used');
      expect(activities(world)).toEqual(['working', 'idle']);
      // A second one changes nothing (activity is recorded on change only).
      await hook(world, sid, 'Interrupt', fields);
      expect(activities(world)).toEqual(['working', 'idle']);
    } finally {
      world.dispose();
    }
  });
});

describe('SessionStart on a task record that is still the template', () => {
  for (const source of ['startup', 'resume', 'clear']) {
    it(`(${source}) answers a systemMessage naming the decisions to fill in and the command, never a value`, async () => {
      const world = makeWorld(receiver.endpoint);
      try {
        mkdirSync(join(world.project, '.continuity'), { recursive: true });
        writeFileSync(join(world.project, '.continuity', 'task.json'), taskRecordTemplate());
        const r = await hook(world, `template-${source}`, 'SessionStart', { source });
        expect(r.status).toBe(0);
        const out = JSON.parse(r.stdout) as { systemMessage: string; hookSpecificOutput?: unknown };
        expect(out.hookSpecificOutput).toBeUndefined(); // for the human, not the model's context
        expect(out.systemMessage).toContain('.continuity/task.json is still the template');
        for (const name of ['scope', 'approval_boundary', 'acceptance_test'])
          expect(out.systemMessage).toContain(name);
        expect(out.systemMessage).toContain('`continuity task seal`');
        for (const placeholder of ['org/repo', 'schema_migration', 'npm test', world.root])
          expect(out.systemMessage).not.toContain(placeholder);
      } finally {
        world.dispose();
      }
    });
  }

  it('says nothing once the record is filled in, or when there is none', async () => {
    const world = makeWorld(receiver.endpoint);
    try {
      const none = await hook(world, 'template-none', 'SessionStart', { source: 'startup' });
      expect(none.status).toBe(0);
      expect(none.stdout).toBe('');
      writeTaskRecord(world, PAYMENTS_DECISIONS);
      const filled = await hook(world, 'template-filled', 'SessionStart', { source: 'startup' });
      expect(filled.status).toBe(0);
      expect(filled.stdout).toBe('');
    } finally {
      world.dispose();
    }
  });
});
