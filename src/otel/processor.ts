/**
 * `ContinuityProcessor`: a span processor that correlates the compaction spans of each session
 * into a continuity state, writes it on the post span, and records the continuity metrics.
 */

import type { Context } from '@opentelemetry/api';
import {
  diag,
  type Link,
  type MeterProvider,
  ROOT_CONTEXT,
  type SpanContext,
  SpanKind,
  TraceFlags,
  type Tracer,
  type TracerProvider,
  trace,
} from '@opentelemetry/api';
import { Correlator } from '../correlate/correlator.js';
import type { Resolution } from '../correlate/types.js';
import {
  checkAttributes,
  classificationAttributes,
  isCompactionSpanName,
  readCompactionSpan,
  type SpanRef,
} from './attributes.js';
import { rememberEndedState } from './ended-state.js';
import { ContinuityMetrics } from './metrics.js';
import type { ContinuityProcessorOptions, EndedSpan, EndingSpan } from './processor-types.js';
import { INSTRUMENTATION_SCOPE, SPAN_CONTINUITY_CHECK } from './semconv.js';

/** Defaults of {@link ContinuityProcessorOptions} that differ from the correlator's. */
export const PROCESSOR_DEFAULTS = Object.freeze({ reorderGraceMs: 0, checkIntervalMs: 1_000 });

/** The oldest SDK releases that call `SpanProcessor.onEnding`, where the post span is still writable. */
export const MIN_SDK_WITH_ON_ENDING = Object.freeze({
  sdkTraceBase: '2.3.0',
  sdkNode: '0.209.0',
});

/**
 * Said once when the tracer provider has no span processor but continuity ones: nothing exports.
 * The usual cause: NodeSDK ignores `traceExporter` when `spanProcessors` is given.
 */
export const ALONE_WARNING =
  'ContinuityProcessor: it is the only span processor of its tracer provider, so no span is exported. NodeSDK ignores traceExporter when spanProcessors is given: write spanProcessors: continuityProcessors({ exporter }) (from agent-continuity) instead of traceExporter, or add your BatchSpanProcessor after the ContinuityProcessor';

/**
 * Whether the provider that started `span` hands spans to continuity processors only. Read from
 * the SDK's span (sdk-trace-base 2.x and sdk-trace 3.x keep the provider's processors as
 * `span._spanProcessor._spanProcessors`); `false` whenever that shape is not there.
 */
function isAlone(span: object): boolean {
  const multi = (span as { _spanProcessor?: unknown })._spanProcessor;
  const list =
    typeof multi === 'object' && multi !== null
      ? (multi as { _spanProcessors?: unknown })._spanProcessors
      : undefined;
  return Array.isArray(list) && list.length > 0 && list.every(isContinuityProcessor);
}

/** Marks a ContinuityProcessor of any copy of this package (the ES module and the CommonJS build). */
const PROCESSOR_BRAND = Symbol.for('agent-continuity.processor');

function isContinuityProcessor(p: unknown): boolean {
  return typeof p === 'object' && p !== null && PROCESSOR_BRAND in p;
}

/** Errors never reach the agent: they go to the diagnostic logger (what the SDK's default handler does). */
function report(err: unknown): void {
  diag.error('ContinuityProcessor: unexpected error', err);
}

/**
 * Correlates `continuity.compaction.pre` / `continuity.compaction.post` / `continuity.approval` /
 * `continuity.activity` spans per session (`session.id`, else `gen_ai.conversation.id`) with the core
 * classifier, so the library, the CLI and the processor agree on every case.
 *
 * - `onEnding` (sdk-trace-base >= 2.3; the span is still writable there) writes
 *   `continuity.state|action|reason|primary_decision`, every
 *   `continuity.decision.<name>.verdict` and `continuity.activity.state` onto the post span, and
 *   adds a link to the pre span with `span.addLink` (allowed until the span has ended).
 * - A boundary that resolves without a writable post span (post window expired, superseded by a
 *   later pre, evicted, drained at shutdown, post paired after a late pre) gets a
 *   `continuity.check` span: a child of the pre span (of the post span when there was no pre), so
 *   it sits in the boundary's trace, linked to the pre and post spans, carrying the same attributes. It is created through
 *   the tracer provider and goes through its span processors like any span.
 * - Ordinary spans cost one string check in `onEnding`; `onStart` does nothing, `onEnd` one
 *   boolean check.
 * - An SDK that never calls `onEnding` (sdk-trace-base < 2.3, sdk-node < 0.209) gets one
 *   `diag.warn` naming the minimum version, and a fallback: compaction spans are correlated in
 *   `onEnd`, and the state goes on a `continuity.check` span (the post span is read-only there).
 *
 * Register it BEFORE the batch processor: `shutdown()` and `forceFlush()` emit check spans for
 * what they resolve, and the batch processor must still accept them.
 *
 * Never put a raw decision value, an HMAC key, a prompt or a transcript into a span attribute:
 * this processor reads and writes digests and identifiers only, and it never throws into the
 * agent (errors go to `diag.error`).
 *
 * It needs nothing but `@opentelemetry/api` at run time, and its types are structural: it fits
 * the `SpanProcessor` of sdk-trace-base 2.x and of sdk-trace 3.x alike.
 */
