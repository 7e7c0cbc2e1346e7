/**
 * Semantic conventions of agent-continuity: every span name, attribute key and metric name,
 * defined once and imported everywhere (code, tests, dashboards, docs checks).
 * `docs/semantic-conventions.md` lists the same names; a test checks the two agree.
 *
 * @experimental These names are not part of the OpenTelemetry semantic conventions yet and may
 * change. The GenAI names (`gen_ai.*`) follow the GenAI conventions, which are in development
 * status; the pinned semantic-conventions package does not export them all, so they are local.
 *
 * Never put a raw decision value, prompt, response, tool payload, transcript path, compaction
 * summary or key in any of these attributes: only digests, identifiers, integers and timestamps.
 */

/**
 * The namespace every name of this package lives in (spans, attributes, metrics): one the project
 * owns, outside every OpenTelemetry namespace (`agent.*` and `gen_ai.*` belong to OpenTelemetry).
 * The OpenTelemetry names used where they apply (`session.id`, `gen_ai.conversation.*`,
 * `error.type`, `http.response.status_code`) are the only names outside it.
 */
export const NAMESPACE = 'continuity' as const;

// ── Spans ────────────────────────────────────────────────────────────────────────────────────
/** Emitted at the pre-compaction capture. */
export const SPAN_COMPACTION_PRE = 'continuity.compaction.pre' as const;
/** Emitted at the post-compaction observation; the processor writes the continuity state on it. */
export const SPAN_COMPACTION_POST = 'continuity.compaction.post' as const;
/** Emitted when a human approves a change of one decision. */
export const SPAN_DECISION_APPROVAL = 'continuity.approval' as const;
/** Emitted by the processor when a boundary resolves without a post span. */
export const SPAN_CONTINUITY_CHECK = 'continuity.check' as const;
/** Emitted when the agent's activity state changes. */
export const SPAN_ACTIVITY = 'continuity.activity' as const;

/** The instrumentation scope (tracer and meter name) of everything this package emits. */
export const INSTRUMENTATION_SCOPE = 'agent-continuity' as const;

// ── Session key ──────────────────────────────────────────────────────────────────────────────
/** The session key the processor correlates on. */
export const ATTR_SESSION_ID = 'session.id' as const;
/** Accepted as the session key when `session.id` is absent (GenAI conventions, development). */
export const ATTR_GEN_AI_CONVERSATION_ID = 'gen_ai.conversation.id' as const;
/** `true` on the post span: the conversation was compacted (GenAI conventions, development). */
export const ATTR_GEN_AI_CONVERSATION_COMPACTED = 'gen_ai.conversation.compacted' as const;

// ── Boundary attributes (pre and post spans) ─────────────────────────────────────────────────
export const ATTR_BOUNDARY_ID = 'continuity.boundary.id' as const;
/** `manual` or `auto`. */
export const ATTR_TRIGGER = 'continuity.compaction.trigger' as const;
/** The agent runtime, e.g. `claude-code`, `codex-cli`, `gemini-cli`, `sdk`. */
export const ATTR_RUNTIME = 'continuity.runtime' as const;
export const ATTR_NORMALIZER_VERSION = 'continuity.normalizer.version' as const;
/** The decision names carried by this span (string array). */
export const ATTR_DECISION_NAMES = 'continuity.decision.names' as const;
/** Set when the snapshot could not be taken: a reason code such as `capture_failed`. */
export const ATTR_EVIDENCE_MISSING = 'continuity.evidence_missing' as const;
/** The time the snapshot was captured (RFC 3339 UTC); span start time when absent. */
export const ATTR_CAPTURED_AT = 'continuity.captured_at' as const;
/** When the compaction happened (RFC 3339 UTC), on the post span when the runtime reported it. */
export const ATTR_COMPACTED_AT = 'continuity.compaction.compacted_at' as const;
/** Context fill just before the compaction, in tokens (integer), where the runtime reported it. */
export const ATTR_TOKENS_BEFORE = 'continuity.compaction.tokens.before' as const;
/** Context fill just after the compaction, in tokens (integer), where the runtime reported it. */
export const ATTR_TOKENS_AFTER = 'continuity.compaction.tokens.after' as const;

