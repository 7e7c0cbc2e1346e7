/**
 * agent-continuity: what an app already traced with OpenTelemetry adds. The SDK extension it calls
 * at its compaction points, the span processor that correlates them into a continuity state,
 * `continuityProcessors` for an app that passed NodeSDK a `traceExporter`, and the metrics.
 *
 * Importing this entry loads `@opentelemetry/api` and the processor's own small modules: the
 * digest functions load on the first capture, and the decision model (zod), the ledger and the
 * OTLP codec live in `agent-continuity/core`. Explicit exports only; every span, attribute and
 * metric name is in `agent-continuity/semconv`.
 */

// The SDK extension an agent calls at its compaction points
export type { ApproverSignerOptions } from './authority/app-signer.js';
export {
  approverSigner,
  createContinuity,
  DEFAULT_LEDGER_TIMEOUT_MS,
  DEFAULT_RUNTIME,
  PLAIN_VALUE_WARNING_CODE,
} from './otel/extension.js';
export type {
  ApprovalInput,
  ApprovalSigner,
  CaptureOptions,
  CaptureResult,
  Continuity,
  ContinuityLedgerRecord,
  ContinuityLedgerSink,
  ContinuityOptions,
  ContinuityProblem,
  DecisionInput,
  ObserveOptions,
  ObserveResult,
  RecordResult,
  SessionContinuity,
} from './otel/types.js';

// The span processor, and the processors for NodeSDK's spanProcessors with the app's exporter
export {
  ALONE_WARNING,
  ContinuityProcessor,
  MIN_SDK_WITH_ON_ENDING,
  PROCESSOR_DEFAULTS,
} from './otel/processor.js';
export type { ContinuityProcessorOptions, EndedSpan, EndingSpan } from './otel/processor-types.js';
export type {
  ContinuityProcessorsOptions,
  ContinuitySpanExporter,
  ContinuitySpanProcessor,
} from './otel/processors.js';
export { continuityProcessors } from './otel/processors.js';

// The continuity metrics
export type { ContinuityMetricsOptions, ContinuityMetricsSource } from './otel/metrics.js';
export { ContinuityMetrics, REOBSERVATION_BUCKETS_S } from './otel/metrics.js';

// The states, actions and reasons a boundary resolves to
export type {
  BoundaryReason,
  ContinuityAction,
  ContinuityReason,
  ContinuityState,
  DecisionReason,
  DecisionVerdict,
} from './classify/states.js';
export {
  ACTIONS,
  ALL_REASONS,
  BOUNDARY_REASONS,
  CONTINUITY_STATES,
  DECISION_REASONS,
  severity,
} from './classify/states.js';
export type { Classification, DecisionResult } from './classify/classify.js';
export type { Resolution, ResolutionCause } from './correlate/types.js';
