/**
 * `continuity init claude-code`, `continuity observe` and `continuity hook` as a user runs them:
 * real child processes, real files, the documented exit codes.
 */
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { READ_ONLY_TOOLS } from '../../src/adapters/claude-code/config.js';
import { gateMatcherExcluding } from '../../src/adapters/claude-code/init.js';
import { EXIT } from '../../src/cli/exit-codes.js';
import { makeWorld, runCli } from './harness.js';

const CLOSED = 'http://127.0.0.1:9';

describe('continuity init claude-code', () => {
  it("merges the hooks into .claude/settings.json once, keeps the user's, and creates the task record", async () => {
    const world = makeWorld(CLOSED);
    try {
      const settingsPath = join(world.project, '.claude', 'settings.json');
      mkdirSync(join(world.project, '.claude'));
      const mine = {
        model: 'opus',
        hooks: {
          PostToolUse: [{ matcher: 'Write', hooks: [{ type: 'command', command: 'prettier --write' }] }],
        },
      };
      writeFileSync(settingsPath, JSON.stringify(mine));
      const first = await runCli(['init', 'claude-code', '--command', 'node /opt/ac/bin/continuity.js'], {
        env: world.shellEnv,
        cwd: world.project,
      });
      expect(first.status, first.stderr).toBe(EXIT.ok);
      expect(first.stdout).toContain(
        `.claude/settings.json: added PreToolUse (matcher ${gateMatcherExcluding(READ_ONLY_TOOLS)}), timeout 5 s`,
      );
      expect(first.stdout).toContain('.claude/settings.json: added PreSkillShellCommand, timeout 5 s');
      expect(first.stdout).toContain('.claude/settings.json: kept 1 hook group(s) of your own');
      expect(first.stdout).toContain('.continuity/task.json: created from the template');
      const settings = JSON.parse(readFileSync(settingsPath, 'utf8'));
      expect(settings.model).toBe('opus');
      expect(settings.hooks.PostToolUse[0]).toEqual(mine.hooks.PostToolUse[0]);
      expect(settings.hooks.PostToolUse[1].hooks[0].command).toBe(
        'node /opt/ac/bin/continuity.js hook claude-code',
      );
      // The gate's events block when the hook fails (a hang past the timeout); the others never do.
      expect(settings.hooks.PreToolUse[0].hooks[0].onFailure).toBe('block');
      expect(settings.hooks.PreSkillShellCommand[0].hooks[0].onFailure).toBe('block');
      expect(settings.hooks.PreCompact[0].hooks[0].onFailure).toBeUndefined();
      // Activity per tool call and per prompt runs in the background; the gate, the boundary
      // hooks and Stop (the end of a `claude -p` run kills a background hook) do not.
      expect(settings.hooks.PostToolUse[1].hooks[0].async).toBe(true);
      expect(settings.hooks.UserPromptSubmit[0].hooks[0].async).toBe(true);
      for (const event of ['PreToolUse', 'PreCompact', 'PostCompact', 'SessionStart', 'Stop'])
        expect(settings.hooks[event][0].hooks[0].async, event).toBeUndefined();
      // The gate's matcher leaves out exactly the tools that only read.
      const gateMatcher = new RegExp(settings.hooks.PreToolUse[0].matcher);
      for (const tool of ['Read', 'Glob', 'Grep', 'TodoWrite', 'WebFetch'])
        expect(gateMatcher.test(tool)).toBe(false);
      for (const tool of ['Write', 'Edit', 'Bash', 'mcp__x__y', 'Task', 'ReadWrite', 'Reader'])
        expect(gateMatcher.test(tool), tool).toBe(true);
      for (const event of [
        'PreToolUse',
        'PreSkillShellCommand',
        'PreCompact',
        'PostCompact',
        'SessionStart',
        'InstructionsLoaded',
        'Notification',
        'Stop',
        'Interrupt',
      ]) {
        expect(settings.hooks[event], event).toHaveLength(1);
      }
      const task = JSON.parse(readFileSync(join(world.project, '.continuity', 'task.json'), 'utf8'));
      expect(task.template).toBe(true);
      expect(Object.keys(task.decisions)).toEqual(['scope', 'approval_boundary', 'acceptance_test']);
      expect(statSync(join(world.project, '.continuity', 'task.json')).mode & 0o077).toBe(0);

      const before = readFileSync(settingsPath, 'utf8');
      const second = await runCli(['init', 'claude-code'], { env: world.shellEnv, cwd: world.project });
      expect(second.status).toBe(EXIT.ok);
      expect(second.stdout).toContain('.claude/settings.json: unchanged');
      expect(second.stdout).toContain('.continuity/task.json: exists, left as it is');
      expect(readFileSync(settingsPath, 'utf8')).toBe(before);
    } finally {
      world.dispose();
    }
  });

  it("upgrades an earlier install's hooks: the gate's `*` narrowed, activity hooks put in the background", async () => {
    const world = makeWorld(CLOSED);
    try {
      const settingsPath = join(world.project, '.claude', 'settings.json');
      mkdirSync(join(world.project, '.claude'));
      const ours = (extra = {}) => ({
        type: 'command',
        command: 'continuity hook claude-code',
        timeout: 5,
        ...extra,
      });
      writeFileSync(
        settingsPath,
        JSON.stringify({
          hooks: {
            PreToolUse: [
              { matcher: '*', hooks: [ours({ onFailure: 'block' })] },
              { matcher: '*', hooks: [{ type: 'command', command: './mine.sh' }] },
            ],
            PostToolUse: [{ matcher: '*', hooks: [ours()] }],
          },
        }),
      );
      const r = await runCli(['init', 'claude-code'], { env: world.shellEnv, cwd: world.project });
      expect(r.status, r.stderr).toBe(EXIT.ok);
      expect(r.stdout).toContain('.claude/settings.json: updated our hooks of PreToolUse, PostToolUse');
      const settings = JSON.parse(readFileSync(settingsPath, 'utf8'));
      expect(settings.hooks.PreToolUse[0].matcher).toBe(gateMatcherExcluding(READ_ONLY_TOOLS));
      expect(settings.hooks.PreToolUse[1]).toEqual({
        matcher: '*',
        hooks: [{ type: 'command', command: './mine.sh' }],
      });
      expect(settings.hooks.PostToolUse).toEqual([{ matcher: '*', hooks: [ours({ async: true })] }]);
      const again = await runCli(['init', 'claude-code'], { env: world.shellEnv, cwd: world.project });
      expect(again.stdout).toContain('.claude/settings.json: unchanged');
    } finally {
      world.dispose();
    }
  });

  it('refuses a settings file that is not valid JSON, changing nothing', async () => {
    const world = makeWorld(CLOSED);
    try {
      const settingsPath = join(world.project, '.claude', 'settings.json');
      mkdirSync(join(world.project, '.claude'));
      writeFileSync(settingsPath, '{ "hooks": ');
      const r = await runCli(['init', 'claude-code'], { env: world.shellEnv, cwd: world.project });
      expect(r.status).toBe(EXIT.badInput);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain('.claude/settings.json: (root): invalid JSON');
      expect(readFileSync(settingsPath, 'utf8')).toBe('{ "hooks": ');
      expect(existsSync(join(world.project, '.continuity'))).toBe(false);
    } finally {
      world.dispose();
    }
  });

  it('refuses an unknown runtime', async () => {
    const world = makeWorld(CLOSED);
    try {
      const r = await runCli(['init', 'cursor'], { env: world.shellEnv, cwd: world.project });
      expect(r.status).toBe(EXIT.badInput);
      expect(r.stderr).toContain('unknown runtime "cursor"');
    } finally {
      world.dispose();
    }
  });
});