/**
 * On the post span of a restatement: `context` (from the agent's own context) or `record` (the
 * agent read the task record or the ledger in this boundary before restating), so a backend can
 * tell "survived the summary" from "restored from the record". @experimental
 */
export const ATTR_RESTATEMENT_PROVENANCE = 'continuity.restatement.provenance' as const;

/** Per-decision attribute fields: `continuity.decision.<name>.<field>`. */
export const DECISION_FIELDS = [
  'digest',
  'revision',
  'observed_at',
  'source',
  'approval_ref',
  'verdict',
] as const;
export type DecisionField = (typeof DECISION_FIELDS)[number];
const DECISION_PREFIX = 'continuity.decision.' as const;

/** The attribute key of one field of one decision, e.g. `continuity.decision.scope.digest`. */
export function decisionAttr(name: string, field: DecisionField): string {
  return `${DECISION_PREFIX}${name}.${field}`;
}

/** Splits a per-decision key into name and field; undefined for any other key. */
export function parseDecisionAttr(key: string): { name: string; field: DecisionField } | undefined {
  if (!key.startsWith(DECISION_PREFIX)) return undefined;
  const rest = key.slice(DECISION_PREFIX.length);
  const dot = rest.lastIndexOf('.');
  if (dot <= 0) return undefined;
  const field = rest.slice(dot + 1) as DecisionField;
  if (!(DECISION_FIELDS as readonly string[]).includes(field)) return undefined;
  return { name: rest.slice(0, dot), field };
}

// ── Approval spans ───────────────────────────────────────────────────────────────────────────
export const ATTR_APPROVAL_DECISION = 'continuity.approval.decision' as const;
export const ATTR_APPROVAL_FROM_DIGEST = 'continuity.approval.from_digest' as const;
export const ATTR_APPROVAL_TO_DIGEST = 'continuity.approval.to_digest' as const;
export const ATTR_APPROVAL_REF = 'continuity.approval.ref' as const;
export const ATTR_APPROVAL_APPROVED_BY = 'continuity.approval.approved_by' as const;
export const ATTR_APPROVAL_APPROVED_AT = 'continuity.approval.approved_at' as const;
/** The boundary the approval was signed for. */
export const ATTR_APPROVAL_BOUNDARY_ID = 'continuity.approval.boundary_id' as const;
/** The approver key that signed the approval, `ed25519:<32 hex>` (an id, never the key). */
export const ATTR_APPROVAL_KEY_ID = 'continuity.approval.key_id' as const;
/** The Ed25519 signature of the approval statement, 128 hex digits (docs/security.md). */
export const ATTR_APPROVAL_SIGNATURE = 'continuity.approval.signature' as const;

// ── Written by the processor ─────────────────────────────────────────────────────────────────
export const ATTR_CONTINUITY_STATE = 'continuity.state' as const;
export const ATTR_CONTINUITY_ACTION = 'continuity.action' as const;
export const ATTR_CONTINUITY_REASON = 'continuity.reason' as const;
export const ATTR_CONTINUITY_PRIMARY_DECISION = 'continuity.primary_decision' as const;
/** Activity, its own dimension beside continuity: `working`, `waiting_human`, `idle`. */
export const ATTR_ACTIVITY_STATE = 'continuity.activity.state' as const;
/** The activity value written when no activity was reported for the session. */
export const ACTIVITY_STATE_UNKNOWN = 'unknown' as const;

/** Reason codes of `continuity.evidence_missing` (other lower-case codes are accepted). */
export const EVIDENCE_MISSING_REASONS = {
  /** The snapshot could not be captured (the extension or hook failed). */
  captureFailed: 'capture_failed',
  /** A decision given to the extension could not be digested or was out of bounds (name, revision, count…). */
  invalidDecision: 'invalid_decision',
  /** The extension could not write the snapshot to the ledger (error or timeout). */
  ledgerWriteFailed: 'ledger_write_failed',
  /** The span's evidence attributes were malformed (bad digest, revision, time, name…). */
  invalidAttributes: 'invalid_attributes',
  /** A pending boundary restored from persisted state could not be recovered. */
  unrecoverable: 'unrecoverable',
} as const;

