/**
 * The attribute codec: snapshots, approvals and activity as span attributes (digests only), and
 * back from a span's name and attributes to a typed {@link CompactionEvent}.
 *
 * Used by the SDK extension (writing), the {@link ContinuityProcessor} (reading SDK spans) and
 * `continuity serve` (reading decoded OTLP spans), so all three read and write the same keys.
 *
 * What goes in: only digests, opaque identifiers, integers and RFC 3339 timestamps. Never a raw
 * decision value, prompt, response, tool payload, transcript path, compaction summary or key.
 *
 * What comes out is validated: a compaction span whose evidence is malformed (a bad digest, a
 * revision that is not an integer, an unknown normalizer version field, …) is read as
 * evidence missing, so its boundary resolves to `unverified`, never to a fabricated match.
 */
import type { Attributes, AttributeValue, HrTime } from '@opentelemetry/api';
import { KEY_ID_PATTERN, SIGNATURE_PATTERN } from '../authority/patterns.js';
import type { Classification } from '../classify/classify.js';
import type { Approval, DecisionMap, DecisionObservation, Snapshot } from '../decision/model.js';
import { DECISION_NAME_PATTERN } from '../decision/names.js';
import { ACTIVITY_STATES, type ActivityState, DIGEST_PATTERN, OPAQUE_ID_PATTERN } from '../decision/rules.js';
import { isRfc3339Utc } from '../decision/time.js';
import {
  ACTIVITY_STATE_UNKNOWN,
  ATTR_ACTIVITY_STATE,
  ATTR_APPROVAL_APPROVED_AT,
  ATTR_APPROVAL_APPROVED_BY,
  ATTR_APPROVAL_BOUNDARY_ID,
  ATTR_APPROVAL_DECISION,
  ATTR_APPROVAL_FROM_DIGEST,
  ATTR_APPROVAL_KEY_ID,
  ATTR_APPROVAL_REF,
  ATTR_APPROVAL_SIGNATURE,
  ATTR_APPROVAL_TO_DIGEST,
  ATTR_BOUNDARY_ID,
  ATTR_CAPTURED_AT,
  ATTR_COMPACTED_AT,
  ATTR_CONTINUITY_ACTION,
  ATTR_CONTINUITY_PRIMARY_DECISION,
  ATTR_CONTINUITY_REASON,
  ATTR_CONTINUITY_STATE,
  ATTR_DECISION_NAMES,
  ATTR_EVIDENCE_MISSING,
  ATTR_GEN_AI_CONVERSATION_COMPACTED,
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_NORMALIZER_VERSION,
  ATTR_RUNTIME,
  ATTR_SESSION_ID,
  ATTR_TOKENS_AFTER,
  ATTR_TOKENS_BEFORE,
  ATTR_TRIGGER,
  type CompactionTrigger,
  type DecisionField,
  decisionAttr,
  EVIDENCE_MISSING_REASONS,
  NAMESPACE,
  SPAN_ACTIVITY,
  SPAN_COMPACTION_POST,
  SPAN_COMPACTION_PRE,
  SPAN_DECISION_APPROVAL,
} from './semconv.js';

/** Trace and span id of a span (lower-case hex), for links. */
export interface SpanRef {
  traceId: string;
  spanId: string;
}

/** Where a compaction span sits: the boundary it belongs to and the runtime that produced it. */
export interface BoundaryContext {
  /** The boundary id, when the runtime or the extension knows one. */
  boundaryId?: string;
  /** The runtime, e.g. `claude-code`, `codex-cli`, `gemini-cli`, `sdk`. */
  runtime?: string;
  /** `manual` or `auto`. */
  trigger?: CompactionTrigger;
  /** Post only: when the compaction happened (RFC 3339 UTC), when the runtime reported it. */
  compactedAt?: string;
  /** Context fill before the compaction, in tokens, when the runtime reported it. */
  tokensBefore?: number;
  /** Context fill after the compaction, in tokens, when the runtime reported it. */
  tokensAfter?: number;
}

/** What every compaction event carries. */
interface EventBase {
  /** The session key: `session.id`, else `gen_ai.conversation.id`. */
  sessionId: string;
  /** The span's start time in nanoseconds since the epoch; null when it was not readable. */
  timeNs: bigint | null;
  /** The span itself, when the caller passed it (for links). */
  span?: SpanRef;
}

