/**
 * `continuity observe --runtime copilot`: the agent's restatement in a Copilot CLI session.
 * Copilot gives the agent's shell no session id: `--session`, else the project's current session
 * recorded by the hooks.
 */
import { claudeCodeState, claudeCodeVoice, loadClaudeCodeConfig } from '../claude-code/config.js';
import {
  type ObserveOptions,
  type ObserveResult,
  type ObserveTarget,
  runObserve,
} from '../claude-code/observe.js';
import { COPILOT_DIALECT } from './config.js';

const COPILOT_TARGET: ObserveTarget = {
  dialect: COPILOT_DIALECT,
  config: (projectDir, env) => loadClaudeCodeConfig(projectDir, env).config,
  state: claudeCodeState,
  voice: claudeCodeVoice,
};

/** Records the restatement and classifies the boundary of a Copilot CLI session. */
export function runCopilotObserve(options: ObserveOptions): Promise<ObserveResult> {
  return runObserve(options, COPILOT_TARGET);
}
