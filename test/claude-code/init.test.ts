/**
 * `continuity init claude-code` as a user runs it from a fresh clone: the hook command that works
 * without `continuity` on PATH, `--command` rewriting only our hooks, `--remove` taking out
 * exactly what init added, `.continuity/` in `.gitignore`, and the permission rules that keep the
 * agent's tools out of the evidence.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gitignoreWith } from '../../src/adapters/claude-code/init.js';
import { EXIT } from '../../src/cli/exit-codes.js';
import { BIN, makeWorld, payload, ROOT, runCli, type World } from './harness.js';

const CLOSED = 'http://127.0.0.1:9';

interface Hook {
  command: string;
}
interface Settings {
  hooks?: Record<string, Array<{ matcher?: string; hooks: Hook[] }>>;
  permissions: { deny: string[]; allow?: string[] };
  sandbox: { enabled?: boolean; filesystem: { denyWrite: string[]; denyRead?: string[] } };
  enabledMcpjsonServers?: string[];
}

function settingsOf(world: World, file = 'settings.json'): Settings {
  return JSON.parse(readFileSync(join(world.project, '.claude', file), 'utf8')) as Settings;
}

function ourCommands(settings: Settings): string[] {
  return Object.values(settings.hooks ?? {})
    .flatMap((groups) => groups.flatMap((g) => g.hooks.map((h) => h.command)))
    .filter((c) => /hook claude-code/.test(c));
}

async function init(world: World, ...args: string[]) {
  const r = await runCli(['init', 'claude-code', ...args], { env: world.shellEnv, cwd: world.project });
  expect(r.status, r.stderr).toBe(EXIT.ok);
  return r;
}

/** A Write's PreToolUse sent to the exact command line through a shell, as Claude Code runs it. */
function writeThroughShell(world: World, command: string, sessionId: string) {
  return spawnSync('/bin/sh', ['-c', command], {
    input: payload(world, sessionId, 'PreToolUse', {
      tool_name: 'Write',
      tool_input: { file_path: 'a.ts', content: 'x' },
    }),
    env: { ...world.env, PATH: `${process.execPath.replace(/\/node$/, '')}:/usr/bin:/bin` },
    cwd: world.project,
    encoding: 'utf8',
  });
}

