/**
 * agent-continuity/claude-code: the Claude Code adapter (hooks, the write gate, the agent's
 * restatement with `continuity observe`, and `continuity init claude-code`), a thin translation
 * onto the runtime-neutral core (src/adapters/core). Explicit exports only.
 */

// → runtime adapter: Claude Code (hooks, the write gate, the agent's restatement, init)
export type { AdapterConfig, GateConfig, GatePolicy, GateVerdict } from '../core/config.js';
export { DEFAULT_GATE_POLICY, policyVerdict } from '../core/config.js';
export type { GateAnswer as GateDecision } from '../core/events.js';
export type { ClaudeCodeEnv } from './config.js';
export {
  DEFAULT_GATED_TOOLS,
  loadClaudeCodeConfig,
  RUNTIME,
  resolveClaudeCodeEnv,
} from './config.js';
export type { HookIo } from '../core/process.js';
export { HUMAN_AWAITED_NOTIFICATIONS } from './events.js';
export { gateOutput, runClaudeCodeHook } from './hook.js';
export type { HookPayload } from './payload.js';
export type { HookRegistration, InitOptions } from './init.js';
export {
  hookRegistrations,
  mergeHookSettings,
  removeHookSettings,
  runInit as initClaudeCode,
} from './init.js';
export type {
  ObserveOptions as ClaudeCodeObserveOptions,
  ObserveResult as ClaudeCodeObserveResult,
} from './observe.js';
export { renderObserve, runObserve } from './observe.js';
export { digestTaskRecord, taskRecordTemplate } from '../core/task-record.js';
