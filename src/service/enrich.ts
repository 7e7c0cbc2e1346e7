/**
 * What the service does to a decoded OTLP request, as pure functions over plain objects:
 * - {@link inspectRequest}: checks span limits, finds compaction spans and reads them with the
 *   attribute codec; spans that cannot be accepted are removed and named (OTLP partial success);
 * - {@link enrichPostSpans}: writes each resolution onto its post span (state attributes and a
 *   link to the pre span) when the post span is in this request;
 * - {@link checkResourceSpans}: builds `continuity.check` spans for resolutions without a
 *   post span in hand (post window expired, evicted, orphan post, late pre).
 * Everything else is forwarded unchanged.
 */
import { randomBytes } from 'node:crypto';
import type { Attributes } from '@opentelemetry/api';
import type { Resolution } from '../correlate/types.js';
import { OPAQUE_ID_PATTERN } from '../decision/model.js';
import {
  type CompactionAttributeSource,
  type CompactionEvent,
  checkAttributes,
  classificationAttributes,
  isCompactionSpanName,
  readCompactionEvent,
  readCompactionSpan,
  readSessionId,
} from '../otel/attributes.js';
import {
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_SESSION_ID,
  SERVICE_REJECT_REASONS,
  SPAN_CONTINUITY_CHECK,
} from '../otel/semconv.js';
import type {
  OtlpAnyValue,
  OtlpKeyValue,
  OtlpResourceSpans,
  OtlpSpan,
  OtlpTraceRequest,
} from '../otlp/index.js';
import { attributesToRecord, recordToAttributes, upsertAttributes } from '../otlp/index.js';

/** Per-span limits (from `limits.*` in the configuration). */
export interface SpanLimits {
  maxAttributeValueLength: number;
  maxAttributesPerSpan: number;
}

/**
 * What {@link inspectSpans} reads of a span: a decoded span (its KeyValue list), or one read from
 * its bytes (`span-wire.ts`: the attributes the codec reads, as API values, and known to be within
 * limits).
 */
export type InspectableSpan = Pick<OtlpSpan, 'name' | 'traceId' | 'spanId' | 'startTimeUnixNano'> &
  (
    | { attributes: readonly OtlpKeyValue[]; source?: undefined; withinLimits?: undefined }
    | { source: CompactionAttributeSource; withinLimits: true; attributes?: undefined }
  );

/** A compaction span found in a request, with the event the attribute codec read from it. */
export interface FoundEvent<S extends InspectableSpan = OtlpSpan> {
  event: CompactionEvent;
  span: S;
}

/** The result of {@link inspectRequest}. */
export interface Inspection {
  /** The request without the rejected spans (the same object when none were rejected). */
  request: OtlpTraceRequest;
  /** Spans accepted. */
  accepted: number;
  /** Spans rejected, by reason (a `SERVICE_REJECT_REASONS` value). */
  rejectedByReason: Map<string, number>;
  /** Up to a few messages naming the rejected spans, for the partial-success `error_message`. */
  messages: string[];
  /** Compaction events in request order. */
  events: FoundEvent[];
}

/** How many rejected spans are described in one partial-success message. */
const MAX_MESSAGES = 3;

function longString(value: OtlpAnyValue | undefined, max: number): number {
  if (value === undefined) return 0;
  if (value.stringValue !== undefined) return value.stringValue.length > max ? value.stringValue.length : 0;
  if (value.bytesValue !== undefined) return value.bytesValue.length > max ? value.bytesValue.length : 0;
  if (value.arrayValue !== undefined) {
    for (const v of value.arrayValue.values) {
      const n = longString(v, max);
      if (n > 0) return n;
    }
  }
  if (value.kvlistValue !== undefined) {
    for (const kv of value.kvlistValue.values) {
      const n = longString(kv.value, max);
      if (n > 0) return n;
    }
  }
  return 0;
}

