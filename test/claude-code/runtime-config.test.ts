/**
 * The runtime's own settings that load the continuity hooks (issue 26): `.claude/settings.json`,
 * `.claude/settings.local.json`, `.mcp.json` and the user's settings for Claude Code, and each
 * other runtime's equivalents. The agent can write them (same user, a shell); one rewritten could
 * take the hooks out of the next session. The gate asks a human before a tool writes one, or a
 * command names one, whatever the continuity state (`runtime_config_ask`). Defence in depth: a
 * spelling built at run time passes the text guard (pinned below); what holds is in
 * docs/security.md.
 *
 * The lists, one per adapter, through the loader; the guard's readings, pure; the answers through
 * real processes of `continuity hook claude-code` with payloads shaped as Claude Code 2.1.328
 * sends them; Codex's and OpenCode's through the core gate with their own loaders.
 */
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  CLAUDE_CODE_DIALECT,
  claudeCodeVoice,
  loadClaudeCodeConfig,
  resolveClaudeCodeEnv,
} from '../../src/adapters/claude-code/config.js';
import { codexVoice, loadCodexConfig, resolveCodexEnv } from '../../src/adapters/codex/config.js';
import { COPILOT_DIALECT } from '../../src/adapters/copilot/config.js';
import type { AdapterConfig } from '../../src/adapters/core/config.js';
import type { ToolEvent } from '../../src/adapters/core/events.js';
import { decideGate, inspectBashCommand, inspectTargetPath } from '../../src/adapters/core/gate.js';
import { RUNTIME_CONFIG_ASK } from '../../src/adapters/core/messages.js';
import { stateDirOf } from '../../src/adapters/core/state.js';
import { GEMINI_DIALECT } from '../../src/adapters/gemini/config.js';
import { loadOpencodeConfig } from '../../src/adapters/opencode/config.js';
import { DEFAULT_CONFIG_FILE as OPENCODE_INIT_FILE } from '../../src/adapters/opencode/init.js';
import { QWEN_CODE_DIALECT } from '../../src/adapters/qwen-code/config.js';
import {
  BIN,
  compact,
  gate,
  hook,
  makeWorld,
  PAYMENTS_DECISIONS,
  PAYMENTS_VALUES,
  type Receiver,
  runCli,
  startReceiver,
  type World,
  writeTaskRecord,
} from './harness.js';

const P = '/p';
const HOME = '/h';
const CLAUDE_PATHS = {
  stateRoot: '/s/agent-continuity',
  files: [],
  projectStateDir: `${P}/.continuity`,
  runtimeConfig: [
    `${P}/.claude/settings.json`,
    `${P}/.claude/settings.local.json`,
    `${P}/.mcp.json`,
    `${HOME}/.claude/settings.json`,
  ],
};

describe("each adapter supplies its runtime's settings files, init's among them", () => {
  const env = { HOME, CONTINUITY_STATE_DIR: '/s' };

  it('Claude Code: the project, local and user settings and .mcp.json', () => {
    const { config } = loadClaudeCodeConfig(P, resolveClaudeCodeEnv(env));
    expect(config.runtimeConfig).toEqual(CLAUDE_PATHS.runtimeConfig);
    expect(config.runtimeConfig).toContain(join(P, CLAUDE_CODE_DIALECT.settingsFile));
  });

  it.each([
    ['Qwen Code', QWEN_CODE_DIALECT, [`${P}/.qwen/settings.json`, `${HOME}/.qwen/settings.json`]],
    ['Gemini CLI', GEMINI_DIALECT, [`${P}/.gemini/settings.json`, `${HOME}/.gemini/settings.json`]],
    ['Copilot CLI', COPILOT_DIALECT, [`${P}/.github/hooks/`, ...CLAUDE_PATHS.runtimeConfig]],
  ] as const)('%s: its own', (_name, dialect, expected) => {
    const { config } = loadClaudeCodeConfig(P, resolveClaudeCodeEnv(env, undefined, dialect));
    expect(config.runtimeConfig).toEqual(expected);
    // init's file is one of them (Copilot's through its directory).
    const paths = { ...CLAUDE_PATHS, runtimeConfig: config.runtimeConfig! };
    expect(inspectTargetPath(dialect.settingsFile, P, paths)).toBe('touches_runtime_config');
  });

  it("Codex: hooks.json and config.toml, in the project's .codex/ and in CODEX_HOME", () => {
    const { config } = loadCodexConfig(P, resolveCodexEnv({ ...env, CODEX_HOME: '/c' }));
    expect([...config.runtimeConfig!].sort()).toEqual(
      ['/c/config.toml', '/c/hooks.json', `${P}/.codex/config.toml`, `${P}/.codex/hooks.json`].sort(),
    );
    const byDefault = loadCodexConfig(P, resolveCodexEnv(env)).config;
    expect(byDefault.runtimeConfig).toContain(`${HOME}/.codex/hooks.json`);
  });

  it('OpenCode: opencode.json (init’s), opencode.jsonc and .opencode/', () => {
    const { config } = loadOpencodeConfig(P, resolveClaudeCodeEnv(env).core);
    expect(config.runtimeConfig).toEqual([
      `${P}/${OPENCODE_INIT_FILE}`,
      `${P}/opencode.jsonc`,
      `${P}/.opencode/`,
    ]);
  });

  it('leaves out the user’s files when HOME is not absolute', () => {
    const { config } = loadClaudeCodeConfig(P, resolveClaudeCodeEnv({ HOME: 'rel' }));
    expect(config.runtimeConfig).toEqual(CLAUDE_PATHS.runtimeConfig.slice(0, 3));
  });
});

