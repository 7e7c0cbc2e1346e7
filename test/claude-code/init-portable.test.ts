/**
 * Where `continuity init claude-code` (and the inits that share it) puts a hook launcher, so that
 * the committed `.claude/settings.json` and `.mcp.json` never hold a path only this machine has:
 * `continuity` when PATH has this installation; the project's own installation under
 * `"$CLAUDE_PROJECT_DIR"` when `node_modules/.bin/continuity` is this installation; else this
 * installation's absolute path, into the git-ignored `.claude/settings.local.json`. Hooks move
 * between the two files so none run twice, and `--remove` takes them out of either.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isContinuityReadonly } from '../../src/adapters/core/gate.js';
import { launcherFor } from '../../src/adapters/core/process.js';
import { EXIT } from '../../src/cli/exit-codes.js';
import { linkPackageInto } from '../support/world.js';
import { BIN, makeWorld, payload, ROOT, runCli, type World } from './harness.js';

const CLOSED = 'http://127.0.0.1:9';
/** A PATH without `continuity`: the node running the CLI is spawned by its absolute path. */
const NO_CONTINUITY = '/usr/bin:/bin';
const PROJECT_LAUNCHER = '"$CLAUDE_PROJECT_DIR"/node_modules/.bin/continuity';
const MACHINE_COMMAND = `node ${BIN} hook claude-code`;

interface Settings {
  hooks?: Record<string, Array<{ matcher?: string; hooks: Array<{ command: string }> }>>;
  enabledMcpjsonServers?: string[];
  permissions?: { allow?: string[] };
}

function read(world: World, rel: string): Settings {
  return JSON.parse(readFileSync(join(world.project, rel), 'utf8')) as Settings;
}

const COMMITTED = '.claude/settings.json';
const LOCAL = '.claude/settings.local.json';

function ourCommands(settings: Settings): string[] {
  return Object.values(settings.hooks ?? {})
    .flatMap((groups) => groups.flatMap((g) => g.hooks.map((h) => h.command)))
    .filter((c) => /hook claude-code/.test(c));
}

const installInProject = linkPackageInto;

async function init(world: World, path: string, ...args: string[]) {
  const r = await runCli(['init', 'claude-code', ...args], {
    env: { ...world.shellEnv, PATH: path },
    cwd: world.project,
  });
  expect(r.status, r.stderr).toBe(EXIT.ok);
  return r;
}

/** A Write's PreToolUse sent to the exact command line through a shell in `cwd`, as Claude Code runs it. */
function writeThroughShell(world: World, command: string, cwd: string) {
  return spawnSync('/bin/sh', ['-c', command], {
    input: payload(world, 'portable-1', 'PreToolUse', {
      tool_name: 'Write',
      tool_input: { file_path: 'a.ts', content: 'x' },
    }),
    env: { ...world.env, PATH: `${process.execPath.replace(/\/node$/, '')}:${NO_CONTINUITY}` },
    cwd,
    encoding: 'utf8',
  });
}