/** Why a span is over the limits, or undefined. Never quotes a value, only its key and length. */
function limitProblem(attributes: readonly OtlpKeyValue[], limits: SpanLimits): string | undefined {
  if (attributes.length > limits.maxAttributesPerSpan) {
    return `${attributes.length} attributes, more than limits.maxAttributesPerSpan ${limits.maxAttributesPerSpan}`;
  }
  for (const kv of attributes) {
    const n = longString(kv.value, limits.maxAttributeValueLength);
    if (n > 0) {
      return `attribute ${JSON.stringify(kv.key.slice(0, 100))} is ${n} characters long, more than limits.maxAttributeValueLength ${limits.maxAttributeValueLength}`;
    }
  }
  return undefined;
}

function hasSessionKey(attributes: readonly OtlpKeyValue[]): boolean {
  for (const kv of attributes) {
    if (kv.key !== ATTR_SESSION_ID && kv.key !== ATTR_GEN_AI_CONVERSATION_ID) continue;
    const v = kv.value?.stringValue;
    if (v !== undefined && OPAQUE_ID_PATTERN.test(v)) return true;
  }
  return false;
}

/** What {@link inspectSpans} makes of one span. */
export interface SpanToInspect<S extends InspectableSpan = OtlpSpan> {
  /** The span's path in the request, for messages (`resourceSpans[0].scopeSpans[1].spans[4]`). */
  path: string;
  span: S;
}

/** The result of {@link inspectSpans}. */
export interface SpansInspection<S extends InspectableSpan = OtlpSpan> {
  /** Indexes (into the input) of the spans refused. */
  rejected: Set<number>;
  rejectedByReason: Map<string, number>;
  messages: string[];
  /** Compaction events in input order, with the input index of their span. */
  events: Array<FoundEvent<S> & { index: number }>;
}

/** A span reference for the correlator, only when both ids are well-formed (empty ids pass the wire). */
function spanRef(span: InspectableSpan): { traceId: string; spanId: string } | undefined {
  return span.traceId.length === 32 && span.spanId.length === 16
    ? { traceId: span.traceId, spanId: span.spanId }
    : undefined;
}

/**
 * Reads compaction spans with the attribute codec, and refuses the ones the service cannot use:
 * over the limits (which apply to compaction spans only: the service parses their attributes),
 * or without a usable session key. Ordinary spans are never refused.
 */
export function inspectSpans<S extends InspectableSpan>(
  items: readonly SpanToInspect<S>[],
  limits: SpanLimits,
): SpansInspection<S> {
  const rejected = new Set<number>();
  const rejectedByReason = new Map<string, number>();
  const messages: string[] = [];
  const events: SpansInspection<S>['events'] = [];
  const reject = (index: number, reason: string, why: string) => {
    rejected.add(index);
    rejectedByReason.set(reason, (rejectedByReason.get(reason) ?? 0) + 1);
    if (messages.length < MAX_MESSAGES) {
      const { path, span } = items[index]!;
      messages.push(`${path} (${JSON.stringify(span.name.slice(0, 100))}): ${why}`);
    }
  };
  items.forEach(({ span }, index) => {
    if (!isCompactionSpanName(span.name)) return;
    const problem = span.withinLimits ? undefined : limitProblem(span.attributes, limits);
    if (problem !== undefined) {
      reject(index, SERVICE_REJECT_REASONS.attributeLimit, problem);
      return;
    }
    const event = span.source
      ? readCompactionEvent(span.name, span.source, span.startTimeUnixNano, spanRef(span))
      : readCompactionSpan(
          span.name,
          attributesToRecord(span.attributes),
          span.startTimeUnixNano,
          spanRef(span),
        );
    if (event !== undefined) events.push({ event, span, index });
    else if (!(span.source ? readSessionId(span.source) !== undefined : hasSessionKey(span.attributes))) {
      reject(
        index,
        SERVICE_REJECT_REASONS.missingSessionKey,
        `a compaction span needs a session key: set ${ATTR_SESSION_ID} (or ${ATTR_GEN_AI_CONVERSATION_ID}) to an opaque id`,
      );
    }
  });
  return { rejected, rejectedByReason, messages, events };
}