// ── Metrics ──────────────────────────────────────────────────────────────────────────────────
/** Counter of resolved boundaries. Attributes: state, reason, runtime, trigger, primary_decision. Prometheus: `continuity_boundaries_total`. */
export const METRIC_BOUNDARIES = 'continuity.boundaries' as const;
/** Gauge of sessions by latest continuity state × activity state. Prometheus: `continuity_sessions`. */
export const METRIC_SESSIONS = 'continuity.sessions' as const;
/** Gauge of boundaries waiting for their post observation. Prometheus: `continuity_pending`. */
export const METRIC_PENDING = 'continuity.pending' as const;
/** Histogram, seconds from boundary to post observation. Prometheus: `continuity_reobservation_duration_seconds`. */
export const METRIC_REOBSERVATION_DURATION = 'continuity.reobservation.duration' as const;
/** Counter of pending boundaries evicted to keep memory bounded (self-observability). */
export const METRIC_EVICTIONS = 'continuity.evictions' as const;
/**
 * Gauge, one series per session whose latest boundary needs a human (`dropped` or `conflicting`),
 * value 1. Attributes: session_id, boundary_id, state, reason, primary_decision, runtime. It is the
 * only metric that carries a session: its series at 1 are the open problems (bounded by the
 * processor, most recent kept), not the sessions. Once the session's latest boundary no longer
 * needs a human (or the session expires or leaves the most recent kept) its series reads 0: a
 * cumulative SDK keeps exporting every attribute set it has seen, so 0 is how a series ends, and
 * consumers select `== 1`. Those 0 series last until the process restarts, within the SDK's
 * per-instrument cardinality limit (2 000 by default). Feeds the dashboard's "boundaries needing a
 * human" table. Prometheus: `continuity_needs_human`.
 */
export const METRIC_NEEDS_HUMAN = 'continuity.needs_human' as const;

/** The value of the `runtime` or `trigger` metric attribute when the span did not report one. */
export const METRIC_VALUE_UNKNOWN = 'unknown' as const;

/**
 * The value of the `continuity.runtime` and `continuity.primary_decision` metric attributes for a
 * client-chosen name past the bound: the known runtimes and the well-known decision names always
 * pass, and the first {@link METRIC_MAX_CUSTOM_VALUES} other names seen per attribute pass too;
 * every later one is counted as `other`, so a client cannot grow the series without bound.
 */
export const METRIC_VALUE_OTHER = 'other' as const;

/** Most client-chosen names per metric attribute before later ones become {@link METRIC_VALUE_OTHER}. */
export const METRIC_MAX_CUSTOM_VALUES = 32;

/**
 * Metric point attribute keys: the same keys as the span attributes for the same facts, so one
 * name finds a fact on a span (Tempo, Jaeger) and on a series (Prometheus: dots become `_`).
 */
export const METRIC_ATTR_STATE = ATTR_CONTINUITY_STATE;
export const METRIC_ATTR_REASON = ATTR_CONTINUITY_REASON;
export const METRIC_ATTR_RUNTIME = ATTR_RUNTIME;
export const METRIC_ATTR_TRIGGER = ATTR_TRIGGER;
export const METRIC_ATTR_ACTIVITY = ATTR_ACTIVITY_STATE;
/**
 * The boundary's primary decision name, on the boundaries counter and needs_human. Bounded: names
 * come from the task's decision schema. Lets an alert tell a dropped `approval_boundary` (critical)
 * from a dropped acceptance test. Empty when the boundary has no primary decision.
 */
export const METRIC_ATTR_PRIMARY_DECISION = ATTR_CONTINUITY_PRIMARY_DECISION;
/** Session id, only on the needs_human gauge (see {@link METRIC_NEEDS_HUMAN}). */
export const METRIC_ATTR_SESSION_ID = ATTR_SESSION_ID;
/** Boundary id, only on the needs_human gauge. */
export const METRIC_ATTR_BOUNDARY_ID = ATTR_BOUNDARY_ID;