/** The boundary fields of a pre or post span; null when absent or malformed. */
export interface BoundaryFields {
  boundaryId: string | null;
  runtime: string | null;
  trigger: CompactionTrigger | null;
}

/** A snapshot read from a span, or the reason there is none (capture failed, malformed evidence). */
export type SnapshotEvidence =
  | { snapshot: Snapshot; evidenceMissing?: never }
  | { snapshot: null; evidenceMissing: string };

/** A `continuity.compaction.pre` span: the pre-compaction snapshot opens a boundary. */
export type PreCompactionEvent = EventBase & BoundaryFields & SnapshotEvidence & { kind: 'pre' };

/** A `continuity.compaction.post` span: the post-compaction observation resolves the boundary. */
export type PostCompactionEvent = EventBase &
  BoundaryFields &
  SnapshotEvidence & {
    kind: 'post';
    /** When the compaction happened, when the runtime reported it (RFC 3339 UTC). */
    compactedAt: string | null;
  };

/** A `continuity.approval` span; `approval` is null when the attributes were malformed. */
export type ApprovalEvent = EventBase & { kind: 'approval' } & (
    | { approval: Approval; evidenceMissing?: never }
    | { approval: null; evidenceMissing: string }
  );

/** A `continuity.activity` span: the agent's activity state, its own dimension beside continuity. */
export type ActivityEvent = EventBase & { kind: 'activity'; state: ActivityState };

/** What a compaction-related span means to the correlator. */
export type CompactionEvent = PreCompactionEvent | PostCompactionEvent | ApprovalEvent | ActivityEvent;

/** A span start time: nanoseconds (bigint, or a decimal string / number as in OTLP) or an HrTime. */
export type SpanTimeInput = bigint | string | number | HrTime;

/** Runtime names become metric attributes, so they are kept short and plain. */
const RUNTIME_PATTERN = /^[a-z0-9][a-z0-9._-]{0,63}$/;
/** Evidence-missing reason codes, e.g. `capture_failed`. */
const REASON_CODE_PATTERN = /^[a-z][a-z0-9_]{0,63}$/;
/** More decision names than this on one span is not a decision invariant; read as malformed. */
const MAX_DECISIONS_READ = 64;
/** 1e20 ns, about the year 5138: the largest span time read. */
const MAX_TIME_NS = 100_000_000_000_000_000_000n;

// ── Writing ──────────────────────────────────────────────────────────────────────────────────

function isTokenCount(n: unknown): n is number {
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
}

function boundaryAttributes(
  phase: 'pre' | 'post',
  sessionId: string,
  boundary: BoundaryContext | undefined,
): Attributes {
  const attrs: Attributes = { [ATTR_SESSION_ID]: sessionId };
  if (boundary?.boundaryId !== undefined) attrs[ATTR_BOUNDARY_ID] = boundary.boundaryId;
  if (boundary?.runtime !== undefined) attrs[ATTR_RUNTIME] = boundary.runtime;
  if (boundary?.trigger !== undefined) attrs[ATTR_TRIGGER] = boundary.trigger;
  if (isTokenCount(boundary?.tokensBefore)) attrs[ATTR_TOKENS_BEFORE] = boundary.tokensBefore;
  if (isTokenCount(boundary?.tokensAfter)) attrs[ATTR_TOKENS_AFTER] = boundary.tokensAfter;
  if (phase === 'post') {
    attrs[ATTR_GEN_AI_CONVERSATION_COMPACTED] = true;
    if (boundary?.compactedAt !== undefined) attrs[ATTR_COMPACTED_AT] = boundary.compactedAt;
  }
  return attrs;
}

/**
 * The attributes of a `continuity.compaction.pre` or `continuity.compaction.post` span for a snapshot:
 * session, boundary fields, normalizer version, capture time, the decision names (string array)
 * and per decision its digest, revision, observed_at, source and approval_ref. Digests only: the
 * snapshot type carries no raw values. On the post span also `gen_ai.conversation.compacted`.
 */
