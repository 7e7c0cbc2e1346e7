/**
 * agent-continuity/codex: the Codex CLI adapter (hooks, the write gate, the agent's restatement
 * with `continuity observe`, and `continuity init codex` with the hooks' trust entries), a thin
 * translation onto the runtime-neutral core (src/adapters/core). Explicit exports only.
 */
export type { CodexEnv } from './config.js';
export { DEFAULT_GATED_TOOLS, loadCodexConfig, RUNTIME, resolveCodexEnv, toolKind } from './config.js';
export type { CodexPayload } from './events.js';
export { activityOf, boundaryEventOf, resumeSourceOf, SIGNALS } from './events.js';
export { toolEventsOf } from './events.js';
export { askInstruction, gateOutput, runCodexHook } from './hook.js';
export { parsePayload } from './payload.js';
export type { CodexHookRegistration, CodexInitOptions } from './init.js';
export { codexHookRegistrations, mergeCodexHooks, removeCodexHooks, runCodexInit } from './init.js';
export type { CodexObserveOptions } from './observe.js';
export { runCodexObserve } from './observe.js';
export { patchTargets } from './patch.js';
export { editTrust } from './toml.js';
export type { HookHandler } from './trust.js';
export { snakeEvent, trustedHash, trustKey } from './trust.js';