export class ContinuityProcessor {
  /** The brand `isAlone` recognises, whichever copy of the package built this processor. */
  readonly [PROCESSOR_BRAND] = true;
  private readonly _correlator: Correlator;
  private readonly _metrics: ContinuityMetrics;
  private readonly _clock: () => number;
  private readonly _checkIntervalMs: number;
  private readonly _onResolution: ((r: Resolution) => void) | undefined;
  private _tracerProvider: TracerProvider | undefined;
  private _tracer: Tracer | undefined;
  private _timer: ReturnType<typeof setInterval> | undefined;
  private _shutdown: Promise<void> | undefined;
  private _warnedUnrecorded = false;
  /** Set by the first `onEnding` call: the SDK is new enough, `onEnd` has nothing to do. */
  private _sdkCallsOnEnding = false;
  private _warnedNoOnEnding = false;
  /** Set by the first `onStart`: whether this processor shares its provider was checked. */
  private _checkedAlone = false;

  /** Builds the processor; nothing is looked up from the global API until it is needed. */
  constructor(options: ContinuityProcessorOptions = {}) {
    this._correlator = new Correlator({
      ...options,
      reorderGraceMs: options.reorderGraceMs ?? PROCESSOR_DEFAULTS.reorderGraceMs,
    });
    for (const w of this._correlator.warnings) diag.warn(`ContinuityProcessor: ${w}`);
    this._metrics = new ContinuityMetrics(this._correlator, {
      ...(options.meterProvider && { meterProvider: options.meterProvider }),
      ...(options.maxNeedsHumanSeries !== undefined && { maxNeedsHumanSeries: options.maxNeedsHumanSeries }),
    });
    this._clock = options.clock ?? Date.now;
    let interval = options.checkIntervalMs ?? PROCESSOR_DEFAULTS.checkIntervalMs;
    if (!Number.isFinite(interval) || interval < 10) {
      diag.warn(`ContinuityProcessor: checkIntervalMs ${interval} is below 10; using 10`);
      interval = 10;
    }
    this._checkIntervalMs = interval;
    this._onResolution = options.onResolution;
    this._tracerProvider = options.tracerProvider;
  }

  /** Sends `continuity.check` spans through this provider from now on. */
  setTracerProvider(tracerProvider: TracerProvider): void {
    this._tracerProvider = tracerProvider;
    this._tracer = undefined;
  }

  /** Records the metrics through this provider from now on. */
  setMeterProvider(meterProvider: MeterProvider): void {
    this._metrics.setMeterProvider(meterProvider);
  }

  /** Boundaries waiting for their post observation. */
  get pendingCount(): number {
    return this._correlator.pendingCount;
  }

  /** The correlator's self-observability counters (evictions, duplicates, …). */
  get stats() {
    return this._correlator.stats;
  }

  /**
   * Nothing for the span itself: compaction attributes are often set after start, so they are read
   * at the end. The first call checks that this processor is not its provider's only one.
   */
  onStart(span: EndingSpan, _parentContext: Context): void {
    if (this._checkedAlone) return;
    this._checkedAlone = true;
    try {
      if (isAlone(span)) diag.warn(ALONE_WARNING);
    } catch (err) {
      report(err);
    }
  }

  /** Reads compaction spans and writes the result onto a post span while it is still writable. */
  onEnding(span: EndingSpan): void {
    // The hot path for every ordinary span: one store and one string check, nothing else.
    this._sdkCallsOnEnding = true;
    if (!isCompactionSpanName(span.name) || this._shutdown) return;
    try {
      this._observe(span, span);
    } catch (err) {
      report(err);
    }
  }

  /**
   * Nothing on an SDK that calls `onEnding` (it always does so before `onEnd`). On an older SDK,
   * correlates the compaction span here, with the results on `continuity.check` spans.
   */
  onEnd(span: EndedSpan): void {
    if (this._sdkCallsOnEnding || !isCompactionSpanName(span.name) || this._shutdown) return;
    if (!this._warnedNoOnEnding) {
      this._warnedNoOnEnding = true;
      diag.warn(
        `ContinuityProcessor: this OpenTelemetry SDK does not call SpanProcessor.onEnding (it needs @opentelemetry/sdk-trace-base >= ${MIN_SDK_WITH_ON_ENDING.sdkTraceBase}, @opentelemetry/sdk-node >= ${MIN_SDK_WITH_ON_ENDING.sdkNode}, or @opentelemetry/sdk-trace 3.x); the continuity state goes on continuity.check spans instead of the post spans`,
      );
    }
    try {
      this._observe(span, undefined);
    } catch (err) {
      report(err);
    }
  }

