/**
 * `continuity observe` for a Codex session: the agent restates its decisions after compaction
 * (src/adapters/core/restatement.ts does the work: digest, post snapshot, classification, gate
 * cache, post span). `continuity observe` routes here when `--runtime codex` is given or when the
 * session's latest boundary in the ledger was recorded by Codex (`codex-cli`).
 *
 * The session: `--session ID` (the restatement request and the gate's reasons print it), else the
 * project's current Codex session, which the SessionStart, PreCompact and compaction hooks record.
 * Codex gives its hooks and the agent's shell no session variable.
 */
import { resolve } from 'node:path';
import { type ObserveInput, observeSession, projectSession } from '../core/observe.js';
import { type RestateResult, restatementSession } from '../core/restatement.js';
import { codexState, codexVoice, findProjectDir, loadCodexConfig, resolveCodexEnv } from './config.js';

/** Options of `continuity observe` for Codex. */
export interface CodexObserveOptions extends ObserveInput {
  /** The session id. Default: the project's current Codex session recorded by the hooks. */
  session?: string;
  /** The project directory. Default: the nearest directory at or above the working directory with `.continuity/`. */
  project?: string;
  /** The script this process runs, for the launcher the messages print. Default `process.argv[1]`. */
  script?: string;
}

/** Records the restatement and classifies the boundary. Throws {@link InputError} for bad input. */
export async function runCodexObserve(options: CodexObserveOptions): Promise<RestateResult> {
  const env = resolveCodexEnv(options.env ?? process.env, options.script ?? process.argv[1]);
  const cwd = process.cwd();
  const projectDir = options.project ? resolve(options.project) : (findProjectDir(env, cwd) ?? cwd);
  const { config } = loadCodexConfig(projectDir, env);
  const state = codexState(env);
  const sessionId = restatementSession(options.session, () => projectSession(state, projectDir));
  return observeSession(options, { config, state, voice: codexVoice(env), sessionId });
}