describe('the guard reads the settings files in targets and commands', () => {
  it.each([
    ['.claude/settings.json'],
    ['.claude/settings.local.json'],
    ['./.claude/settings.local.json'],
    ['/p/.claude/settings.json'],
    ['.mcp.json'],
    ['/h/.claude/settings.json'],
    ['.claude/../.claude/settings.json'],
  ])('a write to %s', (target) => {
    expect(inspectTargetPath(target, P, CLAUDE_PATHS)).toBe('touches_runtime_config');
  });

  it.each([['.claude/commands/deploy.md'], ['src/settings.json'], ['.claude-notes.md'], ['mcp.json']])(
    'not a write to %s',
    (target) => {
      expect(inspectTargetPath(target, P, CLAUDE_PATHS)).toBe('other');
    },
  );

  it.each([
    `python3 -c "import json; open('.claude/settings.local.json','w').write('{}')"`,
    `sed -i 's/hook claude-code//' .claude/settings.json`,
    'echo {} > .mcp.json',
    'jq . "/p/.claude/settings.json"',
    'rm -rf .claude',
    'mv .claude/ /tmp/x',
    'cat ~/.claude/settings.json',
    `cp x.json "$HOME"/.claude/settings.json`,
  ])('a command naming it: %s', (command) => {
    expect(inspectBashCommand(command, CLAUDE_PATHS)).toBe('touches_runtime_config');
  });

  it.each([
    'cat .claude/commands/deploy.md',
    'npm test -- settings.json',
    'ls claude',
    'git commit -m "tidy .claudeignore"',
  ])('not: %s', (command) => {
    expect(inspectBashCommand(command, CLAUDE_PATHS)).toBe('other');
  });

  it('does not see a path built at run time (defence in depth only, docs/security.md)', () => {
    const spelled = `python3 -c "open('.cl'+'aude/settings.local.json','w').write('{}')"`;
    // Only that an interpreter is given code: refused while a boundary is unresolved, let through otherwise.
    expect(inspectBashCommand(spelled, CLAUDE_PATHS)).toBe('runtime_chosen');
  });

  it('reads a directory entry (Copilot’s .github/hooks/) with every file in it, and its holder', () => {
    const paths = { ...CLAUDE_PATHS, runtimeConfig: [`${P}/.github/hooks/`] };
    expect(inspectTargetPath('.github/hooks/other.json', P, paths)).toBe('touches_runtime_config');
    expect(inspectTargetPath('.github/workflows/ci.yml', P, paths)).toBe('other');
    expect(inspectBashCommand('rm .github/hooks/continuity.json', paths)).toBe('touches_runtime_config');
    expect(inspectBashCommand('rm -r .github/hooks', paths)).toBe('touches_runtime_config');
    expect(inspectBashCommand('cat .github/workflows/ci.yml', paths)).toBe('other');
  });

  it('keeps the evidence and the task record first', () => {
    expect(inspectBashCommand('cp .continuity/config.json .claude/settings.json', CLAUDE_PATHS)).toBe(
      'touches_task_record',
    );
    expect(inspectBashCommand('cat /s/agent-continuity/ledger.jsonl > .mcp.json', CLAUDE_PATHS)).toBe(
      'touches_evidence',
    );
  });
});

