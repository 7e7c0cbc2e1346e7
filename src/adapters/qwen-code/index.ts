/**
 * agent-continuity/qwen-code: the Qwen Code adapter (hooks, the write gate, the agent's
 * restatement, init): the Claude Code adapter in Qwen's dialect. Explicit exports only.
 */
export { QWEN_CODE_DIALECT, QWEN_GATED_TOOLS, QWEN_RUNTIME } from './config.js';
export { runQwenCodeHook } from './hook.js';
export { runQwenInit } from './init.js';
export { runQwenCodeObserve } from './observe.js';