describe('continuity init claude-code', () => {
  it("writes hooks that run from this checkout when `continuity` is not on PATH (into this machine's settings file), and they work as written", async () => {
    const world = makeWorld(CLOSED, { PATH: '/usr/bin:/bin' });
    try {
      const r = await init(world);
      expect(r.stdout).toContain('agent-continuity is neither on PATH nor installed in the project');
      const commands = ourCommands(settingsOf(world, 'settings.local.json'));
      expect(new Set(commands)).toEqual(new Set([`node ${BIN} hook claude-code`]));
      const sh = writeThroughShell(world, commands[0]!, 'fresh-clone-1');
      expect(sh.status, sh.stderr).toBe(0);
      expect(sh.stdout).toBe(''); // no compaction yet: no objection
    } finally {
      world.dispose();
    }
  });

  it('quotes a checkout path with a space and a quote in the hook command, and the hook runs through a shell', async () => {
    const world = makeWorld(CLOSED, { PATH: '/usr/bin:/bin' });
    // A copy of this checkout (bin, dist, package.json; node_modules linked) under such a path.
    const checkout = join(world.root, "my agent's tools", 'agent-continuity');
    mkdirSync(checkout, { recursive: true });
    for (const part of ['bin', 'dist', 'package.json'])
      cpSync(join(ROOT, part), join(checkout, part), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules'), join(checkout, 'node_modules'));
    try {
      const bin = join(checkout, 'bin', 'continuity.js');
      const r = spawnSync(process.execPath, [bin, 'init', 'claude-code'], {
        env: world.shellEnv,
        cwd: world.project,
        encoding: 'utf8',
      });
      expect(r.status, r.stderr).toBe(EXIT.ok);
      const commands = ourCommands(settingsOf(world, 'settings.local.json'));
      expect(new Set(commands)).toEqual(new Set([`node '${bin.replace(/'/g, `'\\''`)}' hook claude-code`]));
      const sh = writeThroughShell(world, commands[0]!, 'quoted-path-1');
      expect(sh.status, sh.stderr).toBe(0);
      expect(sh.stderr).toBe('');
    } finally {
      world.dispose();
    }
  });

  it('--command rewrites the command of our hooks only, once', async () => {
    const world = makeWorld(CLOSED);
    try {
      mkdirSync(join(world.project, '.claude'));
      const theirs = { type: 'command', command: './their-guard.sh', timeout: 3 };
      writeFileSync(
        join(world.project, '.claude', 'settings.json'),
        JSON.stringify({ hooks: { PreToolUse: [{ matcher: 'Bash', hooks: [theirs] }] } }),
      );
      await init(world, '--command', 'continuity');
      expect(new Set(ourCommands(settingsOf(world)))).toEqual(new Set(['continuity hook claude-code']));
      const r = await init(world, '--command', 'node /opt/ac/bin/continuity.js');
      expect(r.stdout).toContain(
        'hook command rewritten to "node /opt/ac/bin/continuity.js hook claude-code"',
      );
      const s = settingsOf(world);
      expect(new Set(ourCommands(s))).toEqual(new Set(['node /opt/ac/bin/continuity.js hook claude-code']));
      expect(s.hooks?.PreToolUse?.[0]).toEqual({ matcher: 'Bash', hooks: [theirs] });
      const again = await init(world, '--command', 'node /opt/ac/bin/continuity.js');
      expect(again.stdout).toContain('.claude/settings.json: unchanged');
      // Without --command, existing hooks are left as they are.
      const plain = await init(world);
      expect(plain.stdout).toContain('.claude/settings.json: unchanged');
    } finally {
      world.dispose();
    }
  });

  it('adds permission rules keeping the agent out of the ledger, state and keys; --remove takes out exactly what it added', async () => {
    const world = makeWorld(CLOSED, { CONTINUITY_DIGEST_KEY_FILE: '/keys/continuity-digest.key' });
    try {
      mkdirSync(join(world.project, '.claude'));
      const mine = {
        model: 'opus',
        permissions: { allow: ['Bash(npm test)'], deny: ['Read(./secrets/**)'] },
        sandbox: { enabled: false, filesystem: { denyWrite: ['/etc'] } },
        hooks: {
          PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: './guard.sh' }] }],
          Stop: [{ hooks: [{ type: 'command', command: 'notify-send done' }] }],
        },
      };
      const path = join(world.project, '.claude', 'settings.json');
      writeFileSync(path, JSON.stringify(mine));
      await init(world);
      const s = settingsOf(world);
      const taskDir = join(world.project, '.continuity');
      // Read and Edit: the only path rules Claude Code 2.1.328 matches (Read covers Grep and Glob,
      // Edit covers Write); the real binary proves it (test/claude-code-e2e/protection.test.ts).
      expect(s.permissions.deny).toEqual([
        'Read(./secrets/**)',
        ...['Read', 'Edit'].flatMap((tool) => [
          `${tool}(/${world.state}/**)`,
          `${tool}(/${taskDir}/**)`,
          `${tool}(//keys/continuity-digest.key)`,
        ]),
      ]);
      expect(s.sandbox.filesystem.denyWrite).toEqual([
        '/etc',
        world.state,
        taskDir,
        '/keys/continuity-digest.key',
      ]);
      expect(s.sandbox.filesystem.denyRead).toEqual([taskDir]);
      expect(s.sandbox.enabled).toBe(false);
      // The restatement tool: approved and allowed, the user's own allow rule kept first.
      expect(s.permissions.allow).toEqual(['Bash(npm test)', 'mcp__continuity__restate']);
      expect(s.enabledMcpjsonServers).toEqual(['continuity']);
      const mcp = JSON.parse(readFileSync(join(world.project, '.mcp.json'), 'utf8'));
      expect(mcp).toEqual({
        mcpServers: {
          // The test world has `continuity` on PATH (a link to this checkout's bin, as npm link makes).
          continuity: {
            type: 'stdio',
            command: 'continuity',
            args: ['mcp', '--runtime', 'claude-code'],
            alwaysLoad: true,
          },
        },
      });

      const r = await init(world, '--remove');
      expect(r.stdout).toContain('removed continuity hooks from');
      expect(settingsOf(world)).toEqual(mine);
      expect(existsSync(join(world.project, '.mcp.json'))).toBe(false);
      const again = await init(world, '--remove');
      expect(again.stdout).toContain('no continuity hooks or rules; unchanged');
    } finally {
      world.dispose();
    }
  });

  it("registers the restate MCP server in .mcp.json beside the user's servers; --remove takes out only ours", async () => {
    const world = makeWorld(CLOSED);
    try {
      const mcpPath = join(world.project, '.mcp.json');
      const theirs = { mcpServers: { docs: { command: 'docs-server', args: ['--stdio'] } } };
      writeFileSync(mcpPath, JSON.stringify(theirs));
      const first = await init(world, '--command', 'continuity');
      expect(first.stdout).toContain('.mcp.json: added the continuity MCP server');
      const doc = JSON.parse(readFileSync(mcpPath, 'utf8'));
      expect(doc.mcpServers.docs).toEqual(theirs.mcpServers.docs);
      expect(doc.mcpServers.continuity).toEqual({
        type: 'stdio',
        command: 'continuity',
        args: ['mcp', '--runtime', 'claude-code'],
        alwaysLoad: true,
      });
      // Idempotent; a new launcher rewrites only our entry.
      expect((await init(world, '--command', 'continuity')).stdout).not.toContain('.mcp.json');
      const moved = await init(world, '--command', "node '/opt/my tools/bin/continuity.js'");
      expect(moved.stdout).toContain('.mcp.json: rewritten the continuity MCP server');
      expect(JSON.parse(readFileSync(mcpPath, 'utf8')).mcpServers.continuity.args).toEqual([
        '/opt/my tools/bin/continuity.js',
        'mcp',
        '--runtime',
        'claude-code',
      ]);
      const r = await init(world, '--remove');
      expect(r.stdout).toContain('.mcp.json: removed the continuity MCP server');
      expect(JSON.parse(readFileSync(mcpPath, 'utf8'))).toEqual(theirs);
    } finally {
      world.dispose();
    }
  });

  it('refuses, writing nothing, when another server named continuity is in .mcp.json', async () => {
    const world = makeWorld(CLOSED);
    try {
      const mcpPath = join(world.project, '.mcp.json');
      const text = JSON.stringify({ mcpServers: { continuity: { command: 'someone-elses-server' } } });
      writeFileSync(mcpPath, text);
      const r = await runCli(['init', 'claude-code'], { env: world.shellEnv, cwd: world.project });
      expect(r.status).toBe(EXIT.badInput);
      expect(r.stderr).toContain('.mcp.json: mcpServers.continuity: is another server of that name');
      expect(readFileSync(mcpPath, 'utf8')).toBe(text);
      expect(existsSync(join(world.project, '.claude', 'settings.json'))).toBe(false);
    } finally {
      world.dispose();
    }
  });

  it('gitignores a local settings file it writes, and --remove deletes the file and directory it created', async () => {
    const world = makeWorld(CLOSED);
    try {
      const local = join(world.project, '.claude', 'settings.local.json');
      const first = await init(world, '--settings', '.claude/settings.local.json');
      expect(first.stdout).toContain('.gitignore: added /.claude/settings.local.json');
      expect(existsSync(local)).toBe(true);
      const ignore = readFileSync(join(world.project, '.gitignore'), 'utf8');
      expect(ignore.split('\n').filter((l) => l === '/.claude/settings.local.json')).toHaveLength(1);
      await init(world, '--settings', '.claude/settings.local.json');
      expect(readFileSync(join(world.project, '.gitignore'), 'utf8')).toBe(ignore);
      const removed = await init(world, '--settings', '.claude/settings.local.json', '--remove');
      expect(removed.stdout).toContain('.claude/settings.local.json: deleted');
      expect(existsSync(local)).toBe(false);
      expect(existsSync(join(world.project, '.claude'))).toBe(false);
    } finally {
      world.dispose();
    }
  });

  it('--remove keeps a settings file the user had, even when init leaves it empty', async () => {
    const world = makeWorld(CLOSED);
    try {
      const path = join(world.project, '.claude', 'settings.json');
      mkdirSync(join(world.project, '.claude'));
      writeFileSync(path, '{}\n');
      await init(world);
      await init(world, '--remove');
      expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({});
    } finally {
      world.dispose();
    }
  });

  it('puts .continuity/ into .gitignore once (the task record holds raw values)', async () => {
    const world = makeWorld(CLOSED);
    try {
      writeFileSync(join(world.project, '.gitignore'), 'node_modules');
      const first = await init(world);
      expect(first.stdout).toContain('.gitignore: added .continuity/');
      const text = readFileSync(join(world.project, '.gitignore'), 'utf8');
      expect(text.startsWith('node_modules\n')).toBe(true);
      expect(text.split('\n').filter((l) => l === '.continuity/')).toHaveLength(1);
      const second = await init(world);
      expect(second.stdout).toContain('.gitignore: already ignores .continuity/');
      expect(readFileSync(join(world.project, '.gitignore'), 'utf8')).toBe(text);
      expect(existsSync(join(world.project, '.continuity', 'task.json'))).toBe(true);
    } finally {
      world.dispose();
    }
  });

  it.each([
    [undefined, true],
    ['', true],
    ['dist\n', true],
    ['/.continuity\n', false],
    ['.continuity\r\nx\r\n', false],
  ])('gitignoreWith(%j) adds the line: %s', (text, adds) => {
    const out = gitignoreWith(text);
    expect(out !== undefined).toBe(adds);
    if (out !== undefined) expect(out.endsWith('.continuity/\n')).toBe(true);
  });
});
