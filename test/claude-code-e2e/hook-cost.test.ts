/**
 * What a tool call starts, on the real binary (issue 29): with the settings `continuity init
 * claude-code` writes, a tool that only reads starts no gate process, a write and a command do,
 * and the activity hooks that run in the background (`async: true`) still leave the session's
 * activity in the order of its events (working during the turn, idle at its end).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { bash, SCENARIO_TIMEOUT_MS, useSuite, write } from './harness.js';
import { endScenario, scenario, sessionOf } from './scenario.js';

const suite = useSuite();

type Settings = {
  hooks: Record<string, Array<{ matcher?: string; hooks: Array<{ command: string; async?: boolean }> }>>;
};

describe.concurrent('hooks a tool call starts (Claude Code 2.1.328)', () => {
  it(
    'a Read, a Glob and a Grep start no gate process; a Write and a Bash command do; activity ends idle',
    async () => {
      const s = await scenario(suite());
      try {
        const path = s.world.file('.claude/settings.json');
        const settings = JSON.parse(readFileSync(path, 'utf8')) as Settings;
        expect(settings.hooks.PostToolUse![0]!.hooks[0]!.async).toBe(true);
        // Every payload the gate's hook is started with, copied on its way in.
        const log = s.world.file('gate-inputs.log');
        const gate = settings.hooks.PreToolUse![0]!.hooks[0]!;
        gate.command = `tee -a ${log} | ${gate.command}`;
        writeFileSync(path, `${JSON.stringify(settings, null, 2)}\n`);
        writeFileSync(log, '');
        writeFileSync(s.world.file('notes.txt'), 'notes\n');
        s.server.push(
          [{ tool: 'Read', id: 'r1', input: { file_path: s.world.file('notes.txt') } }],
          [{ tool: 'Glob', id: 'g1', input: { pattern: '*.txt' } }],
          [{ tool: 'Grep', id: 'q1', input: { pattern: 'notes' } }],
          [write('w1', s.world.file('out.txt'), 'out\n')],
          [bash('b1', 'echo done > done.txt')],
          'Done.',
        );
        const r = await s.world.claude(s.server, ['-p', 'work'], {
          allowedTools: 'Bash Edit Write Read Glob Grep',
        });
        const sessionId = sessionOf(r);
        const tools = [...readFileSync(log, 'utf8').matchAll(/"tool_name":"([^"]+)"/g)].map((m) => m[1]);
        expect(tools).toEqual(['Write', 'Bash']);
        expect(readFileSync(s.world.file('done.txt'), 'utf8')).toBe('done\n');
        const activity = s.world
          .ledgerRecords()
          .filter((x) => x.type === 'activity' && x.sessionId === sessionId)
          .map((x) => x.state);
        expect(activity[0]).toBe('working');
        expect(activity.at(-1)).toBe('idle');
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );
});