describe('continuity observe', () => {
  it('asks for --session when no hook recorded one for the project', async () => {
    const world = makeWorld(CLOSED);
    try {
      const r = await runCli(['observe', '--decision', 'scope=1'], {
        env: world.shellEnv,
        cwd: world.project,
      });
      expect(r.status).toBe(EXIT.badInput);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain('pass --session ID');
    } finally {
      world.dispose();
    }
  });

  it('reports a session id that is given but unusable as invalid, naming where it came from, never as missing', async () => {
    const world = makeWorld(CLOSED);
    try {
      const empty = await runCli(['observe', '--session', '', '--decision', 'scope=1'], {
        env: world.shellEnv,
        cwd: world.project,
      });
      expect(empty.status).toBe(EXIT.badInput);
      expect(empty.stderr).toContain('--session: (option): expected an opaque identifier');
      expect(empty.stderr).not.toContain('pass --session ID');
      const fromEnv = await runCli(['observe', '--decision', 'scope=1'], {
        env: { ...world.shellEnv, CLAUDE_CODE_SESSION_ID: 'not an/../id' },
        cwd: world.project,
      });
      expect(fromEnv.status).toBe(EXIT.badInput);
      expect(fromEnv.stderr).toContain('--session: CLAUDE_CODE_SESSION_ID: expected an opaque identifier');
      expect(fromEnv.stderr).not.toContain('not an');
      expect(existsSync(world.ledger)).toBe(false);
    } finally {
      world.dispose();
    }
  });

  it('says there is nothing to restate when the session was never compacted, and records nothing', async () => {
    const world = makeWorld(CLOSED);
    try {
      const r = await runCli(['observe', '--session', 'fresh-session', '--decision', 'scope=1'], {
        env: world.shellEnv,
        cwd: world.project,
      });
      expect(r.status).toBe(EXIT.ok);
      expect(r.stdout).toContain('No compaction is recorded for session fresh-session');
      expect(existsSync(world.ledger)).toBe(false);
    } finally {
      world.dispose();
    }
  });

  it('refuses input that is not a decision map, naming the source', async () => {
    const world = makeWorld(CLOSED);
    try {
      const r = await runCli(['observe', '--session', 's', '--decisions', '-'], {
        input: '[1, 2]',
        env: world.shellEnv,
        cwd: world.project,
      });
      expect(r.status).toBe(EXIT.badInput);
      expect(r.stderr).toContain('(stdin): (root): expected a JSON object');
      const none = await runCli(['observe', '--session', 's'], { env: world.shellEnv, cwd: world.project });
      expect(none.status).toBe(EXIT.badInput);
      expect(none.stderr).toContain('--decisions FILE|- or --decision NAME=VALUE');
    } finally {
      world.dispose();
    }
  });
});

describe('continuity hook', () => {
  it('refuses an unknown runtime through the generic path', async () => {
    const world = makeWorld(CLOSED);
    try {
      const r = await runCli(['hook', 'gemini-cli'], {
        input: '{}',
        env: world.shellEnv,
        cwd: world.project,
      });
      expect(r.status).toBe(EXIT.badInput);
      expect(r.stderr).toContain('unknown runtime "gemini-cli"');
    } finally {
      world.dispose();
    }
  });
});