describe('init claude-code: a portable launcher in committed settings', () => {
  it('PATH with this installation: `continuity` in .claude/settings.json and .mcp.json', async () => {
    const world = makeWorld(CLOSED);
    try {
      const r = await init(world, world.shellEnv.PATH!);
      expect(new Set(ourCommands(read(world, COMMITTED)))).toEqual(new Set(['continuity hook claude-code']));
      expect(
        JSON.parse(readFileSync(join(world.project, '.mcp.json'), 'utf8')).mcpServers.continuity.command,
      ).toBe('continuity');
      expect(existsSync(join(world.project, LOCAL))).toBe(false);
      expect(r.stdout).not.toContain('note:');
    } finally {
      world.dispose();
    }
  });

  it('a `continuity` on PATH that is another program is not taken for this installation', async () => {
    const world = makeWorld(CLOSED);
    try {
      const other = join(world.root, 'other-bin');
      mkdirSync(other);
      writeFileSync(join(other, 'continuity'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
      await init(world, `${other}:${NO_CONTINUITY}`);
      expect(new Set(ourCommands(read(world, LOCAL)))).toEqual(new Set([MACHINE_COMMAND]));
      expect(existsSync(join(world.project, COMMITTED))).toBe(false);
    } finally {
      world.dispose();
    }
  });

  it('installed in the project: "$CLAUDE_PROJECT_DIR"/node_modules/.bin/continuity, which runs from a subdirectory; .mcp.json through npx --no-install', async () => {
    const world = makeWorld(CLOSED);
    try {
      installInProject(world.project);
      // `npx continuity init` puts the project's node_modules/.bin on PATH: that is not the hooks' PATH.
      const r = await init(world, `${join(world.project, 'node_modules', '.bin')}:${NO_CONTINUITY}`);
      const commands = ourCommands(read(world, COMMITTED));
      expect(new Set(commands)).toEqual(new Set([`${PROJECT_LAUNCHER} hook claude-code`]));
      expect(r.stdout).toContain(`note: the hooks run the project's own installation (${PROJECT_LAUNCHER})`);
      const mcp = JSON.parse(readFileSync(join(world.project, '.mcp.json'), 'utf8'));
      expect(mcp.mcpServers.continuity).toEqual({
        type: 'stdio',
        command: 'npx',
        args: ['--no-install', 'continuity', 'mcp', '--runtime', 'claude-code'],
        alwaysLoad: true,
      });
      expect(read(world, COMMITTED).enabledMcpjsonServers).toEqual(['continuity']);
      // No path of this machine's installation in what is committed.
      for (const rel of [COMMITTED, '.mcp.json'])
        expect(readFileSync(join(world.project, rel), 'utf8')).not.toContain(ROOT.replace(/\/$/, ''));
      expect(existsSync(join(world.project, LOCAL))).toBe(false);
      // The hook runs as written, from a subdirectory too (CLAUDE_PROJECT_DIR names the project).
      const sub = join(world.project, 'src', 'deep');
      mkdirSync(sub, { recursive: true });
      for (const cwd of [world.project, sub]) {
        const sh = writeThroughShell(world, commands[0]!, cwd);
        expect(sh.status, sh.stderr).toBe(0);
        expect(sh.stderr).toBe('');
      }
      // Without the variable the shell cannot find it: the variable is what makes it run.
      const unset = spawnSync('/bin/sh', ['-c', commands[0]!], {
        input: '{}',
        env: { PATH: NO_CONTINUITY },
        cwd: sub,
        encoding: 'utf8',
      });
      expect(unset.status).toBe(127);
    } finally {
      world.dispose();
    }
  });

  it("neither: this machine's path into .claude/settings.local.json (git-ignored), no restate server in .mcp.json; --remove leaves nothing it created", async () => {
    const world = makeWorld(CLOSED);
    try {
      const r = await init(world, NO_CONTINUITY);
      expect(r.stdout).toContain(
        `note: agent-continuity is neither on PATH nor installed in the project, so the hooks run "node ${BIN}" (this machine's path) so they went into ${LOCAL} (this machine's, git-ignored), not ${COMMITTED}, and .mcp.json gets no restate server; to share them, \`npm i -D agent-continuity\` in the project and run init again`,
      );
      const local = read(world, LOCAL);
      const commands = ourCommands(local);
      expect(new Set(commands)).toEqual(new Set([MACHINE_COMMAND]));
      expect(local.enabledMcpjsonServers).toBeUndefined();
      expect(existsSync(join(world.project, COMMITTED))).toBe(false);
      expect(existsSync(join(world.project, '.mcp.json'))).toBe(false);
      expect(readFileSync(join(world.project, '.gitignore'), 'utf8').split('\n')).toContain(`/${LOCAL}`);
      const sh = writeThroughShell(world, commands[0]!, world.project);
      expect(sh.status, sh.stderr).toBe(0);

      const removed = await init(world, NO_CONTINUITY, '--remove');
      expect(removed.stdout).toContain(`${LOCAL}: deleted (init created it, and nothing else is in it)`);
      expect(removed.stdout).not.toContain(`${COMMITTED}: deleted`);
      expect(existsSync(join(world.project, '.claude'))).toBe(false);
    } finally {
      world.dispose();
    }
  });

  it('installing the package afterwards moves the hooks from the local file into the committed one; --remove takes them from there', async () => {
    const world = makeWorld(CLOSED);
    try {
      await init(world, NO_CONTINUITY);
      expect(ourCommands(read(world, LOCAL)).length).toBeGreaterThan(0);
      installInProject(world.project);
      const r = await init(world, NO_CONTINUITY);
      expect(r.stdout).toContain(`${LOCAL}: moved continuity's hooks to ${COMMITTED} (deleted it`);
      expect(existsSync(join(world.project, LOCAL))).toBe(false);
      expect(new Set(ourCommands(read(world, COMMITTED)))).toEqual(
        new Set([`${PROJECT_LAUNCHER} hook claude-code`]),
      );
      const removed = await init(world, NO_CONTINUITY, '--remove');
      expect(removed.stdout).toContain(`${COMMITTED}: deleted (init created it, and nothing else is in it)`);
      expect(existsSync(join(world.project, '.mcp.json'))).toBe(false);
      expect(existsSync(join(world.project, '.claude'))).toBe(false);
    } finally {
      world.dispose();
    }
  });

  it("hooks an earlier init wrote with this machine's path into the committed file: moved to the local file, or rewritten once the package is installed", async () => {
    const world = makeWorld(CLOSED);
    const machineHooks = {
      model: 'opus',
      hooks: { PreCompact: [{ hooks: [{ type: 'command', command: MACHINE_COMMAND, timeout: 30 }] }] },
    };
    const mcpMachine = {
      mcpServers: {
        continuity: {
          type: 'stdio',
          command: 'node',
          args: [BIN, 'mcp', '--runtime', 'claude-code'],
          alwaysLoad: true,
        },
      },
    };
    try {
      mkdirSync(join(world.project, '.claude'));
      writeFileSync(join(world.project, COMMITTED), JSON.stringify(machineHooks));
      writeFileSync(join(world.project, '.mcp.json'), JSON.stringify(mcpMachine));
      const r = await init(world, NO_CONTINUITY);
      expect(r.stdout).toContain(`${COMMITTED}: moved continuity's hooks to ${LOCAL}`);
      expect(r.stdout).toContain(
        ".mcp.json: removed the continuity MCP server, which ran this machine's path",
      );
      // The user's own key stays; none of our hooks is left in the committed file.
      expect(read(world, COMMITTED)).toEqual({ model: 'opus' });
      expect(existsSync(join(world.project, '.mcp.json'))).toBe(false);
      expect(new Set(ourCommands(read(world, LOCAL)))).toEqual(new Set([MACHINE_COMMAND]));

      // Put back as the earlier init left it, then install the package: rewritten in place.
      writeFileSync(join(world.project, COMMITTED), JSON.stringify(machineHooks));
      installInProject(world.project);
      const again = await init(world, NO_CONTINUITY);
      expect(again.stdout).toContain(
        `hook command rewritten to "${PROJECT_LAUNCHER} hook claude-code" for PreCompact`,
      );
      expect(new Set(ourCommands(read(world, COMMITTED)))).toEqual(
        new Set([`${PROJECT_LAUNCHER} hook claude-code`]),
      );
      expect(existsSync(join(world.project, LOCAL))).toBe(false);
    } finally {
      world.dispose();
    }
  });

  it("a teammate's committed portable hooks in a clone without the package: left as they are, none added to the local file", async () => {
    const world = makeWorld(CLOSED);
    try {
      installInProject(world.project);
      await init(world, NO_CONTINUITY);
      const committed = readFileSync(join(world.project, COMMITTED), 'utf8');
      // The clone before `npm install`.
      spawnSync('rm', ['-r', join(world.project, 'node_modules')]);
      const r = await init(world, NO_CONTINUITY);
      expect(r.stdout).toContain(`${COMMITTED}: unchanged`);
      expect(r.stdout).toContain(
        `${COMMITTED} has continuity's hooks with another launcher, left as they are: install the project's dependencies`,
      );
      expect(readFileSync(join(world.project, COMMITTED), 'utf8')).toBe(committed);
      expect(existsSync(join(world.project, LOCAL))).toBe(false);
    } finally {
      world.dispose();
    }
  });
});

describe('the dialects that share init: the project variable each runtime gives its hooks', () => {
  it.each([
    // Qwen Code 0.24.4 passes a bash command through and the shell expands the exported variable.
    ['qwen-code', '.qwen/settings.json', '"$QWEN_PROJECT_DIR"', undefined],
    // Gemini CLI 0.61.0 puts the directory in itself, shell-quoted: the variable stays unquoted.
    ['gemini', '.gemini/settings.json', '$GEMINI_PROJECT_DIR', undefined],
    // Copilot CLI 1.0.102 loads every .github/hooks/*.json: this machine's path goes beside.
    [
      'copilot',
      '.github/hooks/continuity.json',
      '"$CLAUDE_PROJECT_DIR"',
      '.github/hooks/continuity.local.json',
    ],
  ])(
    "%s: installed in the project, the launcher under the project variable; not installed, this machine's path with a note",
    async (runtime, file, ref, local) => {
      const world = makeWorld(CLOSED);
      try {
        const machine = await runCli(['init', runtime], {
          env: { ...world.shellEnv, PATH: NO_CONTINUITY },
          cwd: world.project,
        });
        expect(machine.status, machine.stderr).toBe(EXIT.ok);
        const machineFile = local ?? file;
        const text = readFileSync(join(world.project, machineFile), 'utf8');
        expect(text).toContain(JSON.stringify(`node ${BIN} hook ${runtime}`).slice(1, -1));
        expect(machine.stdout).toContain(
          local
            ? `so they went into ${local} (this machine's, git-ignored), not ${file}`
            : `and ${file} now holds that path`,
        );
        if (local) expect(existsSync(join(world.project, file))).toBe(false);
        installInProject(world.project);
        const portable = await runCli(['init', runtime], {
          env: { ...world.shellEnv, PATH: NO_CONTINUITY },
          cwd: world.project,
        });
        expect(portable.status, portable.stderr).toBe(EXIT.ok);
        const after = readFileSync(join(world.project, file), 'utf8');
        expect(after).toContain(
          JSON.stringify(`${ref}/node_modules/.bin/continuity hook ${runtime}`).slice(1, -1),
        );
        expect(after).not.toContain(BIN);
        if (local) expect(existsSync(join(world.project, local))).toBe(false);
      } finally {
        world.dispose();
      }
    },
  );
});

describe("the restatement command the messages print, from hooks run as the project's installation", () => {
  it('is recognised as this package by the always-allowed exemption; the "$CLAUDE_PROJECT_DIR" spelling and another copy are not', () => {
    const root = mkdtempSync(join(tmpdir(), 'cc-portable-h5-'));
    try {
      const project = join(root, 'clone');
      linkPackageInto(project);
      // What the hook process runs as (`process.argv[1]`) when its command is the project launcher.
      const script = join(project, 'node_modules', '.bin', 'continuity');
      const path = dirname(process.execPath);
      const launcher = launcherFor(path, script);
      expect(launcher).toBe(`node ${script}`);
      const launch = { script, path, execPath: process.execPath };
      const restate = (head: string) => `${head} observe --session s1 --decisions - <<'EOF'\n{}\nEOF`;
      expect(isContinuityReadonly(restate(launcher), launch)).toBe(true);
      expect(isContinuityReadonly(restate(script), launch)).toBe(true);
      // A variable the agent's shell could set to anything: never trusted.
      expect(isContinuityReadonly(restate(PROJECT_LAUNCHER), launch)).toBe(false);
      // Another project's `continuity` that is not this package.
      const other = join(root, 'other', 'node_modules', '.bin');
      mkdirSync(other, { recursive: true });
      writeFileSync(join(other, 'continuity'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
      expect(isContinuityReadonly(restate(`node ${join(other, 'continuity')}`), launch)).toBe(false);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
