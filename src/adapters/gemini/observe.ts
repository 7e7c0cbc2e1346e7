/**
 * `continuity observe --runtime gemini`: the agent's restatement in a Gemini CLI session. Gemini
 * gives the agent's shell no session id: `--session` (the restatement request names it), else
 * the project's current session recorded by the hooks.
 */
import { claudeCodeState, claudeCodeVoice, loadClaudeCodeConfig } from '../claude-code/config.js';
import {
  type ObserveOptions,
  type ObserveResult,
  type ObserveTarget,
  runObserve,
} from '../claude-code/observe.js';
import { GEMINI_DIALECT } from './config.js';

const GEMINI_TARGET: ObserveTarget = {
  dialect: GEMINI_DIALECT,
  config: (projectDir, env) => loadClaudeCodeConfig(projectDir, env).config,
  state: claudeCodeState,
  voice: claudeCodeVoice,
};

/** Records the restatement and classifies the boundary of a Gemini CLI session. */
export function runGeminiObserve(options: ObserveOptions): Promise<ObserveResult> {
  return runObserve(options, GEMINI_TARGET);
}
