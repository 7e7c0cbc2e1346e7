/**
 * `continuity observe --runtime qwen-code`: the agent's restatement in a Qwen Code session. The
 * session: `--session`, else `QWEN_CODE_SESSION_ID` (Qwen gives it to the agent's shell), else
 * the project's current session recorded by the hooks.
 */
import { claudeCodeState, claudeCodeVoice, loadClaudeCodeConfig } from '../claude-code/config.js';
import {
  type ObserveOptions,
  type ObserveResult,
  type ObserveTarget,
  runObserve,
} from '../claude-code/observe.js';
import { QWEN_CODE_DIALECT } from './config.js';

const QWEN_TARGET: ObserveTarget = {
  dialect: QWEN_CODE_DIALECT,
  config: (projectDir, env) => loadClaudeCodeConfig(projectDir, env).config,
  state: claudeCodeState,
  voice: claudeCodeVoice,
};

/** Records the restatement and classifies the boundary of a Qwen Code session. */
export function runQwenCodeObserve(options: ObserveOptions): Promise<ObserveResult> {
  return runObserve(options, QWEN_TARGET);
}