export function snapshotAttributes(
  phase: 'pre' | 'post',
  snapshot: Snapshot,
  boundary?: BoundaryContext,
): Attributes {
  const attrs = boundaryAttributes(phase, snapshot.sessionId, boundary);
  const names = Object.keys(snapshot.decisions);
  attrs[ATTR_NORMALIZER_VERSION] = snapshot.normalizerVersion;
  attrs[ATTR_CAPTURED_AT] = snapshot.capturedAt;
  attrs[ATTR_DECISION_NAMES] = names;
  for (const name of names) {
    const d = snapshot.decisions[name]!;
    attrs[decisionAttr(name, 'digest')] = d.digest;
    attrs[decisionAttr(name, 'revision')] = d.revision;
    attrs[decisionAttr(name, 'observed_at')] = d.observedAt;
    if (d.source !== undefined) attrs[decisionAttr(name, 'source')] = d.source;
    if (d.approvalRef !== undefined) attrs[decisionAttr(name, 'approval_ref')] = d.approvalRef;
  }
  return attrs;
}

/**
 * The attributes of a pre or post span whose snapshot could not be taken: the session, the
 * boundary fields and `continuity.evidence_missing` with a reason code (for example
 * `capture_failed`). Its boundary resolves to `unverified`, never to a match.
 */
export function evidenceMissingAttributes(
  phase: 'pre' | 'post',
  sessionId: string,
  reason: string,
  boundary?: BoundaryContext,
): Attributes {
  const attrs = boundaryAttributes(phase, sessionId, boundary);
  attrs[ATTR_EVIDENCE_MISSING] = REASON_CODE_PATTERN.test(reason)
    ? reason
    : EVIDENCE_MISSING_REASONS.captureFailed;
  return attrs;
}

/** The attributes of a `continuity.approval` span (digests and opaque ids only). */
export function approvalAttributes(sessionId: string, approval: Approval): Attributes {
  return {
    [ATTR_SESSION_ID]: sessionId,
    [ATTR_APPROVAL_DECISION]: approval.decision,
    [ATTR_APPROVAL_FROM_DIGEST]: approval.fromDigest,
    [ATTR_APPROVAL_TO_DIGEST]: approval.toDigest,
    [ATTR_APPROVAL_REF]: approval.approvalRef,
    [ATTR_APPROVAL_APPROVED_BY]: approval.approvedBy,
    [ATTR_APPROVAL_APPROVED_AT]: approval.approvedAt,
    // The proof: ids and a signature, never the key.
    ...(approval.boundaryId !== undefined && { [ATTR_APPROVAL_BOUNDARY_ID]: approval.boundaryId }),
    ...(approval.keyId !== undefined && { [ATTR_APPROVAL_KEY_ID]: approval.keyId }),
    ...(approval.signature !== undefined && { [ATTR_APPROVAL_SIGNATURE]: approval.signature }),
  };
}

/** The attributes of a `continuity.activity` span. */
export function activityAttributes(sessionId: string, state: ActivityState): Attributes {
  return { [ATTR_SESSION_ID]: sessionId, [ATTR_ACTIVITY_STATE]: state };
}

/**
 * The attributes the processor writes onto a post span (or a `continuity.check` span):
 * state, action, reason, primary decision (when there is one), every decision's verdict, and the
 * activity state as its own attribute.
 */
export function classificationAttributes(
  classification: Classification,
  activity: ActivityState | typeof ACTIVITY_STATE_UNKNOWN = ACTIVITY_STATE_UNKNOWN,
): Attributes {
  const attrs: Attributes = {
    [ATTR_CONTINUITY_STATE]: classification.state,
    [ATTR_CONTINUITY_ACTION]: classification.action,
    [ATTR_CONTINUITY_REASON]: classification.reason,
    [ATTR_ACTIVITY_STATE]: activity,
  };
  if (classification.primaryDecision !== null) {
    attrs[ATTR_CONTINUITY_PRIMARY_DECISION] = classification.primaryDecision;
  }
  for (const [name, result] of Object.entries(classification.decisions)) {
    attrs[decisionKeys(name).verdict] = result.verdict;
  }
  return attrs;
}

/**
 * The attributes of a `continuity.check` span: the boundary's identity plus
 * {@link classificationAttributes}.
 */
