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

// ── Spans ────────────────────────────────────────────────────────────────────────────────────
/** Emitted at the pre-compaction capture. */
export const SPAN_COMPACTION_PRE = 'agent.compaction.pre' as const;
/** Emitted at the post-compaction observation; the processor writes the continuity state on it. */
export const SPAN_COMPACTION_POST = 'agent.compaction.post' as const;
/** Emitted when a human approves a change of one decision. */
export const SPAN_DECISION_APPROVAL = 'agent.decision.approval' as const;
/** Emitted by the processor when a boundary resolves without a post span. */
export const SPAN_CONTINUITY_CHECK = 'agent.continuity.check' as const;
/** Emitted when the agent's activity state changes. */
export const SPAN_ACTIVITY = 'agent.activity' as const;

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
export const ATTR_BOUNDARY_ID = 'agent.compaction.boundary.id' as const;
/** `manual` or `auto`. */
export const ATTR_TRIGGER = 'agent.compaction.trigger' as const;
/** The agent runtime, e.g. `claude-code`, `codex-cli`, `gemini-cli`, `sdk`. */
export const ATTR_RUNTIME = 'agent.compaction.runtime' as const;
export const ATTR_NORMALIZER_VERSION = 'agent.continuity.normalizer.version' as const;
/** The decision names carried by this span (string array). */
export const ATTR_DECISION_NAMES = 'agent.continuity.decision.names' as const;
/** Set when the snapshot could not be taken: a reason code such as `capture_failed`. */
export const ATTR_EVIDENCE_MISSING = 'agent.continuity.evidence_missing' as const;
/** The time the snapshot was captured (RFC 3339 UTC); span start time when absent. */
export const ATTR_CAPTURED_AT = 'agent.continuity.captured_at' as const;
/** When the compaction happened (RFC 3339 UTC), on the post span when the runtime reported it. */
export const ATTR_COMPACTED_AT = 'agent.compaction.compacted_at' as const;

/** Per-decision attribute fields: `agent.continuity.decision.<name>.<field>`. */
export const DECISION_FIELDS = [
  'digest',
  'revision',
  'observed_at',
  'source',
  'approval_ref',
  'verdict',
] as const;
export type DecisionField = (typeof DECISION_FIELDS)[number];
const DECISION_PREFIX = 'agent.continuity.decision.' as const;

/** The attribute key of one field of one decision, e.g. `agent.continuity.decision.scope.digest`. */
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
export const ATTR_APPROVAL_DECISION = 'agent.continuity.approval.decision' as const;
export const ATTR_APPROVAL_FROM_DIGEST = 'agent.continuity.approval.from_digest' as const;
export const ATTR_APPROVAL_TO_DIGEST = 'agent.continuity.approval.to_digest' as const;
export const ATTR_APPROVAL_REF = 'agent.continuity.approval.ref' as const;
export const ATTR_APPROVAL_APPROVED_BY = 'agent.continuity.approval.approved_by' as const;
export const ATTR_APPROVAL_APPROVED_AT = 'agent.continuity.approval.approved_at' as const;

// ── Written by the processor ─────────────────────────────────────────────────────────────────
export const ATTR_CONTINUITY_STATE = 'agent.continuity.state' as const;
export const ATTR_CONTINUITY_ACTION = 'agent.continuity.action' as const;
export const ATTR_CONTINUITY_REASON = 'agent.continuity.reason' as const;
export const ATTR_CONTINUITY_PRIMARY_DECISION = 'agent.continuity.primary_decision' as const;
/** Activity, its own dimension beside continuity: `working`, `waiting_human`, `idle`. */
export const ATTR_ACTIVITY_STATE = 'agent.activity.state' as const;
/** The activity value written when no activity was reported for the session. */
export const ACTIVITY_STATE_UNKNOWN = 'unknown' as const;

