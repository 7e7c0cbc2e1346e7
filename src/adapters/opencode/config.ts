/**
 * OpenCode's facts for the adapter: its runtime name, its tools and what each one's arguments
 * say to the gate, where the project is, and how the agent's shell starts `continuity`. Measured
 * on opencode-ai 1.18.33 (docs/opencode.md).
 */
import { existsSync } from 'node:fs';
import { join, resolve, sep } from 'node:path';
import { type ContinuityEnv, type LoadedConfig, loadConfig, PROJECT_STATE_DIR } from '../core/config.js';
import type { ToolEvent } from '../core/events.js';
import type { Voice } from '../core/messages.js';
import { onPath, shellWord } from '../core/process.js';
import { binPath, packageRoot } from '../core/project.js';
import { type StateDir, stateDirOf } from '../core/state.js';

/** The runtime name written on every compaction span and ledger record, and the spans' `service.name`. */
export const RUNTIME = 'opencode';

/**
 * The tools the gate checks by default: those that change files or run commands on 1.18.33.
 * `bash` (its `command` is inspected), `write` and `edit` (their `filePath`), `apply_patch` (the
 * paths its `patchText` names; OpenCode gives it to some models in place of edit and write),
 * `task` (a subagent, which can write) and `batch` (the experimental tool that runs others).
 */
export const DEFAULT_GATED_TOOLS: readonly string[] = Object.freeze([
  'bash',
  'edit',
  'write',
  'apply_patch',
  'task',
  'batch',
]);

/** How the restatement request and the gate's reasons name OpenCode's consequential tools. */
export const CONSEQUENTIAL_TOOLS = 'edit, write, apply_patch, task, or a bash command that changes anything';

/**
 * OpenCode's built-in tools that only read, search, plan or ask (1.18.33): never gated. Any other
 * name outside {@link DEFAULT_GATED_TOOLS} (an MCP tool, a plugin's tool, one a later version
 * adds) is unknown to the gate: while writes are held it answers the unknown-tool policy.
 */
export const READ_ONLY_TOOLS: ReadonlySet<string> = new Set([
  'read',
  'glob',
  'grep',
  'list',
  'webfetch',
  'websearch',
  'codesearch',
  'todowrite',
  'todoread',
  'question',
  'lsp',
]);

function toolKindOf(tool: string): ToolEvent['kind'] {
  if (DEFAULT_GATED_TOOLS.includes(tool)) return 'other';
  return READ_ONLY_TOOLS.has(tool) ? 'read_only' : 'unknown';
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

/** The file paths an `apply_patch` text names (`*** Add File:`, `Update File:`, `Delete File:`, `Move to:`). */
export function patchPaths(patchText: string): string[] {
  const out: string[] = [];
  for (const m of patchText.matchAll(/^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+?)\s*$/gm)) {
    out.push(m[1]!);
  }
  return [...new Set(out)];
}

/**
 * What one OpenCode tool call is to the gate: one core tool event, or one per file an
 * `apply_patch` touches (the gate answers for each; the most severe answer wins, `decideToolCall`). The arguments are
 * inspected here and never stored.
 */
export function toolEvents(tool: string, args: unknown): ToolEvent[] {
  const a = typeof args === 'object' && args !== null ? (args as Record<string, unknown>) : {};
  switch (tool) {
    case 'bash': {
      const command = str(a.command);
      return [
        { type: 'tool', toolName: tool, kind: 'command', ...(command !== undefined ? { command } : {}) },
      ];
    }
    case 'write':
    case 'edit': {
      const filePath = str(a.filePath);
      return [{ type: 'tool', toolName: tool, kind: 'file_write', ...(filePath ? { filePath } : {}) }];
    }
    case 'apply_patch': {
      const paths = patchPaths(str(a.patchText) ?? '');
      if (paths.length === 0) return [{ type: 'tool', toolName: tool, kind: 'file_write' }];
      return paths.map((filePath) => ({ type: 'tool', toolName: tool, kind: 'file_write', filePath }));
    }
    default:
      return [{ type: 'tool', toolName: tool, kind: toolKindOf(tool) }];
  }
}

/**
 * The project of a plugin instance: the nearest directory from OpenCode's `directory` up to its
 * `worktree` (the git root) that holds `.continuity/`, else `directory` itself.
 */
export function resolveProjectDir(directory: string, worktree: string): string {
  const start = resolve(directory);
  const root = resolve(worktree);
  const bounded = root !== sep && (start === root || start.startsWith(`${root}${sep}`));
  let d = start;
  for (;;) {
    if (existsSync(join(d, PROJECT_STATE_DIR))) return d;
    if (!bounded || d === root) return start;
    d = resolve(d, '..');
  }
}

/** The project configuration file init adds the plugin to. */
export const OPENCODE_CONFIG_FILE = 'opencode.json';

/**
 * OpenCode's settings that load the continuity plugin or could load another beside it: the
 * project's `opencode.json` (init's) and the `opencode.jsonc` merged with it, and the project's
 * `.opencode/` configuration directory (plugins, configuration). The gate asks before a tool
 * writes one.
 */
export const OPENCODE_RUNTIME_CONFIG: readonly string[] = Object.freeze([
  OPENCODE_CONFIG_FILE,
  `${OPENCODE_CONFIG_FILE}c`,
  '.opencode/',
]);

/** Loads the project's configuration with OpenCode's defaults. */
export function loadOpencodeConfig(projectDir: string, env: ContinuityEnv): LoadedConfig {
  return loadConfig(projectDir, env, {
    runtime: RUNTIME,
    gatedTools: DEFAULT_GATED_TOOLS,
    runtimeConfig: OPENCODE_RUNTIME_CONFIG,
  });
}

/** The adapter's state directory under the state root. */
export function opencodeState(env: ContinuityEnv): StateDir {
  return stateDirOf(env.stateRoot, RUNTIME);
}

/** The plugin file `continuity init opencode` registers: `dist/adapters/opencode/plugin.js` of this installation. */
export function pluginPath(): string {
  return join(packageRoot(), 'dist', 'adapters', 'opencode', 'plugin.js');
}

/**
 * The words' voice for OpenCode. The bash tool inherits OpenCode's `PATH`: `continuity` when it
 * is on it, else `node <this installation's bin/continuity.js>`, so the printed command runs as
 * printed.
 */
export function opencodeVoice(path: string): Voice {
  const launcher = onPath('continuity', path) ? 'continuity' : `node ${shellWord(binPath())}`;
  return { launcher, consequentialTools: CONSEQUENTIAL_TOOLS };
}