/**
 * Walks every span of a decoded request once: compaction spans are read into events (and refused
 * when unusable, see {@link inspectSpans}); ordinary spans cost one name check.
 */
export function inspectRequest(request: OtlpTraceRequest, limits: SpanLimits): Inspection {
  const items: SpanToInspect[] = [];
  request.resourceSpans.forEach((rs, r) => {
    rs.scopeSpans.forEach((ss, s) => {
      ss.spans.forEach((span, i) => {
        items.push({ path: `resourceSpans[${r}].scopeSpans[${s}].spans[${i}]`, span });
      });
    });
  });
  const found = inspectSpans(items, limits);
  const accepted = items.length - found.rejected.size;
  const base = {
    accepted,
    rejectedByReason: found.rejectedByReason,
    messages: found.messages,
    events: found.events.map(({ event, span }) => ({ event, span })),
  };
  if (found.rejected.size === 0) return { request, ...base };
  // Rebuild only the lists that lost a span; the rest is shared with the decoded request.
  const refused = new Set([...found.rejected].map((i) => items[i]!.span));
  const filtered: OtlpTraceRequest = {
    resourceSpans: request.resourceSpans.map((rs) => ({
      ...rs,
      scopeSpans: rs.scopeSpans.map((ss) => ({ ...ss, spans: ss.spans.filter((sp) => !refused.has(sp)) })),
    })),
  };
  return { request: filtered, ...base };
}

/**
 * The partial-success message for an inspection with rejected spans: how many, why, and the
 * first few span paths (never an attribute value).
 */
export function rejectionMessage(inspection: Pick<Inspection, 'rejectedByReason' | 'messages'>): string {
  const total = [...inspection.rejectedByReason.values()].reduce((a, b) => a + b, 0);
  const reasons = [...inspection.rejectedByReason.entries()].map(([r, n]) => `${n} ${r}`).join(', ');
  const more = total > inspection.messages.length ? `; and ${total - inspection.messages.length} more` : '';
  return `${total} span(s) rejected (${reasons}): ${inspection.messages.join('; ')}${more}`;
}

/** What a resolution writes onto its post span: the continuity attributes and links to the pre spans. */
export interface PostEnrichment<F> {
  /** The event (and its span) of the post span in this request. */
  found: F;
  attributes: Attributes;
  /** Spans to link to (the pre span), when not linked already. */
  links: Array<{ traceId: string; spanId: string }>;
}

/**
 * Which resolutions are written onto a post span in `events` (the post observed in this request),
 * one {@link PostEnrichment} per span (several resolutions on one span merge, later keys winning);
 * `rest` are the resolutions that still need a `continuity.check` span.
 */
export function planPostEnrichment<F extends FoundEvent<InspectableSpan>>(
  events: readonly F[],
  resolutions: readonly Resolution[],
): { edits: Array<PostEnrichment<F>>; rest: Resolution[] } {
  const rest: Resolution[] = [];
  const edits = new Map<F, PostEnrichment<F>>();
  for (const r of resolutions) {
    const found =
      r.resolvedAtPost && r.postSpan ? findEvent(events, r.postSpan.traceId, r.postSpan.spanId) : undefined;
    if (!found) {
      rest.push(r);
      continue;
    }
    const attributes = classificationAttributes(r.classification, r.activity);
    const edit = edits.get(found);
    if (edit) Object.assign(edit.attributes, attributes);
    else edits.set(found, { found, attributes, links: [] });
    if (r.preSpan) edits.get(found)!.links.push({ traceId: r.preSpan.traceId, spanId: r.preSpan.spanId });
  }
  return { edits: [...edits.values()], rest };
}