/** The Prometheus label a metric attribute key becomes (Prometheus and OTLP→Prometheus: `.` → `_`). */
export function prometheusLabel(key: string): string {
  return key.replace(/[^A-Za-z0-9_]/g, '_');
}

/**
 * Approvals that did not count, by {@link METRIC_ATTR_RESULT}: unsigned, badly signed, signed by
 * a key `continuity serve` does not trust, or signed for another boundary. Each is an attempt to
 * approve without the human's key; the `ContinuityApprovalAttempt` alert fires on any.
 */
export const METRIC_APPROVAL_ATTEMPTS = 'continuity.approval.attempts' as const;
/** Why an approval did not count, on {@link METRIC_APPROVAL_ATTEMPTS}. */
export const METRIC_ATTR_RESULT = 'continuity.result' as const;

/** Instrument descriptions and units, defined beside the names. */
export const METRIC_DEFINITIONS = {
  [METRIC_BOUNDARIES]: {
    kind: 'counter',
    unit: '{boundary}',
    description: 'Compaction boundaries resolved, by continuity state, reason, runtime and trigger.',
  },
  [METRIC_SESSIONS]: {
    kind: 'gauge',
    unit: '{session}',
    description: 'Sessions by latest continuity state and activity state.',
  },
  [METRIC_PENDING]: {
    kind: 'gauge',
    unit: '{boundary}',
    description: 'Compaction boundaries waiting for their post-compaction observation.',
  },
  [METRIC_REOBSERVATION_DURATION]: {
    kind: 'histogram',
    unit: 's',
    description: 'Time from a compaction boundary to its post-compaction observation.',
  },
  [METRIC_EVICTIONS]: {
    kind: 'counter',
    unit: '{boundary}',
    description: 'Pending boundaries evicted because the pending limit was reached.',
  },
  [METRIC_NEEDS_HUMAN]: {
    kind: 'gauge',
    unit: '{boundary}',
    description:
      'Latest boundary of each session that needs a human (dropped or conflicting): 1, then 0 once it no longer does.',
  },
  [METRIC_APPROVAL_ATTEMPTS]: {
    kind: 'counter',
    unit: '{approval}',
    description:
      'Approvals that did not count (no valid signature by a trusted approver key), by result: unsigned, bad_signature, unknown_key, other_boundary.',
  },
} as const;

/** The Prometheus names the metrics above become through the Prometheus exporter or a collector. */
export const PROMETHEUS_NAMES = {
  [METRIC_BOUNDARIES]: 'continuity_boundaries_total',
  [METRIC_SESSIONS]: 'continuity_sessions',
  [METRIC_PENDING]: 'continuity_pending',
  [METRIC_REOBSERVATION_DURATION]: 'continuity_reobservation_duration_seconds',
  [METRIC_EVICTIONS]: 'continuity_evictions_total',
  [METRIC_NEEDS_HUMAN]: 'continuity_needs_human',
  [METRIC_APPROVAL_ATTEMPTS]: 'continuity_approval_attempts_total',
} as const;

/** Runtime names known to the defaults (post windows and the like); others are allowed. */
export const KNOWN_RUNTIMES = [
  'claude-code',
  'claude-agent-sdk',
  'codex-cli',
  'opencode',
  'gemini-cli',
  'langchain',
  'openai-agents',
  'mastra',
  'ai-sdk',
  'sdk',
] as const;

/** Trigger values. */
export const TRIGGERS = ['manual', 'auto'] as const;
export type CompactionTrigger = (typeof TRIGGERS)[number];

// ── `continuity serve` self-observability ────────────────────────────────────────────────────
// The service's own health, beside the continuity metrics. Every span received is, at any moment,
// forwarded, dropped (counted with a reason), rejected at the receiver (counted), or still queued:
// nothing is lost silently. Prometheus names in SERVICE_PROMETHEUS_NAMES.

