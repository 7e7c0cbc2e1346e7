/**
 * `continuity observe --runtime gemini`: the agent's restatement in a Gemini CLI session. Gemini
 * gives the agent's shell no session id: `--session` (the restatement request names it), else
 * the project's current session recorded by the hooks.
 */
import { observeInDialect } from '../claude-code/observe.js';
import { GEMINI_DIALECT } from './config.js';

/** Records the restatement and classifies the boundary of a Gemini CLI session. */
export const runGeminiObserve = observeInDialect(GEMINI_DIALECT);
