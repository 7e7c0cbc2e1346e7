/**
 * agent-continuity/mastra: Mastra agents with observational memory, in process. The Observer's
 * and Reflector's cycles are compactions: captured at their start hooks (awaited), recorded at
 * their end hooks, the Observer asked to keep the named decisions and the agent asked (in the
 * observations) to restate; the gate through `requireToolApproval` (ask) and the tools' `execute`
 * (deny). It never imports Mastra and loads `@opentelemetry/api` only when it makes a span.
 * Explicit exports only.
 */
export type { MastraContinuity } from './continuity.js';
export { createMastraContinuity, RUNTIME, SIGNALS } from './continuity.js';
export { RESTATE_TOOL_NAME } from '../in-process/continuity.js';
export type {
  MastraContinuityOptions,
  MastraCreateTool,
  MastraObservationalMemoryOptions,
  MastraObserveHookContext,
  MastraObserveHooks,
  MastraToolLike,
} from './types.js';
export type { ToolCallView, ToolDescription, TracerProviderLike } from '../in-process/types.js';