/** Counter of spans accepted by the receiver (after decoding). */
export const METRIC_SERVICE_SPANS_RECEIVED = 'continuity.service.spans.received' as const;
/** Counter of spans the downstream accepted. */
export const METRIC_SERVICE_SPANS_FORWARDED = 'continuity.service.spans.forwarded' as const;
/** Counter of spans the service gave up on after accepting them; attribute `error.type`. */
export const METRIC_SERVICE_SPANS_DROPPED = 'continuity.service.spans.dropped' as const;
/** Counter of spans refused in an OTLP partial success (e.g. missing session key); attribute `error.type`. */
export const METRIC_SERVICE_SPANS_REJECTED = 'continuity.service.spans.rejected' as const;
/** Counter of OTLP/HTTP requests answered, attribute `http.response.status_code`. */
export const METRIC_SERVICE_REQUESTS = 'continuity.service.requests' as const;
/** Gauge of spans waiting in the forward queue. */
export const METRIC_SERVICE_QUEUE_SIZE = 'continuity.service.queue.size' as const;
/** Gauge of the forward queue's capacity in spans. */
export const METRIC_SERVICE_QUEUE_CAPACITY = 'continuity.service.queue.capacity' as const;
/** Counter of failed downstream export attempts; attribute `error.type` (`status_503`, `network`, `timeout`, ...). */
export const METRIC_SERVICE_EXPORT_FAILURES = 'continuity.service.export.failures' as const;
/** Counter of pending boundaries restored from the state directory at start. */
export const METRIC_SERVICE_RECOVERED = 'continuity.service.pending.recovered' as const;
/** Counter of state records that could not be read back (their boundaries resolve `unverified`). */
export const METRIC_SERVICE_RECOVERY_PROBLEMS = 'continuity.service.pending.recovery_problems' as const;
/**
 * Histogram of how long an OTLP request waited for its pending-state records to be durable (the
 * journal's synchronous write, and the event loop getting back to it): what persistence adds to
 * a request with compaction spans.
 */
export const METRIC_SERVICE_PENDING_WRITE_DURATION = 'continuity.service.pending.write.duration' as const;
/** Bucket boundaries of {@link METRIC_SERVICE_PENDING_WRITE_DURATION}, seconds (100 ms is the service's goal). */
export const PENDING_WRITE_BUCKETS_S = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
] as const;
/** Gauge of the process's resident memory (OpenTelemetry `process.memory.usage`). */
export const METRIC_PROCESS_MEMORY_USAGE = 'process.memory.usage' as const;
/** Counter of metrics and logs requests passed through and accepted downstream; attribute `continuity.service.signal`. */
export const METRIC_SERVICE_PASSTHROUGH_FORWARDED = 'continuity.service.passthrough.forwarded' as const;
/** Counter of metrics and logs requests given up on; attributes `continuity.service.signal`, `error.type`. */
export const METRIC_SERVICE_PASSTHROUGH_DROPPED = 'continuity.service.passthrough.dropped' as const;
/** Metric point attribute of the pass-through counters: `metrics` or `logs`. */
export const METRIC_ATTR_SIGNAL = 'continuity.service.signal' as const;
/** The signals `continuity serve` passes through untouched. */
export const PASSTHROUGH_SIGNALS = ['metrics', 'logs'] as const;

/** Metric point attribute: the HTTP status code answered (OpenTelemetry HTTP conventions). */
export const METRIC_ATTR_HTTP_STATUS_CODE = 'http.response.status_code' as const;
/**
 * Metric point attribute of the service's failure counters (dropped, rejected, export failures):
 * why, as a low-cardinality code (OpenTelemetry `error.type`).
 */
export const METRIC_ATTR_ERROR_TYPE = 'error.type' as const;

/** Reasons on the dropped counter. */
export const SERVICE_DROP_REASONS = {
  /** No downstream endpoint is configured (metrics-only mode). */
  noDownstream: 'no_downstream',
  /** Retryable failures went on past `downstream.retry.maxElapsedTime`. */
  retryExhausted: 'retry_exhausted',
  /** The downstream answered with a non-retryable status or a partial success. */
  rejectedDownstream: 'rejected_downstream',
  /** Still queued when the shutdown timeout ran out. */
  shutdown: 'shutdown',
  /** A span the service created (a `continuity.check` span) found the queue full. */
  queueFull: 'queue_full',
} as const;

/**
 * Reasons on the rejected counter (OTLP partial success). A compaction span whose continuity
 * attributes are malformed is not rejected: it is read as evidence missing and its boundary
 * resolves `unverified`.
 */