/** Reason codes of `agent.continuity.evidence_missing` (other lower-case codes are accepted). */
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
/** Counter of resolved boundaries. Attributes: state, reason, runtime, trigger, primary_decision. Prometheus: `agent_continuity_boundaries_total`. */
export const METRIC_BOUNDARIES = 'agent.continuity.boundaries' as const;
/** Gauge of sessions by latest continuity state × activity state. Prometheus: `agent_continuity_sessions`. */
export const METRIC_SESSIONS = 'agent.continuity.sessions' as const;
/** Gauge of boundaries waiting for their post observation. Prometheus: `agent_continuity_pending`. */
export const METRIC_PENDING = 'agent.continuity.pending' as const;
/** Histogram, seconds from boundary to post observation. Prometheus: `agent_compaction_reobservation_duration_seconds`. */
export const METRIC_REOBSERVATION_DURATION = 'agent.compaction.reobservation.duration' as const;
/** Counter of pending boundaries evicted to keep memory bounded (self-observability). */
export const METRIC_EVICTIONS = 'agent.continuity.pending.evictions' as const;
/**
 * Gauge, one series per session whose latest boundary needs a human (`dropped` or `conflicting`),
 * value 1. Attributes: session_id, boundary_id, state, reason, primary_decision, runtime. It is the
 * only metric that carries a session: its series at 1 are the open problems (bounded by the
 * processor, most recent kept), not the sessions. Once the session's latest boundary no longer
 * needs a human (or the session expires or leaves the most recent kept) its series reads 0: a
 * cumulative SDK keeps exporting every attribute set it has seen, so 0 is how a series ends, and
 * consumers select `== 1`. Those 0 series last until the process restarts, within the SDK's
 * per-instrument cardinality limit (2 000 by default). Feeds the dashboard's "boundaries needing a
 * human" table. Prometheus: `agent_continuity_needs_human`.
 */
export const METRIC_NEEDS_HUMAN = 'agent.continuity.needs_human' as const;

/** The value of the `runtime` or `trigger` metric attribute when the span did not report one. */
export const METRIC_VALUE_UNKNOWN = 'unknown' as const;

/** Metric point attribute keys (short, as on the spans' processor-written attributes). */
export const METRIC_ATTR_STATE = 'state' as const;
export const METRIC_ATTR_REASON = 'reason' as const;
export const METRIC_ATTR_RUNTIME = 'runtime' as const;
export const METRIC_ATTR_TRIGGER = 'trigger' as const;
export const METRIC_ATTR_ACTIVITY = 'activity' as const;
/**
 * The boundary's primary decision name, on the boundaries counter and needs_human. Bounded: names
 * come from the task's decision schema. Lets an alert tell a dropped `approval_boundary` (critical)
 * from a dropped acceptance test. Empty when the boundary has no primary decision.
 */
export const METRIC_ATTR_PRIMARY_DECISION = 'primary_decision' as const;
/** Session id, only on the needs_human gauge (see {@link METRIC_NEEDS_HUMAN}). */
export const METRIC_ATTR_SESSION_ID = 'session_id' as const;
/** Boundary id, only on the needs_human gauge. */
export const METRIC_ATTR_BOUNDARY_ID = 'boundary_id' as const;

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
} as const;

/** The Prometheus names the metrics above become through the Prometheus exporter or a collector. */
export const PROMETHEUS_NAMES = {
  [METRIC_BOUNDARIES]: 'agent_continuity_boundaries_total',
  [METRIC_SESSIONS]: 'agent_continuity_sessions',
  [METRIC_PENDING]: 'agent_continuity_pending',
  [METRIC_REOBSERVATION_DURATION]: 'agent_compaction_reobservation_duration_seconds',
  [METRIC_EVICTIONS]: 'agent_continuity_pending_evictions_total',
  [METRIC_NEEDS_HUMAN]: 'agent_continuity_needs_human',
} as const;

/** Runtime names known to the defaults (post windows and the like); others are allowed. */
export const KNOWN_RUNTIMES = ['claude-code', 'codex-cli', 'gemini-cli', 'sdk'] as const;

/** Trigger values. */
export const TRIGGERS = ['manual', 'auto'] as const;
export type CompactionTrigger = (typeof TRIGGERS)[number];

// ── `continuity serve` self-observability ────────────────────────────────────────────────────
// The service's own health, beside the continuity metrics. Every span received is, at any moment,
// forwarded, dropped (counted with a reason), rejected at the receiver (counted), or still queued:
// nothing is lost silently. Prometheus names in SERVICE_PROMETHEUS_NAMES.

