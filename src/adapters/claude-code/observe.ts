/**
 * `continuity observe` for Claude Code: the agent restates its decisions after compaction
 * (src/adapters/core/restatement.ts does the work: digest, post snapshot, classification, gate
 * cache, post span) and reads the state and the next action.
 *
 * The session: `--session ID`, else `CLAUDE_CODE_SESSION_ID` (Claude Code gives it to the agent's
 * Bash tool), else the project's current session, which the SessionStart, PreCompact and
 * compaction hooks record (keyed by the project directory, in a 0600 file under the state root).
 */
import { resolve } from 'node:path';
import type { InputError } from '../../decision/problems.js';
import type { AdapterConfig } from '../core/config.js';
import type { Voice } from '../core/messages.js';
import { type ObserveInput, observeSession, projectSession } from '../core/observe.js';
import { type RestateResult, renderRestatement, restatementSession } from '../core/restatement.js';
import type { StateDir } from '../core/state.js';

export { findProjectSession } from '../core/state.js';

import {
  type ClaudeCodeEnv,
  claudeCodeState,
  claudeCodeVoice,
  type HookDialect,
  loadClaudeCodeConfig,
  resolveClaudeCodeEnv,
} from './config.js';

/** Options of `continuity observe`. */
export interface ObserveOptions extends ObserveInput {
  /** The session id. Default: `CLAUDE_CODE_SESSION_ID`, else the project's current session recorded by the hooks. */
  session?: string;
  /** The project directory. Default `CLAUDE_PROJECT_DIR`, else the working directory. */
  project?: string;
  /** The script this process runs, for the launcher the messages print. Default `process.argv[1]`. */
  script?: string;
}

/** What `continuity observe` found, also printed as JSON with `--json`. */
export type ObserveResult = RestateResult;

/**
 * Whose session `continuity observe` restates: that runtime's configuration, state directory and
 * words. Claude Code's by default; the Agent SDK, which drives the same binary and so gives the
 * agent's shell the same variables, passes its own.
 */
export interface ObserveTarget {
  /** The runtime whose variables name the session and project. Default Claude Code's. */
  dialect?: HookDialect;
  config(projectDir: string, env: ClaudeCodeEnv): AdapterConfig;
  state(env: ClaudeCodeEnv): StateDir;
  voice(env: ClaudeCodeEnv): Voice;
}

const CLAUDE_CODE_TARGET: ObserveTarget = {
  config: (projectDir, env) => loadClaudeCodeConfig(projectDir, env).config,
  state: claudeCodeState,
  voice: claudeCodeVoice,
};

/** Records the restatement and classifies the boundary. Throws {@link InputError} for bad input. */
export async function runObserve(
  options: ObserveOptions,
  target: ObserveTarget = CLAUDE_CODE_TARGET,
): Promise<ObserveResult> {
  const env = resolveClaudeCodeEnv(
    options.env ?? process.env,
    options.script ?? process.argv[1],
    target.dialect,
  );
  const projectDir = options.project ? resolve(options.project) : (env.projectDir ?? process.cwd());
  const config = target.config(projectDir, env);
  const state = target.state(env);
  const sessionId = restatementSession(options.session, () =>
    env.sessionId !== undefined
      ? { id: env.sessionId, from: env.dialect.env.sessionId }
      : projectSession(state, projectDir),
  );
  return observeSession(options, { config, state, voice: target.voice(env), sessionId });
}

/** The text `continuity observe` prints. */
export const renderObserve = renderRestatement;

/**
 * `continuity observe` for a runtime that runs Claude Code's hooks in its own dialect (Copilot
 * CLI, Gemini CLI, Qwen Code): Claude Code's configuration, state directory and words, with that
 * runtime's variables naming the session and project.
 */
export function observeInDialect(dialect: HookDialect): (options: ObserveOptions) => Promise<ObserveResult> {
  const target: ObserveTarget = { ...CLAUDE_CODE_TARGET, dialect };
  return (options) => runObserve(options, target);
}
