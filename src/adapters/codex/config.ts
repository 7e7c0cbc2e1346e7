/**
 * Codex CLI's facts for the adapter: its runtime name, its tools as hooks see them, its
 * environment, and how a hook finds the project. Resolved once at the edge
 * ({@link resolveCodexEnv}) into one typed object.
 *
 * Measured on codex-cli 0.171.0 (docs/codex.md): the model's `exec_command` reaches hooks as
 * `tool_name: "Bash"` with `tool_input.command`; the freeform `apply_patch` as
 * `tool_name: "apply_patch"` with the patch text in `tool_input.command`. Hooks get no session
 * variable: the session id comes from the payload.
 *
 * Lean (the gate loads it): node:path and the core's configuration, state and process modules.
 */
import { statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import {
  type ContinuityEnv,
  type LoadedConfig,
  loadConfig,
  PROJECT_STATE_DIR,
  resolveEnv,
} from '../core/config.js';
import type { ToolKind } from '../core/events.js';
import type { Voice } from '../core/messages.js';
import { absoluteLauncherFor } from '../core/process.js';
import { type StateDir, stateDirOf } from '../core/state.js';

/** The runtime name written on every compaction span and ledger record, and the spans' `service.name`. */
export const RUNTIME = 'codex-cli';

/** The tools the gate checks by default: the shell and the patch tool, the two that change anything. */
export const DEFAULT_GATED_TOOLS: readonly string[] = Object.freeze(['Bash', 'apply_patch']);

/** What a Codex tool is to the gate. */
export function toolKind(toolName: string | undefined): ToolKind {
  if (toolName === 'Bash') return 'command';
  if (toolName === 'apply_patch') return 'file_write';
  // Anything else reaching the hook (an MCP tool; only with a matcher wider than init's) is not
  // known to the gate: the unknown-tool policy holds it while writes are held.
  return 'unknown';
}

/** How the restatement request and the gate's reasons name Codex's consequential tools. */
export const CONSEQUENTIAL_TOOLS = 'apply_patch, or a shell command that changes anything';

/** Codex's environment variables the adapter reads. */
export const CODEX_ENV = {
  /** Codex's state and configuration directory (default `~/.codex`). */
  home: 'CODEX_HOME',
} as const;

/** The environment of a Codex hook or of `continuity init codex`, resolved once. */
export interface CodexEnv {
  core: ContinuityEnv;
  /** `CODEX_HOME` when absolute, else `~/.codex`. */
  codexHome: string;
  /** `PATH`, to tell whether `continuity` is on it. */
  path: string;
  /** The script this process runs (`bin/continuity.js`), for the launcher the messages print. */
  script?: string;
  /** This Node's executable, for the launcher the messages print. */
  execPath: string;
}

/** Resolves the environment once: `env` is normally `process.env`, `script` `process.argv[1]`. */
export function resolveCodexEnv(env: NodeJS.ProcessEnv, script?: string): CodexEnv {
  const core = resolveEnv(env);
  const home = env[CODEX_ENV.home];
  const userHome = env.HOME || process.getBuiltinModule?.('node:os').homedir() || '.';
  return {
    core,
    codexHome: home && isAbsolute(home) ? resolve(home) : join(userHome, '.codex'),
    path: env.PATH ?? '',
    ...(script ? { script } : {}),
    execPath: process.execPath,
  };
}

/** The adapter's state directory under the state root. */
export function codexState(env: CodexEnv): StateDir {
  return stateDirOf(env.core.stateRoot, RUNTIME);
}

function isDir(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/**
 * The project a hook works for: the nearest directory at or above the session's `cwd` that has a
 * `.continuity/` directory (what `continuity init codex` creates). `undefined` when there is none
 * and no `CONTINUITY_CONFIG` or `CONTINUITY_TASK_RECORD` names one: hooks installed in
 * `$CODEX_HOME` run for every project, and a project without continuity is left alone.
 */
export function findProjectDir(env: CodexEnv, cwd: string | undefined): string | undefined {
  const start = cwd && isAbsolute(cwd) ? resolve(cwd) : undefined;
  if (!start) return undefined;
  for (let d = start; ; d = dirname(d)) {
    if (isDir(join(d, PROJECT_STATE_DIR))) return d;
    if (dirname(d) === d) break;
  }
  return env.core.configFile || env.core.taskRecord ? start : undefined;
}

/** Codex's hooks file, in `$CODEX_HOME` (init's default) or the project's `.codex/` (`--project-hooks`). */
export const CODEX_HOOKS_FILE = 'hooks.json';
/** Codex's configuration, in `$CODEX_HOME` (where init trusts the hooks) or the project's `.codex/`. */
export const CODEX_CONFIG_FILE = 'config.toml';

/**
 * Codex's settings files that load (or trust) the continuity hooks: `hooks.json` and
 * `config.toml`, in `$CODEX_HOME` and in the project's `.codex/`. An edited hook loses its trust
 * and is skipped silently (docs/codex.md), so the gate asks before a tool writes one.
 */
export function codexRuntimeConfig(env: CodexEnv): string[] {
  return [CODEX_HOOKS_FILE, CODEX_CONFIG_FILE].flatMap((f) => [join('.codex', f), join(env.codexHome, f)]);
}

/** Loads the project's configuration with Codex's defaults. */
export function loadCodexConfig(projectDir: string, env: CodexEnv): LoadedConfig {
  return loadConfig(projectDir, env.core, {
    runtime: RUNTIME,
    gatedTools: DEFAULT_GATED_TOOLS,
    runtimeConfig: codexRuntimeConfig(env),
  });
}

/**
 * The words' voice for Codex. The launcher is absolute: Codex runs the agent's commands in a login
 * shell, which rebuilds `PATH` from the system profile, so a `continuity` the hook finds on its
 * own `PATH` may not be found there (measured on 0.171.0).
 */
export function codexVoice(env: CodexEnv): Voice {
  return {
    launcher: absoluteLauncherFor(env.path, env.script, env.execPath),
    consequentialTools: CONSEQUENTIAL_TOOLS,
  };
}