export const SERVICE_REJECT_REASONS = {
  /** A compaction span without `session.id` or `gen_ai.conversation.id`. */
  missingSessionKey: 'missing_session_key',
  /** A string attribute longer than `limits.maxAttributeValueLength`, or too many attributes. */
  attributeLimit: 'attribute_limit',
} as const;

/** Instrument units and descriptions of the service's own metrics. */
export const SERVICE_METRIC_DEFINITIONS = {
  [METRIC_SERVICE_SPANS_RECEIVED]: {
    kind: 'counter',
    unit: '{span}',
    description: 'Spans accepted by the continuity serve receiver.',
  },
  [METRIC_SERVICE_SPANS_FORWARDED]: {
    kind: 'counter',
    unit: '{span}',
    description: 'Spans accepted by the downstream OTLP endpoint.',
  },
  [METRIC_SERVICE_SPANS_DROPPED]: {
    kind: 'counter',
    unit: '{span}',
    description: 'Spans accepted by the receiver that the service could not deliver, by reason.',
  },
  [METRIC_SERVICE_SPANS_REJECTED]: {
    kind: 'counter',
    unit: '{span}',
    description: 'Spans refused in an OTLP partial success, by reason.',
  },
  [METRIC_SERVICE_REQUESTS]: {
    kind: 'counter',
    unit: '{request}',
    description: 'OTLP export requests answered (HTTP and gRPC), by HTTP status code.',
  },
  [METRIC_SERVICE_QUEUE_SIZE]: {
    kind: 'gauge',
    unit: '{span}',
    description: 'Spans waiting in the forward queue.',
  },
  [METRIC_SERVICE_QUEUE_CAPACITY]: {
    kind: 'gauge',
    unit: '{span}',
    description: 'Capacity of the forward queue in spans.',
  },
  [METRIC_SERVICE_EXPORT_FAILURES]: {
    kind: 'counter',
    unit: '{request}',
    description: 'Failed downstream export attempts, by reason.',
  },
  [METRIC_SERVICE_RECOVERED]: {
    kind: 'counter',
    unit: '{boundary}',
    description: 'Pending boundaries restored from the state directory at start.',
  },
  [METRIC_SERVICE_RECOVERY_PROBLEMS]: {
    kind: 'counter',
    unit: '{record}',
    description: 'State records that could not be read back at start.',
  },
  [METRIC_SERVICE_PENDING_WRITE_DURATION]: {
    kind: 'histogram',
    unit: 's',
    description: 'Time an OTLP request waited for its pending-state records to be on disk.',
  },
  [METRIC_PROCESS_MEMORY_USAGE]: {
    kind: 'gauge',
    unit: 'By',
    description: 'Resident memory of the continuity serve process.',
  },
  [METRIC_SERVICE_PASSTHROUGH_FORWARDED]: {
    kind: 'counter',
    unit: '{request}',
    description: 'Metrics and logs export requests passed through and accepted by the downstream, by signal.',
  },
  [METRIC_SERVICE_PASSTHROUGH_DROPPED]: {
    kind: 'counter',
    unit: '{request}',
    description: 'Metrics and logs export requests the service could not deliver, by signal and reason.',
  },
} as const;

/** Prometheus names of the service's own metrics, as scraped from `/metrics`. */
export const SERVICE_PROMETHEUS_NAMES = {
  [METRIC_SERVICE_SPANS_RECEIVED]: 'continuity_service_spans_received_total',
  [METRIC_SERVICE_SPANS_FORWARDED]: 'continuity_service_spans_forwarded_total',
  [METRIC_SERVICE_SPANS_DROPPED]: 'continuity_service_spans_dropped_total',
  [METRIC_SERVICE_SPANS_REJECTED]: 'continuity_service_spans_rejected_total',
  [METRIC_SERVICE_REQUESTS]: 'continuity_service_requests_total',
  [METRIC_SERVICE_QUEUE_SIZE]: 'continuity_service_queue_size',
  [METRIC_SERVICE_QUEUE_CAPACITY]: 'continuity_service_queue_capacity',
  [METRIC_SERVICE_EXPORT_FAILURES]: 'continuity_service_export_failures_total',
  [METRIC_SERVICE_RECOVERED]: 'continuity_service_pending_recovered_total',
  [METRIC_SERVICE_RECOVERY_PROBLEMS]: 'continuity_service_pending_recovery_problems_total',
  [METRIC_SERVICE_PENDING_WRITE_DURATION]: 'continuity_service_pending_write_duration_seconds',
  [METRIC_PROCESS_MEMORY_USAGE]: 'process_memory_usage_bytes',
  [METRIC_SERVICE_PASSTHROUGH_FORWARDED]: 'continuity_service_passthrough_forwarded_total',
  [METRIC_SERVICE_PASSTHROUGH_DROPPED]: 'continuity_service_passthrough_dropped_total',
} as const;

