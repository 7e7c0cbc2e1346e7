/**
 * `continuity observe --runtime qwen-code`: the agent's restatement in a Qwen Code session. The
 * session: `--session`, else `QWEN_CODE_SESSION_ID` (Qwen gives it to the agent's shell), else
 * the project's current session recorded by the hooks.
 */
import { observeInDialect } from '../claude-code/observe.js';
import { QWEN_CODE_DIALECT } from './config.js';

/** Records the restatement and classifies the boundary of a Qwen Code session. */
export const runQwenCodeObserve = observeInDialect(QWEN_CODE_DIALECT);
