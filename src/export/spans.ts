/**
 * Spans of a short-lived recording process (a Claude Code hook, `continuity snapshot`,
 * `continuity approve`) as an OTLP trace request (the OTLP/JSON shape of `src/otlp`), built by hand.
 *
 * Why not the OpenTelemetry SDK: such a process lives for milliseconds, and what it cannot
 * deliver must be spooled to a file and sent by a later run. An encoded request is exactly what
 * the spool needs; the SDK's exporters hold spans in memory and would cost ~100 ms to load. The
 * attributes come from the shared attribute codec (`src/otel/attributes.ts`), so the processor
 * and `continuity serve` read them exactly as the SDK extension writes them.
 */
import { randomBytes } from 'node:crypto';
import type { Attributes } from '@opentelemetry/api';
import {
  boundarySpanId,
  boundaryTraceId,
  sessionSpanIds as derivedSessionSpanIds,
} from '../otel/boundary-trace.js';
import { INSTRUMENTATION_SCOPE } from '../otel/semconv.js';
import { recordToAttributes } from '../otlp/attributes.js';
import type { OtlpTraceRequest } from '../otlp/types.js';

const SCOPE_VERSION = '0.1.0';

/** `service.name` of the recording commands' spans (the Claude Code hooks use `claude-code`). */
export const CLI_SERVICE_NAME = 'agent-continuity';

/** A trace and span id (lower-case hex). */
export interface SpanIds {
  traceId: string;
  spanId: string;
}

/** One span to export. */
export interface ExportSpan {
  name: string;
  ids: SpanIds;
  startNs: bigint;
  endNs: bigint;
  /** From the attribute codec: digests and opaque ids only, never a raw value. */
  attributes: Attributes;
  /**
   * The span's parent, in the same trace (the boundary's pre span); none for a root. Never a span
   * that is not itself emitted: a trace viewer would show a missing root.
   */
  parent?: SpanIds;
  links?: SpanIds[];
  /** True when the recording failed to do its job (the span's status is then an error). */
  error?: boolean;
}

/**
 * The ids of a boundary's spans: the boundary's trace (`boundaryTraceId`, see
 * `src/otel/boundary-trace.ts`) and a span id derived from the session and boundary ids, so the
 * pre span and the post span (recorded by other processes, possibly much later) share a trace and
 * the post span names the pre span as its parent without any state passed between them.
 */
export function boundarySpanIds(
  sessionId: string,
  boundaryId: string,
  phase: 'pre' | 'post',
  /** Another span of the same boundary (e.g. `approval-<seq>`, `post-<seq>`): same trace, its own span id. */
  part?: string,
): SpanIds {
  return {
    traceId: boundaryTraceId(sessionId, boundaryId),
    spanId: boundarySpanId(sessionId, boundaryId, part ?? phase),
  };
}

/**
 * Ids of a span that belongs to a session but to no boundary (an approval recorded before the
 * session's first snapshot): a trace of its own, rooted at this span, derived from the session and
 * `part`, so a resend repeats the same span.
 */
export function sessionSpanIds(sessionId: string, part: string): SpanIds {
  return derivedSessionSpanIds(sessionId, part);
}

/** Fresh random ids for a span that belongs to no boundary (activity). */
export function randomSpanIds(): SpanIds {
  return { traceId: randomBytes(16).toString('hex'), spanId: randomBytes(8).toString('hex') };
}

/** The current time in nanoseconds since the epoch. */
export function nowNs(): bigint {
  return BigInt(Date.now()) * 1_000_000n;
}

/** An RFC 3339 time as nanoseconds since the epoch (millisecond precision), or now when it does not parse. */
export function timeNs(rfc3339: string): bigint {
  const ms = Date.parse(rfc3339);
  return Number.isFinite(ms) ? BigInt(ms) * 1_000_000n : nowNs();
}

/**
 * Builds the trace request for `spans` (OTLP/JSON shape: hex ids, int64 as strings), with
 * `service.name` = `serviceName` on the resource.
 */
export function buildTraceRequest(spans: readonly ExportSpan[], serviceName: string): OtlpTraceRequest {
  return {
    resourceSpans: [
      {
        resource: {
          attributes: recordToAttributes({
            'service.name': serviceName,
            'telemetry.sdk.name': 'agent-continuity',
          }),
          droppedAttributesCount: 0,
          entityRefs: [],
        },
        scopeSpans: [
          {
            scope: {
              name: INSTRUMENTATION_SCOPE,
              version: SCOPE_VERSION,
              attributes: [],
              droppedAttributesCount: 0,
            },
            spans: spans.map((s) => ({
              traceId: s.ids.traceId,
              spanId: s.ids.spanId,
              traceState: '',
              // A parent in another trace would be a missing parent in both: the span is a root then.
              parentSpanId: s.parent?.traceId === s.ids.traceId ? s.parent.spanId : '',
              flags: 1,
              name: s.name,
              kind: 1,
              startTimeUnixNano: String(s.startNs),
              endTimeUnixNano: String(s.endNs),
              attributes: recordToAttributes(s.attributes),
              droppedAttributesCount: 0,
              events: [],
              droppedEventsCount: 0,
              links: (s.links ?? []).map((l) => ({
                traceId: l.traceId,
                spanId: l.spanId,
                traceState: '',
                attributes: [],
                droppedAttributesCount: 0,
                flags: 1,
              })),
              droppedLinksCount: 0,
              status: { message: '', code: s.error ? 2 : 0 },
            })),
            schemaUrl: '',
          },
        ],
        schemaUrl: '',
      },
    ],
  } as OtlpTraceRequest;
}