export function checkAttributes(
  check: { sessionId: string; boundaryId: string | null; runtime: string | null; trigger: string | null },
  classification: Classification,
  activity?: ActivityState | typeof ACTIVITY_STATE_UNKNOWN,
): Attributes {
  const attrs = classificationAttributes(classification, activity);
  attrs[ATTR_SESSION_ID] = check.sessionId;
  if (check.boundaryId !== null) attrs[ATTR_BOUNDARY_ID] = check.boundaryId;
  if (check.runtime !== null) attrs[ATTR_RUNTIME] = check.runtime;
  if (check.trigger !== null) attrs[ATTR_TRIGGER] = check.trigger;
  return attrs;
}

// ── Reading ──────────────────────────────────────────────────────────────────────────────────

/** True for the span names {@link readCompactionSpan} reads. Cheap: one comparison for most names. */
export function isCompactionSpanName(name: string): boolean {
  // Every name we read starts with "continuity."; most spans fail on the first character.
  if (name.charCodeAt(0) !== 99 /* c */ || !name.startsWith(`${NAMESPACE}.`)) return false;
  return (
    name === SPAN_COMPACTION_PRE ||
    name === SPAN_COMPACTION_POST ||
    name === SPAN_DECISION_APPROVAL ||
    name === SPAN_ACTIVITY
  );
}

/**
 * Every span-level key {@link readCompactionEvent} reads through
 * {@link CompactionAttributeSource.attribute}: a source that reads spans in part (as
 * `continuity serve` reads their bytes) keeps these and each decision's fields, and nothing else.
 */
export const SPAN_LEVEL_KEYS: readonly string[] = Object.freeze([
  ATTR_SESSION_ID,
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_BOUNDARY_ID,
  ATTR_RUNTIME,
  ATTR_TRIGGER,
  ATTR_EVIDENCE_MISSING,
  ATTR_NORMALIZER_VERSION,
  ATTR_CAPTURED_AT,
  ATTR_DECISION_NAMES,
  ATTR_COMPACTED_AT,
  ATTR_ACTIVITY_STATE,
  ATTR_APPROVAL_DECISION,
  ATTR_APPROVAL_FROM_DIGEST,
  ATTR_APPROVAL_TO_DIGEST,
  ATTR_APPROVAL_REF,
  ATTR_APPROVAL_APPROVED_BY,
  ATTR_APPROVAL_APPROVED_AT,
  ATTR_APPROVAL_BOUNDARY_ID,
  ATTR_APPROVAL_KEY_ID,
  ATTR_APPROVAL_SIGNATURE,
]);

/** The decision fields {@link readCompactionEvent} reads (`continuity.decision.<name>.<field>`). */
export const DECISION_FIELDS_READ = Object.freeze([
  'digest',
  'revision',
  'observed_at',
  'source',
  'approval_ref',
] as const satisfies readonly DecisionField[]);

/**
 * The attributes {@link readCompactionEvent} reads, by key: the span-level keys it knows (session,
 * boundary, snapshot, approval and activity keys) and each decision's fields. A plain record is
 * one source ({@link readCompactionSpan}); `continuity serve` reads another straight from a span's
 * protobuf bytes, which gives for every key what the record of the decoded span would hold.
 */
export interface CompactionAttributeSource {
  /** The value of a span-level attribute (never a `continuity.decision.<name>.*` key), or undefined. */
  attribute(key: string): AttributeValue | undefined;
  /**
   * The fields of `continuity.decision.<name>.*`, or undefined when it has none. Read at once:
   * a source may hand out the same object for the next name.
   */
  decision(name: string): Readonly<DecisionAttributes> | undefined;
}

/** The attribute values of one decision, by field (`continuity.decision.<name>.<field>`). */
export type DecisionAttributes = {
  [F in (typeof DECISION_FIELDS_READ)[number]]?: AttributeValue | undefined;
};

type AttrRecord = Readonly<Record<string, AttributeValue | undefined>>;

/** A plain record as a {@link CompactionAttributeSource}. */
class RecordSource implements CompactionAttributeSource {
  private readonly _fields: DecisionAttributes = {};
  constructor(private readonly _record: AttrRecord) {}

  attribute(key: string): AttributeValue | undefined {
    return this._record[key];
  }

