/**
 * Options of the {@link ContinuityProcessor}, and the span shapes it reads. (The SDK extension's
 * options live in `types.ts`.)
 *
 * The span shapes are structural subsets of the SDK's `Span` and `ReadableSpan`, built from
 * `@opentelemetry/api` types only: the processor works with sdk-trace-base 2.x and sdk-trace 3.x
 * (whose classes are identical in what is used here), and neither is needed to use its types.
 */
import type {
  Attributes,
  HrTime,
  Link,
  MeterProvider,
  SpanContext,
  TracerProvider,
} from '@opentelemetry/api';
import type { CorrelatorOptions, Resolution } from '../correlate/types.js';

/** Options of the {@link ContinuityProcessor}. Bad values are clamped with `diag.warn`, never thrown. */
export interface ContinuityProcessorOptions extends CorrelatorOptions {
  /**
   * Where the continuity metrics go. Default: the global meter provider, looked up when first
   * needed, so a processor built before `NodeSDK.start()` still records.
   */
  meterProvider?: MeterProvider;
  /**
   * Where `continuity.check` spans go. Default: the global tracer provider (NodeSDK registers
   * it). With a provider you did not register globally, call `processor.setTracerProvider(provider)`.
   */
  tracerProvider?: TracerProvider;
  /**
   * How long a post that ends before its pre is held, in milliseconds. Default 0 for the
   * in-process processor: the SDK hands spans over in the order they end, so a post without a
   * pending pre really has none, and the result is written on the post span itself. Raise it
   * only if your pre span encloses the post span (the result then goes on a check span).
   */
  reorderGraceMs?: number;
  /**
   * How often pending boundaries are checked against their post windows, in milliseconds. One
   * unref'd interval for the whole processor (never one per boundary), running only while
   * something is pending. Default 1 000; at least 10.
   */
  checkIntervalMs?: number;
  /** Most series of the `continuity.needs_human` gauge. Default 1 000. */
  maxNeedsHumanSeries?: number;
  /**
   * Called with every resolved boundary after the span attributes and metrics are written (for a
   * ledger, a log, a gate). Errors it throws go to `diag.error`.
   */
  onResolution?: (resolution: Resolution) => void;
  /** The clock in milliseconds since the epoch. Default `Date.now`. Meant for tests. */
  clock?: () => number;
}

/** What the processor reads from an ended span (the SDK's `ReadableSpan` has these and more). */
export interface EndedSpan {
  readonly name: string;
  readonly attributes: Attributes;
  readonly startTime: HrTime;
  spanContext(): SpanContext;
}

/** What the processor reads and writes on a span that is ending (the SDK's `Span` has these). */
export interface EndingSpan extends EndedSpan {
  setAttributes(attributes: Attributes): unknown;
  addLink(link: Link): unknown;
}
