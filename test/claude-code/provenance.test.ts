/**
 * The provenance of a restatement (src/adapters/core/provenance.ts), through the hook entry as
 * Claude Code drives it: a tool that read the task record, the configuration or the ledger after
 * the compaction (its `PostToolUse`) makes the next restatement `record`; nothing else does. The
 * classification is unchanged (`preserved`), the ledger's post snapshot and the JSON answer say
 * where the values came from.
 */
import { linkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli/exit-codes.js';
import {
  compact,
  hook,
  ledgerRecords,
  makeWorld,
  PAYMENTS_DECISIONS,
  PAYMENTS_VALUES,
  runCli,
  type World,
  writeTaskRecord,
} from './harness.js';

let world: World;
beforeEach(() => {
  world = makeWorld('http://127.0.0.1:9');
  writeTaskRecord(world, PAYMENTS_DECISIONS);
  writeFileSync(join(world.project, 'notes.txt'), 'nothing of the task\n');
});
afterEach(() => world.dispose());

/** A tool that ran: its `PostToolUse`. */
function ran(sessionId: string, tool: string, input: Record<string, unknown>) {
  return hook(world, sessionId, 'PostToolUse', {
    tool_name: tool,
    tool_input: input,
    tool_response: { ok: true },
    tool_use_id: 'toolu_02',
  });
}

/** Restates the faithful values with `continuity observe --json`; returns its answer. */
async function restate(sessionId: string): Promise<{ state: string; provenance: string | null }> {
  const r = await runCli(['observe', '--session', sessionId, '--decisions', '-', '--json'], {
    input: JSON.stringify(PAYMENTS_VALUES),
    env: world.shellEnv,
    cwd: world.project,
  });
  expect(r.status, r.stderr).toBe(EXIT.ok);
  return JSON.parse(r.stdout) as { state: string; provenance: string | null };
}

/** The provenance on the session's latest post snapshot in the ledger. */
function ledgerProvenance(sessionId: string): unknown {
  const posts = ledgerRecords(world).filter(
    (r) => r.type === 'snapshot' && r.phase === 'post' && r.sessionId === sessionId,
  );
  return posts.at(-1)?.provenance;
}

const task = () => join(world.project, '.continuity', 'task.json');

/** Tool calls after the compaction, and the provenance they make. */
const CASES: Array<{
  name: string;
  calls: () => Array<[string, Record<string, unknown>]>;
  expected: string;
}> = [
  { name: 'no tool at all', calls: () => [], expected: 'context' },
  {
    name: 'a Read of a harmless file and a harmless command',
    calls: () => [
      ['Read', { file_path: join(world.project, 'notes.txt') }],
      ['Bash', { command: 'ls -la && cat notes.txt' }],
    ],
    expected: 'context',
  },
  { name: 'a Read of the task record', calls: () => [['Read', { file_path: task() }]], expected: 'record' },
  {
    name: 'a Read of the configuration, by a relative path',
    calls: () => [['Read', { file_path: '.continuity/config.json' }]],
    expected: 'record',
  },
  {
    name: 'a Grep inside .continuity/',
    calls: () => [['Grep', { pattern: 'payments', path: '.continuity' }]],
    expected: 'record',
  },
  {
    name: 'a Glob whose pattern names .continuity/',
    calls: () => [['Glob', { pattern: '.continuity/*.json' }]],
    expected: 'record',
  },
  { name: 'a Read of the ledger', calls: () => [['Read', { file_path: world.ledger }]], expected: 'record' },
  {
    name: 'a Bash command naming the task record',
    calls: () => [['Bash', { command: 'cat .contin*/task.json; cat .continuity/task.json' }]],
    expected: 'record',
  },
  {
    name: 'a Bash command reading a hard link to the task record under a harmless name (by inode)',
    calls: () => {
      linkSync(task(), join(world.project, 'readme-copy.md'));
      return [['Bash', { command: 'cat readme-copy.md' }]];
    },
    expected: 'record',
  },
  {
    name: 'a Read of a hard link to the task record (by inode)',
    calls: () => {
      linkSync(task(), join(world.project, 'innocent.json'));
      return [['Read', { file_path: join(world.project, 'innocent.json') }]];
    },
    expected: 'record',
  },
];

describe('restatement provenance through the hook entry', () => {
  for (const c of CASES) {
    it(`${c.name}: ${c.expected}`, async () => {
      const sessionId = `prov-${CASES.indexOf(c)}`;
      await hook(world, sessionId, 'SessionStart', { source: 'startup' });
      await compact(world, sessionId);
      for (const [tool, input] of c.calls()) expect((await ran(sessionId, tool, input)).status).toBe(0);
      const answer = await restate(sessionId);
      // The classification does not depend on where the values came from.
      expect(answer.state).toBe('preserved');
      expect(answer.provenance).toBe(c.expected);
      expect(ledgerProvenance(sessionId)).toBe(c.expected);
    });
  }

  it('a read before the compaction is part of the summarised context: context', async () => {
    const sessionId = 'prov-before';
    await hook(world, sessionId, 'SessionStart', { source: 'startup' });
    await ran(sessionId, 'Read', { file_path: task() });
    await compact(world, sessionId);
    expect((await restate(sessionId)).provenance).toBe('context');
    expect(ledgerProvenance(sessionId)).toBe('context');
  });

  it('counts per boundary: a read in the first boundary does not mark the second', async () => {
    const sessionId = 'prov-two';
    await hook(world, sessionId, 'SessionStart', { source: 'startup' });
    await compact(world, sessionId);
    await ran(sessionId, 'Read', { file_path: task() });
    expect((await restate(sessionId)).provenance).toBe('record');
    await compact(world, sessionId);
    expect((await restate(sessionId)).provenance).toBe('context');
  });

  it('nothing of the tool input reaches the ledger or the state', async () => {
    const sessionId = 'prov-leak';
    await hook(world, sessionId, 'SessionStart', { source: 'startup' });
    await compact(world, sessionId);
    await ran(sessionId, 'Bash', { command: 'cat .continuity/task.json # SECRET-COMMAND-TEXT' });
    await restate(sessionId);
    const ledger = JSON.stringify(ledgerRecords(world));
    expect(ledger).not.toContain('SECRET-COMMAND-TEXT');
    expect(ledger).not.toContain('task.json');
  });
});