  decision(name: string): DecisionAttributes {
    const keys = decisionKeys(name);
    const r = this._record;
    const f = this._fields;
    f.digest = r[keys.digest];
    f.revision = r[keys.revision];
    f.observed_at = r[keys.observedAt];
    f.source = r[keys.source];
    f.approval_ref = r[keys.approvalRef];
    return f;
  }
}

/**
 * Reads a span into a {@link CompactionEvent}, or `undefined` for every other span and for a
 * compaction span without a usable session key (`session.id`, else `gen_ai.conversation.id`; it
 * cannot be correlated — {@link isCompactionSpanName} tells those apart to count them).
 *
 * `attributes` is a plain record (SDK span attributes, or decoded OTLP attributes where int64
 * values may be decimal strings). `startTime` is the span's start time (ns or HrTime); the
 * capture time falls back to it when `continuity.captured_at` is absent. Never throws.
 */
export function readCompactionSpan(
  name: string,
  attributes: Readonly<Record<string, AttributeValue | undefined>> | undefined,
  startTime: SpanTimeInput | undefined,
  span?: SpanRef,
): CompactionEvent | undefined {
  if (!isCompactionSpanName(name) || attributes === undefined || attributes === null) return undefined;
  return readCompactionEvent(name, new RecordSource(attributes), startTime, span);
}

/**
 * {@link readCompactionSpan} from any {@link CompactionAttributeSource}: the one place the
 * attribute codec's reading rules live. Never throws.
 */
export function readCompactionEvent(
  name: string,
  attributes: CompactionAttributeSource,
  startTime: SpanTimeInput | undefined,
  span?: SpanRef,
): CompactionEvent | undefined {
  if (!isCompactionSpanName(name)) return undefined;
  try {
    const sessionId = readSessionId(attributes);
    if (sessionId === undefined) return undefined;
    const timeNs = toNs(startTime);
    const base: EventBase = span ? { sessionId, timeNs, span } : { sessionId, timeNs };
    switch (name) {
      case SPAN_COMPACTION_PRE:
      case SPAN_COMPACTION_POST: {
        // Built field by field (the order the spreads of earlier versions gave), not spread from
        // partial objects: a compaction request reads sixteen of these.
        const evidence = readSnapshot(attributes, base);
        const boundaryId = attributes.attribute(ATTR_BOUNDARY_ID);
        const runtime = attributes.attribute(ATTR_RUNTIME);
        const trigger = attributes.attribute(ATTR_TRIGGER);
        const event: Record<string, unknown> = span
          ? { kind: name === SPAN_COMPACTION_PRE ? 'pre' : 'post', sessionId, timeNs, span }
          : { kind: name === SPAN_COMPACTION_PRE ? 'pre' : 'post', sessionId, timeNs };
        event.boundaryId =
          typeof boundaryId === 'string' && OPAQUE_ID_PATTERN.test(boundaryId) ? boundaryId : null;
        event.runtime = typeof runtime === 'string' && RUNTIME_PATTERN.test(runtime) ? runtime : null;
        event.trigger = trigger === 'manual' || trigger === 'auto' ? trigger : null;
        event.snapshot = evidence.snapshot;
        if (evidence.evidenceMissing !== undefined) event.evidenceMissing = evidence.evidenceMissing;
        if (name === SPAN_COMPACTION_POST) {
          const compactedAt = attributes.attribute(ATTR_COMPACTED_AT);
          event.compactedAt =
            typeof compactedAt === 'string' && isRfc3339Utc(compactedAt) ? compactedAt : null;
        }
        return event as unknown as PreCompactionEvent | PostCompactionEvent;
      }
      case SPAN_DECISION_APPROVAL: {
        const approval = readApproval(attributes);
        return approval
          ? { kind: 'approval', ...base, approval }
          : {
              kind: 'approval',
              ...base,
              approval: null,
              evidenceMissing: EVIDENCE_MISSING_REASONS.invalidAttributes,
            };
      }
      default: {
        const state = attributes.attribute(ATTR_ACTIVITY_STATE);
        if (typeof state !== 'string' || !(ACTIVITY_STATES as readonly string[]).includes(state))
          return undefined;
        return { kind: 'activity', ...base, state: state as ActivityState };
      }
    }
  } catch {
    // Attribute records from the wire can be anything (getters, proxies); never throw to the caller.
    return undefined;
  }
}