// ── Through the hook process ─────────────────────────────────────────────────────────────────────

let receiver: Receiver;
let world: World;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
});
afterEach(() => world?.dispose());

function fresh(): World {
  world = makeWorld(receiver.endpoint);
  writeTaskRecord(world, PAYMENTS_DECISIONS);
  return world;
}

describe('the gate asks before the agent writes the runtime’s settings (continuity hook claude-code)', () => {
  it('asks for a Write, an Edit and a Bash command on them with no compaction held, in words that say why', async () => {
    const w = fresh();
    const sid = 'runtime-config-1';
    await hook(w, sid, 'SessionStart', { source: 'startup' });
    const asked = [
      await gate(w, sid, 'Write', {
        file_path: join(w.project, '.claude', 'settings.local.json'),
        content: '{}',
      }),
      await gate(w, sid, 'Edit', {
        file_path: join(w.project, '.claude', 'settings.json'),
        old_string: 'hook claude-code',
        new_string: 'true',
      }),
      await gate(w, sid, 'Write', { file_path: join(w.project, '.mcp.json'), content: '{}' }),
      await gate(w, sid, 'Write', {
        file_path: join(w.env.HOME!, '.claude', 'settings.json'),
        content: '{}',
      }),
      await gate(w, sid, 'Bash', {
        command: `python3 -c "open('.claude/settings.local.json','w').write('{\\"disableAllHooks\\": true}')"`,
      }),
    ];
    for (const a of asked) {
      expect(a.decision).toBe('ask');
      expect(a.reason).toBe(RUNTIME_CONFIG_ASK);
    }
    expect(RUNTIME_CONFIG_ASK).toMatch(/load the continuity hooks/);
    expect(RUNTIME_CONFIG_ASK).toMatch(/A human should confirm/);
    // Anything else still passes.
    expect(
      (
        await gate(w, sid, 'Write', {
          file_path: join(w.project, '.claude', 'commands', 'x.md'),
          content: 'x',
        })
      ).decision,
    ).toBe('allow');
    expect((await gate(w, sid, 'Bash', { command: 'npm test' })).decision).toBe('allow');
  });

  it('follows symbolic links to them, as for .continuity/', async () => {
    const w = fresh();
    const sid = 'runtime-config-links';
    await hook(w, sid, 'SessionStart', { source: 'startup' });
    mkdirSync(join(w.project, '.claude'), { recursive: true });
    writeFileSync(join(w.project, '.claude', 'settings.json'), '{}\n');
    symlinkSync(join(w.project, '.claude', 'settings.json'), join(w.project, 'notes.json'));
    symlinkSync(join(w.project, '.claude'), join(w.project, 'cfg'));
    for (const target of ['notes.json', join(w.project, 'cfg', 'settings.local.json')]) {
      const a = await gate(w, sid, 'Write', { file_path: target, content: '{}' });
      expect(a.decision, target).toBe('ask');
      expect(a.reason).toBe(RUNTIME_CONFIG_ASK);
    }
  });

  it('lets the state outrank it: while a boundary is unresolved the Write is denied', async () => {
    const w = fresh();
    const sid = 'runtime-config-held';
    await hook(w, sid, 'SessionStart', { source: 'startup' });
    await compact(w, sid);
    const g = await gate(w, sid, 'Write', {
      file_path: join(w.project, '.claude', 'settings.local.json'),
      content: '{"env":{"CONTINUITY_GATE_TOOLS":"None"}}',
    });
    expect(g.decision).toBe('deny');
    // Restated: the state allows, and the guard still asks.
    const r = await runCli(['observe', '--session', sid, '--decisions', '-', '--json'], {
      input: JSON.stringify(PAYMENTS_VALUES),
      env: w.shellEnv,
      cwd: w.project,
    });
    expect(JSON.parse(r.stdout).state).toBe('preserved');
    const after = await gate(w, sid, 'Write', {
      file_path: join(w.project, '.claude', 'settings.local.json'),
      content: '{}',
    });
    expect(after.decision).toBe('ask');
    expect(after.reason).toBe(RUNTIME_CONFIG_ASK);
  });
});

