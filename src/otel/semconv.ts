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
 * only metric that carries a session: its cardinality is the number of open problems (bounded by
 * the processor, most recent kept), not the number of sessions, and a series disappears once the
 * session's latest boundary no longer needs a human or the session expires. Feeds the dashboard's
 * "boundaries needing a human" table. Prometheus: `agent_continuity_needs_human`.
 */
export const METRIC_NEEDS_HUMAN = 'agent.continuity.needs_human' as const;

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
    description: 'Latest boundary of each session that needs a human (dropped or conflicting), value 1.',
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
