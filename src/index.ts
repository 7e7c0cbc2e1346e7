/**
 * agent-continuity: the public surface, in data-flow order. Explicit exports only.
 */

// → classification
export type { Classification, ClassifyInput, DecisionResult } from './classify/classify.js';
export { classify, eventOnlyRule, findApprovalChain } from './classify/classify.js';
export type {
  ContinuityAction,
  ContinuityReason,
  ContinuityState,
  DecisionVerdict,
} from './classify/states.js';
export { ACTIONS, BOUNDARY_REASONS, CONTINUITY_STATES, DECISION_REASONS } from './classify/states.js';
// → correlated state: the pure correlator (used by the span processor and `continuity serve`)
export { Correlator } from './correlate/correlator.js';
export { CORRELATOR_DEFAULTS, resolveCorrelatorOptions } from './correlate/options.js';
export type {
  PendingState,
  PersistedBoundary,
  PersistedHeldPost,
  PersistedSession,
} from './correlate/persist.js';
export { PENDING_STATE_VERSION } from './correlate/persist.js';
export type {
  CorrelatorOptions,
  CorrelatorStats,
  NeedsHumanEntry,
  Resolution,
  ResolutionCause,
  ResolvedCorrelatorOptions,
  SessionSummaryEntry,
} from './correlate/types.js';
export { DEFAULT_POST_WINDOWS_MS } from './correlate/types.js';
// decision → the model and its names
export type {
  ActivityState,
  Approval,
  DecisionBounds,
  DecisionMap,
  DecisionObservation,
  Snapshot,
} from './decision/model.js';
export {
  ACTIVITY_STATES,
  ApprovalSchema,
  checkDecisionCount,
  DEFAULT_DECISION_BOUNDS,
  DecisionObservationSchema,
  NORMALIZER_VERSION,
  SnapshotSchema,
} from './decision/model.js';
export type { WellKnownDecision } from './decision/names.js';
export { compareCriticality, DECISION_NAME_PATTERN, WELL_KNOWN_DECISIONS } from './decision/names.js';
export type { InputProblem } from './decision/problems.js';
export { InputError } from './decision/problems.js';
// → digest
export type { DigestKey } from './digest/digest.js';
export { createDigestKey, digestValue, hmacDigest, sha256Digest } from './digest/digest.js';
export { loadDigestKey } from './digest/key-file.js';
export type { NormalizeProblem, NormalizeResult } from './digest/normalize.js';
export { NormalizeError, normalize } from './digest/normalize.js';
// → span: the attribute codec (snapshots, approvals, activity ↔ span attributes; digests only)
export type {
  ActivityEvent,
  ApprovalEvent,
  BoundaryContext,
  BoundaryFields,
  CompactionEvent,
  PostCompactionEvent,
  PreCompactionEvent,
  SnapshotEvidence,
  SpanRef,
  SpanTimeInput,
} from './otel/attributes.js';
export {
  activityAttributes,
  approvalAttributes,
  checkAttributes,
  classificationAttributes,
  evidenceMissingAttributes,
  formatNs,
  isCompactionSpanName,
  readCompactionSpan,
  snapshotAttributes,
  toNs,
} from './otel/attributes.js';
// → span: the SDK extension an agent calls at its compaction points
export { createContinuity, DEFAULT_LEDGER_TIMEOUT_MS, DEFAULT_RUNTIME } from './otel/extension.js';
// → metric: the continuity metrics (shared by the processor and `continuity serve`)
export type { ContinuityMetricsOptions, ContinuityMetricsSource } from './otel/metrics.js';
export { ContinuityMetrics, REOBSERVATION_BUCKETS_S } from './otel/metrics.js';
// → correlated state on spans: the span processor (writes the state on post spans, records the metrics)
export { ContinuityProcessor, PROCESSOR_DEFAULTS } from './otel/processor.js';
export type { ContinuityProcessorOptions } from './otel/processor-types.js';
// → span: the SDK extension's options and results
export type {
  ApprovalInput,
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
// → wire: the OTLP codec (protobuf descriptor written from the OTLP specification, and JSON)
export type {
  OtlpAnyValue,
  OtlpErrorCode,
  OtlpFormat,
  OtlpKeyValue,
  OtlpMetricsRequest,
  OtlpSpan,
  OtlpTraceRequest,
  OtlpTraceResponse,
} from './otlp/index.js';
export {
  attributesToRecord,
  decodeMetricsRequest,
  decodeTraceRequest,
  decodeTraceResponse,
  encodeMetricsRequest,
  encodeTraceRequest,
  encodeTraceResponse,
  OtlpError,
  recordToAttributes,
  upsertAttributes,
} from './otlp/index.js';
