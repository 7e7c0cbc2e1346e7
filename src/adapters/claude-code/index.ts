/**
 * agent-continuity/claude-code: the Claude Code adapter (hooks, the write gate, the agent's
 * restatement with `continuity observe`, and `continuity init claude-code`). Explicit exports only.
 */

// → runtime adapter: Claude Code (hooks, the write gate, the agent's restatement, init)
export type { ExportConfig } from '../../export/config.js';
export type { AdapterConfig, GateConfig, GatePolicy, GateVerdict } from './config.js';
export {
  DEFAULT_GATE_POLICY,
  DEFAULT_GATED_TOOLS,
  loadConfig as loadClaudeCodeConfig,
  policyVerdict,
} from './config.js';
export type { GateDecision } from './gate.js';
export { decideGate, gateOutput } from './gate.js';
export type { HookIo, HookPayload } from './hook.js';
export { runClaudeCodeHook } from './hook.js';
export type { HookRegistration, InitOptions } from './init.js';
export {
  hookRegistrations,
  mergeHookSettings,
  runInit as initClaudeCode,
} from './init.js';
export type {
  ObserveOptions as ClaudeCodeObserveOptions,
  ObserveResult as ClaudeCodeObserveResult,
} from './observe.js';
export { renderObserve, runObserve } from './observe.js';
export { digestTaskRecord, taskRecordTemplate } from './task-record.js';
