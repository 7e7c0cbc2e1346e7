/**
 * agent-continuity/copilot: the GitHub Copilot CLI adapter (hooks in `.github/hooks/`, the write
 * gate, the agent's restatement): the Claude Code adapter in Copilot's dialect, with compactions
 * confirmed from Copilot's own event log. Explicit exports only.
 */
export { COPILOT_DIALECT, COPILOT_GATED_TOOLS, COPILOT_RUNTIME } from './config.js';
export { runCopilotHook } from './hook.js';
export { COPILOT_CLI_ENV, insideCopilot } from './inside.js';
export { copilotCompactionEvidence, latestCheckpoint, latestCompaction } from './log.js';
export { runCopilotObserve } from './observe.js';