/** Counter of spans accepted by the receiver (after decoding). */
export const METRIC_SERVICE_SPANS_RECEIVED = 'agent.continuity.service.spans.received' as const;
/** Counter of spans the downstream accepted. */
export const METRIC_SERVICE_SPANS_FORWARDED = 'agent.continuity.service.spans.forwarded' as const;
/** Counter of spans the service gave up on after accepting them; attribute `reason`. */
export const METRIC_SERVICE_SPANS_DROPPED = 'agent.continuity.service.spans.dropped' as const;
/** Counter of spans refused in an OTLP partial success (e.g. missing session key); attribute `reason`. */
export const METRIC_SERVICE_SPANS_REJECTED = 'agent.continuity.service.spans.rejected' as const;
/** Counter of OTLP/HTTP requests answered, attribute `http.response.status_code`. */
export const METRIC_SERVICE_REQUESTS = 'agent.continuity.service.requests' as const;
/** Gauge of spans waiting in the forward queue. */
export const METRIC_SERVICE_QUEUE_SIZE = 'agent.continuity.service.queue.size' as const;
/** Gauge of the forward queue's capacity in spans. */
export const METRIC_SERVICE_QUEUE_CAPACITY = 'agent.continuity.service.queue.capacity' as const;
/** Counter of failed downstream export attempts; attribute `reason` (`status_503`, `network`, `timeout`, ...). */
export const METRIC_SERVICE_EXPORT_FAILURES = 'agent.continuity.service.export.failures' as const;
/** Counter of pending boundaries restored from the state directory at start. */
export const METRIC_SERVICE_RECOVERED = 'agent.continuity.service.pending.recovered' as const;
/** Counter of state records that could not be read back (their boundaries resolve `unverified`). */
export const METRIC_SERVICE_RECOVERY_PROBLEMS = 'agent.continuity.service.pending.recovery_problems' as const;
/** Gauge of the process's resident memory (OpenTelemetry `process.memory.usage`). */
export const METRIC_PROCESS_MEMORY_USAGE = 'process.memory.usage' as const;

/** Metric point attribute: the HTTP status code answered (OpenTelemetry HTTP conventions). */
export const METRIC_ATTR_HTTP_STATUS_CODE = 'http.response.status_code' as const;

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
  /** A span the service created (an `agent.continuity.check` span) found the queue full. */
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
    description: 'OTLP/HTTP export requests answered, by HTTP status code.',
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
  [METRIC_PROCESS_MEMORY_USAGE]: {
    kind: 'gauge',
    unit: 'By',
    description: 'Resident memory of the continuity serve process.',
  },
} as const;

/** Prometheus names of the service's own metrics, as scraped from `/metrics`. */
export const SERVICE_PROMETHEUS_NAMES = {
  [METRIC_SERVICE_SPANS_RECEIVED]: 'agent_continuity_service_spans_received_total',
  [METRIC_SERVICE_SPANS_FORWARDED]: 'agent_continuity_service_spans_forwarded_total',
  [METRIC_SERVICE_SPANS_DROPPED]: 'agent_continuity_service_spans_dropped_total',
  [METRIC_SERVICE_SPANS_REJECTED]: 'agent_continuity_service_spans_rejected_total',
  [METRIC_SERVICE_REQUESTS]: 'agent_continuity_service_requests_total',
  [METRIC_SERVICE_QUEUE_SIZE]: 'agent_continuity_service_queue_size',
  [METRIC_SERVICE_QUEUE_CAPACITY]: 'agent_continuity_service_queue_capacity',
  [METRIC_SERVICE_EXPORT_FAILURES]: 'agent_continuity_service_export_failures_total',
  [METRIC_SERVICE_RECOVERED]: 'agent_continuity_service_pending_recovered_total',
  [METRIC_SERVICE_RECOVERY_PROBLEMS]: 'agent_continuity_service_pending_recovery_problems_total',
  [METRIC_PROCESS_MEMORY_USAGE]: 'process_memory_usage_bytes',
} as const;