/** The session key a compaction span's attributes carry, as {@link readCompactionEvent} reads it. */
export function readSessionId(attributes: CompactionAttributeSource): string | undefined {
  const id = attributes.attribute(ATTR_SESSION_ID);
  if (typeof id === 'string' && OPAQUE_ID_PATTERN.test(id)) return id;
  const conv = attributes.attribute(ATTR_GEN_AI_CONVERSATION_ID);
  if (typeof conv === 'string' && OPAQUE_ID_PATTERN.test(conv)) return conv;
  return undefined;
}

function missing(reason: string): SnapshotEvidence {
  return { snapshot: null, evidenceMissing: reason };
}

function readSnapshot(attributes: CompactionAttributeSource, base: EventBase): SnapshotEvidence {
  const marked = attributes.attribute(ATTR_EVIDENCE_MISSING);
  if (marked !== undefined && marked !== null) {
    return missing(
      typeof marked === 'string' && REASON_CODE_PATTERN.test(marked)
        ? marked
        : EVIDENCE_MISSING_REASONS.captureFailed,
    );
  }
  const invalid = missing(EVIDENCE_MISSING_REASONS.invalidAttributes);
  const normalizerVersion = readPositiveInt(attributes.attribute(ATTR_NORMALIZER_VERSION));
  if (normalizerVersion === undefined) return invalid;
  let capturedAt = attributes.attribute(ATTR_CAPTURED_AT);
  if (capturedAt === undefined) {
    if (base.timeNs === null) return invalid;
    capturedAt = formatNs(base.timeNs);
  }
  if (typeof capturedAt !== 'string' || !isRfc3339Utc(capturedAt)) return invalid;
  const names = attributes.attribute(ATTR_DECISION_NAMES);
  if (!Array.isArray(names) || names.length > MAX_DECISIONS_READ) return invalid;
  const decisions: DecisionMap = {};
  // Most decisions share one observation time: validate each distinct time once.
  let validTime = capturedAt;
  for (let i = 0; i < names.length; i++) {
    const name = names[i];
    // A name listed twice is malformed (at most MAX_DECISIONS_READ names: a scan, not a set).
    if (
      typeof name !== 'string' ||
      !DECISION_NAME_PATTERN.test(name) ||
      (names as readonly unknown[]).indexOf(name) < i
    )
      return invalid;
    const fields = attributes.decision(name);
    if (fields === undefined) return invalid;
    const digest = fields.digest;
    const revision = readPositiveInt(fields.revision);
    const observedAt = fields.observed_at;
    const source = fields.source;
    const approvalRef = fields.approval_ref;
    if (typeof digest !== 'string' || !DIGEST_PATTERN.test(digest)) return invalid;
    if (revision === undefined) return invalid;
    if (typeof observedAt !== 'string') return invalid;
    if (observedAt !== validTime) {
      if (!isRfc3339Utc(observedAt)) return invalid;
      validTime = observedAt;
    }
    if (source !== undefined && (typeof source !== 'string' || !OPAQUE_ID_PATTERN.test(source)))
      return invalid;
    if (
      approvalRef !== undefined &&
      (typeof approvalRef !== 'string' || !OPAQUE_ID_PATTERN.test(approvalRef))
    )
      return invalid;
    const observation: DecisionObservation = { digest, revision, observedAt };
    if (source !== undefined) observation.source = source;
    if (approvalRef !== undefined) observation.approvalRef = approvalRef;
    decisions[name] = observation;
  }
  return { snapshot: { sessionId: base.sessionId, capturedAt, normalizerVersion, decisions } };
}

interface DecisionKeys {
  digest: string;
  revision: string;
  observedAt: string;
  source: string;
  approvalRef: string;
  verdict: string;
}
// Decision names repeat across spans; building five keys per decision per span showed up in
// profiles. Bounded: names come from a task's decision schema, and the cache is capped.
const decisionKeyCache = new Map<string, DecisionKeys>();
const MAX_CACHED_NAMES = 1_024;