  /** Resolves boundaries whose post window has passed (check spans, metrics). Safe after shutdown. */
  forceFlush(): Promise<void> {
    if (this._shutdown) return Promise.resolve();
    try {
      // No instruments are created here: a flush of a processor that never saw a compaction
      // span gives the metric reader nothing to export.
      this._publish(this._correlator.expire(this._clock()));
    } catch (err) {
      report(err);
    }
    return Promise.resolve();
  }

  /**
   * Resolves everything still pending as `unverified` (check spans, metrics), stops the interval.
   * Safe to call twice: the second call returns the first call's promise.
   */
  shutdown(): Promise<void> {
    if (this._shutdown) return this._shutdown;
    try {
      this._stopTimer();
      // No instruments are created here just to be observed: NodeSDK without `metricReaders`
      // adds an OTLP reader whose final export would retry an absent collector for seconds.
      // Whatever resolves below records (and so creates them) as usual.
      const now = this._clock();
      // Expired boundaries keep their precise cause; the rest resolve as drained.
      this._publish([...this._correlator.expire(now), ...this._correlator.drain()]);
    } catch (err) {
      report(err);
    }
    this._shutdown = Promise.resolve();
    return this._shutdown;
  }

  /** `writable` is the span itself while it ends (onEnding), undefined once it has ended (onEnd). */
  private _observe(span: EndedSpan, writable: EndingSpan | undefined): void {
    const sc = span.spanContext();
    const event = readCompactionSpan(span.name, span.attributes, span.startTime, {
      traceId: sc.traceId,
      spanId: sc.spanId,
    });
    if (!event) {
      diag.debug(`ContinuityProcessor: ${span.name} without a usable session.id / gen_ai.conversation.id`);
      return;
    }
    this._metrics.ensure();
    const now = this._clock();
    const resolutions = this._correlator.observe(event, now);
    // Check on activity as well as on the interval: cheap when nothing is due.
    resolutions.push(...this._correlator.expire(now));
    for (const r of resolutions) {
      const atThisPost = r.resolvedAtPost && r.postSpan?.spanId === sc.spanId;
      if (atThisPost && writable) {
        writable.setAttributes(classificationAttributes(r.classification, r.activity));
        if (r.preSpan) writable.addLink({ context: toSpanContext(r.preSpan) });
      } else if (atThisPost) {
        rememberEndedState(span, r.classification.state);
      }
      this._finish(r, !(atThisPost && writable));
    }
    this._armTimer();
  }

  private _publish(resolutions: Resolution[]): void {
    for (const r of resolutions) this._finish(r, true);
  }

  private _finish(r: Resolution, needsCheckSpan: boolean): void {
    if (needsCheckSpan) {
      try {
        this._emitCheckSpan(r);
      } catch (err) {
        report(err);
      }
    }
    try {
      this._metrics.record(r);
    } catch (err) {
      report(err);
    }
    if (this._onResolution) {
      try {
        this._onResolution(r);
      } catch (err) {
        report(err);
      }
    }
  }

  private _emitCheckSpan(r: Resolution): void {
    const tracer = this._getTracer();
    const links: Link[] = [];
    if (r.preSpan) links.push({ context: toSpanContext(r.preSpan) });
    if (r.postSpan) links.push({ context: toSpanContext(r.postSpan) });
    // In the boundary's trace (see boundary-trace.ts): a child of the pre span, else of the post
    // span (an orphan post), both spans this processor saw end; never under a span no one emits.
    const parentRef = r.preSpan ?? r.postSpan;
    const parent = parentRef ? trace.setSpanContext(ROOT_CONTEXT, toSpanContext(parentRef)) : ROOT_CONTEXT;
    const span = tracer.startSpan(
      SPAN_CONTINUITY_CHECK,
      { kind: SpanKind.INTERNAL, attributes: checkAttributes(r, r.classification, r.activity), links },
      parent,
    );
    if (!span.isRecording() && !this._warnedUnrecorded) {
      this._warnedUnrecorded = true;
      diag.warn(
        'ContinuityProcessor: continuity.check spans are not recorded (no tracer provider registered, or not sampled); pass tracerProvider or call setTracerProvider',
      );
    }
    span.end();
  }

  private _getTracer(): Tracer {
    if (!this._tracer) {
      const provider = this._tracerProvider ?? trace.getTracerProvider();
      this._tracer = provider.getTracer(INSTRUMENTATION_SCOPE);
    }
    return this._tracer;
  }

  private _armTimer(): void {
    if (this._timer || this._correlator.pendingCount === 0) return;
    // One interval for the processor, unref'd so it never keeps the process alive.
    this._timer = setInterval(() => this._tick(), this._checkIntervalMs);
    this._timer.unref?.();
  }

  private _tick(): void {
    try {
      this._publish(this._correlator.expire(this._clock()));
      if (this._correlator.pendingCount === 0) this._stopTimer();
    } catch (err) {
      report(err);
    }
  }

  private _stopTimer(): void {
    if (this._timer) clearInterval(this._timer);
    this._timer = undefined;
  }
}

function toSpanContext(ref: SpanRef): SpanContext {
  return { traceId: ref.traceId, spanId: ref.spanId, traceFlags: TraceFlags.SAMPLED, isRemote: false };
}
