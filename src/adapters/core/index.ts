/**
 * The runtime-neutral adapter core: what every runtime adapter (Claude Code, and next the Agent
 * SDK, Codex CLI and OpenCode) maps its events onto. Explicit exports only.
 *
 * A runtime adapter
 * - resolves the environment once ({@link resolveEnv}) and its configuration ({@link loadConfig});
 * - translates its events into core events (./events.ts) and feeds the boundary ones through
 *   {@link trackStep} (the pure {@link assemble}, made durable under the session lock); on
 *   `confirmed` / `opened_pre_missing` it calls {@link recordOpenedBoundary}, on a changed
 *   `measured` {@link recordMeasured};
 * - takes the pre capture with {@link capturePre} at its pre-compaction event, and may give the
 *   summarizer {@link summaryInstruction};
 * - with hooks that are commands (a process per event), runs both through {@link preCompactStep}
 *   and {@link compactedStep};
 * - asks {@link decideGate} before a tool runs and translates the {@link GateAnswer};
 * - records the agent's restatement with {@link recordRestatement} (`continuity observe`: through
 *   {@link observeSession}, once it has found its configuration, state, words and session);
 * - words everything with its {@link Voice}.
 */
export type {
  Assembly,
  AssemblyInput,
  AssemblyOutcome,
  BoundaryTrack,
  PendingPre,
  SignalSeen,
  TrackedBoundary,
} from './boundary.js';
export { assemble, DUPLICATE_WINDOW_MS, emptyTrack, isCount } from './boundary.js';
export {
  ADAPTER_EVIDENCE_REASONS,
  CARRIED_SOURCE,
  captureNames,
  capturePre,
  carryForward,
  recordMeasured,
  recordOpenedBoundary,
} from './capture.js';
export type { PreCaptureInput } from './capture.js';
export type {
  AdapterConfig,
  ConfigDefaults,
  ContinuityEnv,
  GateConfig,
  GatePolicy,
  LoadedConfig,
  SpanSink,
} from './config.js';
export { DEFAULT_GATE_POLICY, ENV, loadConfig, policyVerdict, resolveEnv } from './config.js';
export type {
  ActivityEvent,
  BoundaryEvent,
  CompactedEvent,
  CoreEvent,
  GateAnswer,
  GateCode,
  GateVerdict,
  MeasuredEvent,
  PreEvent,
  ResumedEvent,
  ResumeSource,
  TokenCounts,
  ToolEvent,
  ToolKind,
  Trigger,
} from './events.js';
export { gateBoundaryOf, ledgerRederive, openEvidence, storeGateBoundary } from './evidence.js';
export type { EvidenceStore } from './evidence.js';
export { exportAdapterSpans } from './export.js';
export type { HookGroupMerge, HookGroupRegistration, HookGroups } from './hook-groups.js';
export { hookMergeLines, mergeHookGroups } from './hook-groups.js';
export type { HookStepContext } from './hook-steps.js';
export { compactedStep, firstInjection, markFreshSession, preCompactStep } from './hook-steps.js';
export type { GateContext, Rederive } from './gate.js';
export { decideGate, inspectBashCommand, inspectTargetPath, isContinuityReadonly } from './gate.js';
export type { BoundaryView, Voice } from './messages.js';
export {
  compactionContext,
  DEFAULT_VOICE,
  gateReason,
  nextAction,
  summaryInstruction,
  SUMMARY_INSTRUCTION_PREFIX,
} from './messages.js';
export type { ObserveInput, ObserveRuntime } from './observe.js';
export { observeSession, projectSession } from './observe.js';
export type { RestateOptions, RestateResult } from './restatement.js';
export { digestRestatement, recordRestatement, renderRestatement } from './restatement.js';
export type { GateBoundary, GateState, PreCapture, StateDir } from './state.js';
export { readGateState, stateDirOf } from './state.js';
export { digestTaskRecord, readTaskOutline, taskRecordTemplate } from './task-record.js';
export { markPreMissing, trackStep, withSessionLock } from './track.js';
