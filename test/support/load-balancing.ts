/**
 * The Collector's load-balancing exporter (`load_balancing`, contrib) with its default
 * `routing_key: traceID`, as its source does it (exporter/loadbalancingexporter:
 * consistent_hashing.go, trace_exporter.go; pkg/batchpersignal SplitTraces), so a test can feed
 * several `continuity serve` instances exactly the spans the gateway would send each one:
 *
 * - the request is split by trace id: one request per trace, each with copies of the resource and
 *   scope its spans came with;
 * - each trace goes to the endpoint the hash ring names for the 16 trace-id bytes: CRC-32 (IEEE)
 *   of the bytes modulo 36 000, then the first ring position at or after it (wrapping); the ring
 *   holds 100 positions per endpoint, CRC-32 of the endpoint name followed by one byte `i`,
 *   modulo 36 000, a position already taken skipped.
 */
import { crc32 } from 'node:zlib';
import type { OtlpResourceSpans, OtlpTraceRequest } from '../../src/otlp/types.js';

const MAX_POSITIONS = 36_000;
const WEIGHT = 100;

/** The consistent hash ring of the load-balancing exporter. */
export class HashRing {
  private readonly _items: Array<{ pos: number; endpoint: string }> = [];

  constructor(endpoints: readonly string[]) {
    const taken = new Set<number>();
    for (const endpoint of endpoints) {
      for (let i = 0; i < WEIGHT; i++) {
        const pos = crc32(Buffer.concat([Buffer.from(endpoint), Buffer.from([i])])) % MAX_POSITIONS;
        if (taken.has(pos)) continue;
        taken.add(pos);
        this._items.push({ pos, endpoint });
      }
    }
    this._items.sort((a, b) => a.pos - b.pos);
  }

  /** The endpoint for a routing identifier (for traceID routing: the 16 trace-id bytes). */
  endpointFor(identifier: Uint8Array): string {
    const pos = crc32(identifier) % MAX_POSITIONS;
    for (const item of this._items) if (item.pos >= pos) return item.endpoint;
    return this._items[0]!.endpoint;
  }
}

/** `batchpersignal.SplitTraces`: one request per trace id, resource and scope copied. */
export function splitTraces(request: OtlpTraceRequest): Map<string, OtlpTraceRequest> {
  const out = new Map<string, OtlpTraceRequest>();
  for (const rs of request.resourceSpans) {
    for (const ss of rs.scopeSpans) {
      for (const span of ss.spans) {
        let trace = out.get(span.traceId);
        if (!trace) {
          trace = { resourceSpans: [] };
          out.set(span.traceId, trace);
        }
        let target: OtlpResourceSpans | undefined = trace.resourceSpans.find(
          (r) => r.resource === rs.resource,
        );
        if (!target) {
          target = { ...rs, scopeSpans: [] };
          trace.resourceSpans.push(target);
        }
        let scope = target.scopeSpans.find((s) => s.scope === ss.scope);
        if (!scope) {
          scope = { ...ss, spans: [] };
          target.scopeSpans.push(scope);
        }
        scope.spans.push(span);
      }
    }
  }
  return out;
}

/**
 * Partitions a request as the exporter does: endpoint → the requests (one per trace) it would be
 * sent.
 */
export function partitionByTraceId(
  request: OtlpTraceRequest,
  ring: HashRing,
): Map<string, OtlpTraceRequest[]> {
  const out = new Map<string, OtlpTraceRequest[]>();
  for (const [traceId, trace] of splitTraces(request)) {
    const endpoint = ring.endpointFor(Buffer.from(traceId, 'hex'));
    const list = out.get(endpoint) ?? [];
    list.push(trace);
    out.set(endpoint, list);
  }
  return out;
}