/** Applies a {@link PostEnrichment} to a decoded span (the attributes upserted, missing links added). */
export function applyPostEnrichment(
  span: OtlpSpan,
  edit: Pick<PostEnrichment<unknown>, 'attributes' | 'links'>,
): void {
  span.attributes = upsertAttributes(span.attributes, edit.attributes);
  for (const to of edit.links) {
    if (span.links.some((l) => l.spanId === to.spanId && l.traceId === to.traceId)) continue;
    span.links = [
      ...span.links,
      {
        traceId: to.traceId,
        spanId: to.spanId,
        traceState: '',
        attributes: [],
        droppedAttributesCount: 0,
        flags: 0,
      },
    ];
  }
}

/**
 * Writes each resolution onto its post span when that span is in `events` (the post observed in
 * this request): the continuity attributes and a link to the pre span. Returns the resolutions
 * that still need a `continuity.check` span.
 */
export function enrichPostSpans(
  events: readonly FoundEvent[],
  resolutions: readonly Resolution[],
): Resolution[] {
  const { edits, rest } = planPostEnrichment(events, resolutions);
  for (const edit of edits) applyPostEnrichment(edit.found.span, edit);
  return rest;
}

function findEvent<F extends FoundEvent<InspectableSpan>>(
  events: readonly F[],
  traceId: string,
  spanId: string,
): F | undefined {
  for (const e of events) if (e.span.spanId === spanId && e.span.traceId === traceId) return e;
  return undefined;
}

/** Who emits the check spans: the service's resource attributes and instrumentation scope. */
export interface CheckSpanSource {
  resource: Readonly<Record<string, string>>;
  scopeName: string;
  scopeVersion: string;
}

/**
 * One ResourceSpans holding a `continuity.check` span per resolution: in the boundary's trace, a
 * child of the pre span (of the post span when there was no pre), linked to the pre and post
 * spans, with the boundary identity and the continuity attributes. Undefined when there is
 * nothing to emit.
 */
export function checkResourceSpans(
  resolutions: readonly Resolution[],
  nowMs: number,
  source: CheckSpanSource,
): OtlpResourceSpans | undefined {
  if (resolutions.length === 0) return undefined;
  const nowNs = (BigInt(Math.floor(nowMs)) * 1_000_000n).toString();
  const spans: OtlpSpan[] = resolutions.map((r) => {
    const links = [r.preSpan, r.postSpan]
      .filter((s): s is NonNullable<typeof s> => s !== null)
      .map((s) => ({
        traceId: s.traceId,
        spanId: s.spanId,
        traceState: '',
        attributes: [],
        droppedAttributesCount: 0,
        flags: 0,
      }));
    // In the boundary's trace (see boundary-trace.ts): a child of a span this instance received
    // (the pre, else the post), never of a span no one emits; the root of its own trace when
    // neither had usable ids.
    const parent = r.preSpan ?? r.postSpan;
    return {
      traceId: parent?.traceId ?? randomBytes(16).toString('hex'),
      spanId: randomBytes(8).toString('hex'),
      traceState: '',
      parentSpanId: parent?.spanId ?? '',
      flags: 0,
      name: SPAN_CONTINUITY_CHECK,
      kind: 1, // INTERNAL
      startTimeUnixNano: nowNs,
      endTimeUnixNano: nowNs,
      attributes: recordToAttributes(
        checkAttributes(
          { sessionId: r.sessionId, boundaryId: r.boundaryId, runtime: r.runtime, trigger: r.trigger },
          r.classification,
          r.activity,
        ),
      ),
      droppedAttributesCount: 0,
      events: [],
      droppedEventsCount: 0,
      links,
      droppedLinksCount: 0,
    };
  });
  return {
    resource: {
      attributes: recordToAttributes({ ...source.resource }),
      droppedAttributesCount: 0,
      entityRefs: [],
    },
    scopeSpans: [
      {
        scope: {
          name: source.scopeName,
          version: source.scopeVersion,
          attributes: [],
          droppedAttributesCount: 0,
        },
        spans,
        schemaUrl: '',
      },
    ],
    schemaUrl: '',
  };
}
