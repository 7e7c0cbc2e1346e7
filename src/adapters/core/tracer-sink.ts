/**
 * Spans through the application's own tracer provider, for the in-process adapters (the Claude
 * Agent SDK's, the framework integrations'). Their callbacks run in the application's process, so when the application registered a provider (NodeSDK, or
 * `trace.setGlobalTracerProvider`) the adapter's spans go where its other spans go, through its
 * processors (a `ContinuityProcessor` among them) and exporters, exactly as the SDK extension's
 * (`createContinuity`) do. Without one they go over OTLP like the hooks' (the core's exporter).
 *
 * The attributes are the shared codec's (digests and opaque ids only). The span ids are the
 * provider's own: a span made through a provider cannot take the derived ids the OTLP path uses,
 * so the boundary's trace is kept by remembering the pre span's real context: the boundary's later
 * spans (post, approvals) are its children and the post links to it. Placement and the links to
 * the agent's active span, both ways, are the SDK extension's (`src/otel/placement.ts`).
 *
 * `@opentelemetry/api` is imported on the first span, never at module load: an application
 * without OpenTelemetry never needs it.
 */
import type * as Api from '@opentelemetry/api';
import { startPlacedSpan } from '../../otel/placement.js';
import { INSTRUMENTATION_SCOPE } from '../../otel/semconv.js';
import type { SpanSink } from './config.js';

const SCOPE_VERSION = '0.1.0';

/**
 * An OpenTelemetry tracer provider (the API's `TracerProvider`), typed structurally: this
 * package's own `@opentelemetry/api` is loaded only when a span is made.
 */
export interface TracerProviderLike {
  getTracer(name: string, version?: string): unknown;
}

/** Span contexts by derived span id: a pre span's is its boundary's later spans' parent and link. */
const MAX_REMEMBERED = 1000;

let api: Promise<typeof Api | undefined> | undefined;

/** The OpenTelemetry API, or `undefined` when it is not installed. */
function loadApi(): Promise<typeof Api | undefined> {
  api ??= import('@opentelemetry/api').then(
    (m) => m,
    () => undefined,
  );
  return api;
}

/**
 * True when `provider` (the API's global) delegates to a provider someone registered. The global
 * is a `ProxyTracerProvider` whether or not anything was registered; without a registration its
 * delegate is the API's no-op provider. Duck-typed: the application's copy of the API may differ
 * from this package's.
 */
export function isRegisteredProvider(provider: unknown): boolean {
  const p = provider as { getDelegate?: () => unknown } | undefined;
  const delegate = typeof p?.getDelegate === 'function' ? p.getDelegate() : p;
  const name = (delegate as { constructor?: { name?: string } } | undefined)?.constructor?.name;
  return delegate !== undefined && delegate !== null && name !== 'NoopTracerProvider';
}

function hrTime(ns: bigint): Api.HrTime {
  return [Number(ns / 1_000_000_000n), Number(ns % 1_000_000_000n)];
}

/**
 * A {@link SpanSink} writing through `explicit`, else the global provider when one is registered;
 * it declines (the core exports over OTLP) when neither exists or the API is not installed.
 */
export function tracerSink(explicit: TracerProviderLike | undefined): SpanSink {
  const contexts = new Map<string, Api.SpanContext>();
  return async (spans) => {
    const otel = await loadApi();
    if (!otel) return false;
    const global = otel.trace.getTracerProvider();
    const provider =
      (explicit as Api.TracerProvider | undefined) ?? (isRegisteredProvider(global) ? global : undefined);
    if (!provider) return false;
    const tracer = provider.getTracer(INSTRUMENTATION_SCOPE, SCOPE_VERSION);
    for (const s of spans) {
      const links = (s.links ?? [])
        .map((l) => contexts.get(l.spanId))
        .filter((c): c is Api.SpanContext => c !== undefined)
        .map((context) => ({ context }));
      const home = s.parent ? contexts.get(s.parent.spanId) : undefined;
      const span = startPlacedSpan(
        otel,
        tracer,
        s.name,
        { attributes: s.attributes, startTime: hrTime(s.startNs), links },
        // The derived ids are the fallback parent: a pre span's own, else its pre span's.
        { ...(home && { home }), fallback: s.parent ?? s.ids },
      );
      if (s.error) span.setStatus({ code: otel.SpanStatusCode.ERROR });
      span.end(hrTime(s.endNs));
      contexts.delete(s.ids.spanId);
      contexts.set(s.ids.spanId, span.spanContext());
      if (contexts.size > MAX_REMEMBERED) contexts.delete(contexts.keys().next().value!);
    }
    return true;
  };
}
