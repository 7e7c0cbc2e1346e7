/**
 * agent-continuity/core: the whole library, in data-flow order
 * (decision → digest → classification → ledger → span → correlated state → metric → wire).
 * Explicit exports only. An app that adds continuity to its tracing imports the lean root entry,
 * `agent-continuity` (the processor and the extension, without zod, the ledger or the OTLP codec);
 * this entry is for tools built on the model, the ledger and the codec. The processor service is
 * `agent-continuity/service`, the Claude Code adapter `agent-continuity/claude-code`, and every
 * span, attribute and metric name `agent-continuity/semconv`.
 */

// → classification
export type { Classification, ClassifyInput, DecisionResult } from './classify/classify.js';
export { classify, eventOnlyRule, findApprovalChain } from './classify/classify.js';
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
// → correlated state: the pure correlator (used by the span processor and `continuity serve`)
export { Correlator } from './correlate/correlator.js';
export { CORRELATOR_DEFAULTS, resolveCorrelatorOptions } from './correlate/options.js';
export type {
  CheckedEntry,
  CheckedPendingState,
  PendingState,
  PersistedBoundary,
  PersistedHeldPost,
  PersistedSession,
} from './correlate/persist.js';
export { readPendingState } from './correlate/persist.js';
export { PENDING_STATE_VERSION } from './correlate/persist-version.js';
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
  DecisionMapSchema,
  DecisionNameSchema,
  DecisionObservationSchema,
  DIGEST_PATTERN,
  DigestSchema,
  NORMALIZER_VERSION,
  NormalizerVersionSchema,
  OPAQUE_ID_PATTERN,
  OpaqueIdSchema,
  RevisionSchema,
  SnapshotSchema,
  TimestampSchema,
} from './decision/model.js';
export type { WellKnownDecision } from './decision/names.js';
export { compareCriticality, DECISION_NAME_PATTERN, WELL_KNOWN_DECISIONS } from './decision/names.js';
export type { InputProblem } from './decision/problems.js';
export { formatPath, InputError, problemsFromZod } from './decision/problems.js';
export { formatRfc3339Utc, isRfc3339Utc, parseRfc3339Utc, RFC3339_UTC_PATTERN } from './decision/time.js';
// → digest
export type { DigestKey } from './digest/digest.js';
export {
  createDigestKey,
  digestScheme,
  digestValue,
  hmacDigest,
  MIN_KEY_BYTES,
  sha256Digest,
} from './digest/digest.js';
export { DIGEST_KEY_ENV, DIGEST_KEY_FILE_ENV, decodeKeyText, loadDigestKey } from './digest/key-file.js';
export type { NormalizeProblem, NormalizeResult } from './digest/normalize.js';
export { NormalizeError, normalize, normalizeOrThrow } from './digest/normalize.js';
// → fixtures: the `continuity classify` file format (raw values digested on read)
export type { CaseResult, FixtureBoundary } from './fixture/cases.js';
export { classifyFixture, FixtureSchema, parseFixture } from './fixture/cases.js';
// → ledger: the append-only, hash-chained record outside the conversation (and its lean reader)
export type {
  ActivityEvidence,
  ActivityRecord,
  ApprovalRecord,
  ApprovalRecordInput,
  ApprovalSide,
  BoundaryEvidence,
  BoundaryRecord,
  BoundaryReport,
  CaptureInput,
  ChainKey,
  ChainKeyOptions,
  ClassificationReceipt,
  ClassificationRecord,
  EvidenceMissingRecord,
  LatestOptions,
  LeakKind,
  LeakProblem,
  LedgerOptions,
  LedgerPathOptions,
  LedgerSidecars,
  LockOptions,
  MissingEvidence,
  NewRecord,
  Phase,
  Quarantined,
  ReadPath,
  RecordLocation,
  RecordType,
  SnapshotRecord,
  SpotCheckOptions,
  SpotProblem,
  StoredRecord,
  Trigger,
  VerifyOptions,
  VerifyResult,
  VerifyWhy,
} from './ledger/index.js';
export {
  buildApproval,
  CHAIN_KEY_FILE_ENV,
  ChainKeyError,
  ChainSchemeError,
  captureSnapshot,
  checkString,
  classificationRecord,
  classifyEvidence,
  createChainKey,
  DigestKeyRequiredError,
  guardRecord,
  LEDGER_ENV,
  Ledger,
  LedgerCorruptError,
  LedgerFileError,
  LockTimeoutError,
  loadChainKey,
  NewRecordSchema,
  PHASES,
  RECORD_TYPES,
  RecordShapeError,
  RecordTooLargeError,
  readAllLatestBoundaries,
  readBoundaryIdsOf,
  readLatestActivity,
  readLatestBoundary,
  receiptIsCurrent,
  resolveLedgerPath,
  StoredRecordSchema,
  spotCheck,
  TRIGGERS,
  VERIFY_WHYS,
  VerifyConfigError,
  validateRecord,
  verifyLedger,
} from './ledger/index.js';
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
export {
  createContinuity,
  DEFAULT_LEDGER_TIMEOUT_MS,
  DEFAULT_RUNTIME,
  PLAIN_VALUE_WARNING_CODE,
} from './otel/extension.js';
// → metric: the continuity metrics (shared by the processor and `continuity serve`)
export type { ContinuityMetricsOptions, ContinuityMetricsSource } from './otel/metrics.js';
export { ContinuityMetrics, REOBSERVATION_BUCKETS_S } from './otel/metrics.js';

// → correlated state on spans: the span processor (writes the state on post spans, records the metrics)
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
// → report: tables and the `classify --json` document
export {
  caseResultsJson,
  countStates,
  renderCaseTable,
  renderCounts,
  renderTable,
} from './report/table.js';
