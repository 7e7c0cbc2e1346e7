/**
 * `continuity observe --runtime copilot`: the agent's restatement in a Copilot CLI session.
 * Copilot gives the agent's shell no session id: `--session`, else the project's current session
 * recorded by the hooks.
 */
import { observeInDialect } from '../claude-code/observe.js';
import { COPILOT_DIALECT } from './config.js';

/** Records the restatement and classifies the boundary of a Copilot CLI session. */
export const runCopilotObserve = observeInDialect(COPILOT_DIALECT);