// ── Metric attributes (Prometheus labels) ────────────────────────────────────────────────────
// Which attributes each metric's points carry, in one place: docs/alerting.md's metric table is
// generated from these (scripts/gen-alerting-labels.mjs; test/alerting/labels-doc.test.ts
// compares), and `npm run test:stack` checks them against the series a real Prometheus scraped.

/** The point attributes of each continuity metric (Prometheus label: {@link prometheusLabel}). */
export const METRIC_ATTRIBUTES = {
  [METRIC_BOUNDARIES]: [
    METRIC_ATTR_STATE,
    METRIC_ATTR_REASON,
    METRIC_ATTR_RUNTIME,
    METRIC_ATTR_TRIGGER,
    METRIC_ATTR_PRIMARY_DECISION,
  ],
  [METRIC_SESSIONS]: [METRIC_ATTR_STATE, METRIC_ATTR_ACTIVITY],
  [METRIC_NEEDS_HUMAN]: [
    METRIC_ATTR_SESSION_ID,
    METRIC_ATTR_BOUNDARY_ID,
    METRIC_ATTR_STATE,
    METRIC_ATTR_REASON,
    METRIC_ATTR_PRIMARY_DECISION,
    METRIC_ATTR_RUNTIME,
  ],
  [METRIC_PENDING]: [],
  [METRIC_REOBSERVATION_DURATION]: [METRIC_ATTR_RUNTIME, METRIC_ATTR_TRIGGER],
  [METRIC_EVICTIONS]: [METRIC_ATTR_RUNTIME],
  [METRIC_APPROVAL_ATTEMPTS]: [METRIC_ATTR_RESULT],
} as const satisfies Record<keyof typeof PROMETHEUS_NAMES, readonly string[]>;

/** The point attributes of each of the service's own metrics. */
export const SERVICE_METRIC_ATTRIBUTES = {
  [METRIC_SERVICE_SPANS_RECEIVED]: [],
  [METRIC_SERVICE_SPANS_FORWARDED]: [],
  [METRIC_SERVICE_SPANS_DROPPED]: [METRIC_ATTR_ERROR_TYPE],
  [METRIC_SERVICE_SPANS_REJECTED]: [METRIC_ATTR_ERROR_TYPE],
  [METRIC_SERVICE_REQUESTS]: [METRIC_ATTR_HTTP_STATUS_CODE],
  [METRIC_SERVICE_QUEUE_SIZE]: [],
  [METRIC_SERVICE_QUEUE_CAPACITY]: [],
  [METRIC_SERVICE_EXPORT_FAILURES]: [METRIC_ATTR_ERROR_TYPE],
  [METRIC_SERVICE_RECOVERED]: [],
  [METRIC_SERVICE_RECOVERY_PROBLEMS]: [],
  [METRIC_SERVICE_PENDING_WRITE_DURATION]: [],
  [METRIC_PROCESS_MEMORY_USAGE]: [],
  [METRIC_SERVICE_PASSTHROUGH_FORWARDED]: [METRIC_ATTR_SIGNAL],
  [METRIC_SERVICE_PASSTHROUGH_DROPPED]: [METRIC_ATTR_SIGNAL, METRIC_ATTR_ERROR_TYPE],
} as const satisfies Record<keyof typeof SERVICE_PROMETHEUS_NAMES, readonly string[]>;
