/**
 * Claude Code's facts for the adapter: its runtime name, its tools, its environment variables,
 * and how its hooks and the agent's shell find the project and the session. Resolved once at the
 * edge ({@link resolveClaudeCodeEnv}) into one typed object.
 *
 * Lean (the gate loads it): node:path and the core's configuration and state modules.
 */
import { isAbsolute, resolve } from 'node:path';
import { type ContinuityEnv, type LoadedConfig, loadConfig, resolveEnv } from '../core/config.js';
import type { ToolKind } from '../core/events.js';
import type { Voice } from '../core/messages.js';
import { launcherFor } from '../core/process.js';
import { type StateDir, stateDirOf } from '../core/state.js';

export { onPath } from '../core/process.js';

/** The runtime name written on every compaction span and ledger record, and the spans' `service.name`. */
export const RUNTIME = 'claude-code';

/**
 * The tools the gate checks by default: those that change files or run commands. `MultiEdit` is
 * no longer a built-in tool of Claude Code 2.1.328; it stays in the list, harmlessly, for older
 * versions that still have it. `PowerShell` runs commands and is inspected like `Bash`.
 */
export const DEFAULT_GATED_TOOLS: readonly string[] = Object.freeze([
  'Edit',
  'Write',
  'MultiEdit',
  'NotebookEdit',
  'Bash',
  'PowerShell',
]);

const COMMAND_TOOLS = new Set(['Bash', 'PowerShell']);
const FILE_TOOLS = new Set(['Edit', 'Write', 'MultiEdit', 'NotebookEdit']);

/** What a Claude Code tool is to the gate. */
export function toolKind(toolName: string | undefined): ToolKind {
  if (toolName && COMMAND_TOOLS.has(toolName)) return 'command';
  if (toolName && FILE_TOOLS.has(toolName)) return 'file_write';
  return 'other';
}

/** How the restatement request and the gate's reasons name Claude Code's consequential tools. */
export const CONSEQUENTIAL_TOOLS =
  'Edit, Write, NotebookEdit, or a Bash or PowerShell command that changes anything';

/** Claude Code's environment variables the adapter reads. */
export const CLAUDE_ENV = {
  /** Set by Claude Code for hooks: the project directory. */
  projectDir: 'CLAUDE_PROJECT_DIR',
  /** Set by Claude Code for hooks and for the agent's Bash tool: the session id. */
  sessionId: 'CLAUDE_CODE_SESSION_ID',
} as const;

/** The environment of a Claude Code hook or of `continuity observe`, resolved once. */
export interface ClaudeCodeEnv {
  core: ContinuityEnv;
  /** `CLAUDE_PROJECT_DIR`, when absolute. */
  projectDir?: string;
  /** `CLAUDE_CODE_SESSION_ID` (the agent's shell has it). */
  sessionId?: string;
  /** `PATH`, to tell whether `continuity` is on it. */
  path: string;
  /** The script this process runs (`bin/continuity.js`), for the launcher the messages print. */
  script?: string;
}

/** Resolves the environment once: `env` is normally `process.env`, `script` `process.argv[1]`. */
export function resolveClaudeCodeEnv(env: NodeJS.ProcessEnv, script?: string): ClaudeCodeEnv {
  const dir = env[CLAUDE_ENV.projectDir];
  return {
    core: resolveEnv(env),
    ...(dir && isAbsolute(dir) ? { projectDir: resolve(dir) } : {}),
    ...(env[CLAUDE_ENV.sessionId] ? { sessionId: env[CLAUDE_ENV.sessionId]! } : {}),
    path: env.PATH ?? '',
    ...(script ? { script } : {}),
  };
}

/** The adapter's state directory under the state root. */
export function claudeCodeState(env: ClaudeCodeEnv): StateDir {
  return stateDirOf(env.core.stateRoot, RUNTIME);
}

/**
 * The project directory of a hook or command: `CLAUDE_PROJECT_DIR` (set by Claude Code for
 * hooks), else the hook payload's `cwd`, else the process's working directory.
 */
export function resolveProjectDir(env: ClaudeCodeEnv, payloadCwd?: string): string {
  if (env.projectDir) return env.projectDir;
  if (payloadCwd && isAbsolute(payloadCwd)) return resolve(payloadCwd);
  return process.cwd();
}

/** Loads the project's configuration with Claude Code's defaults. */
export function loadClaudeCodeConfig(projectDir: string, env: ClaudeCodeEnv): LoadedConfig {
  return loadConfig(projectDir, env.core, { runtime: RUNTIME, gatedTools: DEFAULT_GATED_TOOLS });
}

/**
 * How the agent's shell starts continuity: `continuity` when it is on PATH, else
 * `node <this checkout's bin/continuity.js>`.
 */
export function launcher(env: ClaudeCodeEnv): string {
  return launcherFor(env.path, env.script);
}

/** The words' voice for Claude Code. */
export function claudeCodeVoice(env: ClaudeCodeEnv): Voice {
  return { launcher: launcher(env), consequentialTools: CONSEQUENTIAL_TOOLS };
}
