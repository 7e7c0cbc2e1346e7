/**
 * `continuity observe` for an OpenCode session: the agent restates its decisions after
 * compaction through its bash tool (src/adapters/core/restatement.ts does the work) and reads
 * the state and the next action. The CLI sends a restatement here when the session's latest
 * boundary in the ledger was recorded by OpenCode, or with `--runtime opencode`.
 *
 * The session: `--session ID` (the restatement request prints it), else the project's current
 * OpenCode session, which the plugin records at each compaction.
 */
import { resolve } from 'node:path';
import { resolveEnv } from '../core/config.js';
import { type ObserveInput, observeSession, projectSession } from '../core/observe.js';
import { type RestateResult, restatementSession } from '../core/restatement.js';
import { loadOpencodeConfig, opencodeState, opencodeVoice } from './config.js';

/** Options of `continuity observe` for OpenCode. */
export interface ObserveOptions extends ObserveInput {
  /** The session id. Default: the project's current OpenCode session, recorded by the plugin. */
  session?: string;
  /** The project directory. Default the working directory. */
  project?: string;
}

/** Records the restatement and classifies the boundary. Throws {@link InputError} for bad input. */
export async function runObserve(options: ObserveOptions): Promise<RestateResult> {
  const processEnv = options.env ?? process.env;
  const env = resolveEnv(processEnv);
  const projectDir = resolve(options.project ?? process.cwd());
  const { config } = loadOpencodeConfig(projectDir, env);
  const state = opencodeState(env);
  // OpenCode shows the id in the restatement request its plugin adds after compaction.
  const sessionId = restatementSession(
    options.session,
    () => projectSession(state, projectDir),
    'the restatement request',
  );
  return observeSession(options, { config, state, voice: opencodeVoice(processEnv.PATH ?? ''), sessionId });
}