function decisionKeys(name: string): DecisionKeys {
  let keys = decisionKeyCache.get(name);
  if (!keys) {
    keys = {
      digest: decisionAttr(name, 'digest'),
      revision: decisionAttr(name, 'revision'),
      observedAt: decisionAttr(name, 'observed_at'),
      source: decisionAttr(name, 'source'),
      approvalRef: decisionAttr(name, 'approval_ref'),
      verdict: decisionAttr(name, 'verdict'),
    };
    if (decisionKeyCache.size < MAX_CACHED_NAMES) decisionKeyCache.set(name, keys);
  }
  return keys;
}

function readApproval(attributes: CompactionAttributeSource): Approval | undefined {
  const decision = attributes.attribute(ATTR_APPROVAL_DECISION);
  const fromDigest = attributes.attribute(ATTR_APPROVAL_FROM_DIGEST);
  const toDigest = attributes.attribute(ATTR_APPROVAL_TO_DIGEST);
  const approvalRef = attributes.attribute(ATTR_APPROVAL_REF);
  const approvedBy = attributes.attribute(ATTR_APPROVAL_APPROVED_BY);
  const approvedAt = attributes.attribute(ATTR_APPROVAL_APPROVED_AT);
  if (typeof decision !== 'string' || !DECISION_NAME_PATTERN.test(decision)) return undefined;
  if (typeof fromDigest !== 'string' || !DIGEST_PATTERN.test(fromDigest)) return undefined;
  if (typeof toDigest !== 'string' || !DIGEST_PATTERN.test(toDigest)) return undefined;
  if (typeof approvalRef !== 'string' || !OPAQUE_ID_PATTERN.test(approvalRef)) return undefined;
  if (typeof approvedBy !== 'string' || !OPAQUE_ID_PATTERN.test(approvedBy)) return undefined;
  if (typeof approvedAt !== 'string' || !isRfc3339Utc(approvedAt)) return undefined;
  // The proof is read when well-formed and left out otherwise: an approval without it is kept as
  // an attempt by a verifying reader, never dropped as malformed.
  const boundaryId = attributes.attribute(ATTR_APPROVAL_BOUNDARY_ID);
  const keyId = attributes.attribute(ATTR_APPROVAL_KEY_ID);
  const signature = attributes.attribute(ATTR_APPROVAL_SIGNATURE);
  return {
    decision,
    fromDigest,
    toDigest,
    approvalRef,
    approvedBy,
    approvedAt,
    ...(typeof boundaryId === 'string' && OPAQUE_ID_PATTERN.test(boundaryId) && { boundaryId }),
    ...(typeof keyId === 'string' && KEY_ID_PATTERN.test(keyId) && { keyId }),
    ...(typeof signature === 'string' && SIGNATURE_PATTERN.test(signature) && { signature }),
  };
}

/** An integer >= 1 from a number or a decimal string (OTLP JSON carries int64 as strings). */
function readPositiveInt(value: unknown): number | undefined {
  const n = typeof value === 'string' && /^[0-9]{1,15}$/.test(value) ? Number(value) : value;
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 1 ? n : undefined;
}

/** A span time as nanoseconds since the epoch, or null when it is not a time. */
export function toNs(time: SpanTimeInput | undefined): bigint | null {
  let ns: bigint | null = null;
  if (typeof time === 'bigint') ns = time;
  else if (typeof time === 'string') ns = /^[0-9]{1,20}$/.test(time) ? BigInt(time) : null;
  else if (typeof time === 'number')
    ns = Number.isFinite(time) && time >= 0 ? BigInt(Math.trunc(time)) : null;
  else if (Array.isArray(time) && time.length === 2) {
    const [s, n] = time;
    if (Number.isSafeInteger(s) && Number.isSafeInteger(n) && s >= 0 && n >= 0) {
      ns = BigInt(s) * 1_000_000_000n + BigInt(n);
    }
  }
  // Beyond year 5138 is not a span time; keeping the bound lets formatNs never throw.
  return ns !== null && ns >= 0n && ns < MAX_TIME_NS ? ns : null;
}

/** Formats nanoseconds since the epoch as RFC 3339 UTC with nanosecond precision. */
export function formatNs(ns: bigint): string {
  const iso = new Date(Number(ns / 1_000_000n)).toISOString();
  const frac = (ns % 1_000_000_000n).toString().padStart(9, '0');
  return `${iso.slice(0, 19)}.${frac}Z`;
}