describe("Codex's and OpenCode's settings (the core gate with their loaders)", () => {
  const decide = (config: AdapterConfig, tool: ToolEvent, voice = codexVoice(resolveCodexEnv({}))) =>
    decideGate('s-runtime', tool, {
      config,
      state: stateDirOf(join(world.root, 'state'), 'x'),
      // No compaction recorded: nothing for the session.
      rederive: async () => ({
        v: 2,
        sessionId: 's-runtime',
        boundary: null,
        updatedAt: new Date().toISOString(),
      }),
      voice,
    });

  it('asks for an apply_patch or a command on $CODEX_HOME/hooks.json or the project’s .codex/config.toml', async () => {
    const w = fresh();
    const env = resolveCodexEnv({ ...w.env, CODEX_HOME: join(w.root, 'codex-home') });
    const { config } = loadCodexConfig(w.project, env);
    const patch = await decide(config, {
      type: 'tool',
      toolName: 'apply_patch',
      kind: 'file_write',
      filePath: join(w.root, 'codex-home', 'hooks.json'),
    });
    expect(patch).toMatchObject({ verdict: 'ask', code: 'runtime_config_ask' });
    const bash = await decide(config, {
      type: 'tool',
      toolName: 'Bash',
      kind: 'command',
      command: "sed -i '/hook codex/d' .codex/config.toml",
    });
    expect(bash).toMatchObject({ verdict: 'ask', code: 'runtime_config_ask' });
    const other = await decide(config, {
      type: 'tool',
      toolName: 'apply_patch',
      kind: 'file_write',
      filePath: join(w.project, 'src', 'a.ts'),
    });
    expect(other.verdict).toBe('allow');
  });

  it('asks for an OpenCode write to opencode.json or a plugin in .opencode/', async () => {
    const w = fresh();
    const { config } = loadOpencodeConfig(w.project, resolveClaudeCodeEnv(w.env).core);
    for (const filePath of [
      join(w.project, 'opencode.json'),
      join(w.project, '.opencode', 'plugin', 'x.ts'),
    ]) {
      const a = await decide(
        config,
        { type: 'tool', toolName: 'write', kind: 'other', filePath },
        claudeCodeVoice(resolveClaudeCodeEnv(w.env)),
      );
      expect(a, filePath).toMatchObject({ verdict: 'ask', code: 'runtime_config_ask' });
    }
  });
});

describe('continuity init claude-code --print-managed', () => {
  it("prints init's hooks as a managed-settings document with an absolute launcher, and writes nothing", async () => {
    const w = fresh();
    const r = await runCli(['init', 'claude-code', '--print-managed'], { env: w.shellEnv, cwd: w.project });
    expect(r.status, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout) as {
      hooks: Record<
        string,
        Array<{ matcher?: string; hooks: Array<{ command: string; onFailure?: string }> }>
      >;
    };
    expect(Object.keys(doc)).toEqual(['hooks']);
    const gateHook = doc.hooks.PreToolUse![0]!.hooks[0]!;
    expect(gateHook.onFailure).toBe('block');
    // This Node and this installation's entry point, both absolute: no PATH the agent's shell files decide.
    expect(gateHook.command).toBe(`${process.execPath} ${BIN} hook claude-code`);
    for (const event of ['PreCompact', 'SessionStart', 'PostCompact', 'PreSkillShellCommand'])
      expect(doc.hooks[event], event).toBeDefined();
    expect(existsSync(join(w.project, '.claude'))).toBe(false);
    const launched = await runCli(['init', 'claude-code', '--print-managed', '--command', 'node /opt/c.js'], {
      env: w.shellEnv,
      cwd: w.project,
    });
    expect(JSON.parse(launched.stdout).hooks.PreToolUse[0].hooks[0].command).toBe(
      'node /opt/c.js hook claude-code',
    );
  });

  it('refuses another runtime and the options that write, naming them (exit 2), writing nothing', async () => {
    const w = fresh();
    for (const args of [
      ['init', 'codex', '--print-managed'],
      ['init', 'claude-code', '--print-managed', '--remove'],
      ['init', 'claude-code', '--print-managed', '--settings', '.claude/settings.local.json'],
    ]) {
      const r = await runCli(args, { env: w.shellEnv, cwd: w.project });
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/print-managed/);
    }
    expect(existsSync(join(w.project, '.claude'))).toBe(false);
  });
});
