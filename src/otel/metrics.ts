/**
 * The continuity metrics, recorded from resolutions and observed from the correlator's state.
 * Names, units and descriptions come from `semconv.ts`. Shared by the in-process
 * {@link ContinuityProcessor} and `continuity serve`.
 *
 * Instruments are created lazily from the meter provider: the global one is looked up when first
 * needed (not at construction), so a processor built before `NodeSDK.start()` still records.
 * Metric attributes never carry a decision value; only the needs_human gauge carries a session id
 * (bounded, see {@link METRIC_NEEDS_HUMAN}).
 */
import {
  type Attributes,
  type Counter,
  createNoopMeter,
  diag,
  type Histogram,
  type Meter,
  type MeterProvider,
  metrics,
  type ObservableCounter,
  type ObservableGauge,
  type ObservableResult,
} from '@opentelemetry/api';
import type { NeedsHumanEntry, Resolution, SessionSummaryEntry } from '../correlate/types.js';
import { WELL_KNOWN_DECISIONS } from '../decision/names.js';
import {
  INSTRUMENTATION_SCOPE,
  KNOWN_RUNTIMES,
  METRIC_APPROVAL_ATTEMPTS,
  METRIC_ATTR_ACTIVITY,
  METRIC_ATTR_BOUNDARY_ID,
  METRIC_ATTR_PRIMARY_DECISION,
  METRIC_ATTR_REASON,
  METRIC_ATTR_RESULT,
  METRIC_ATTR_RUNTIME,
  METRIC_ATTR_SESSION_ID,
  METRIC_ATTR_STATE,
  METRIC_ATTR_TRIGGER,
  METRIC_BOUNDARIES,
  METRIC_DEFINITIONS,
  METRIC_EVICTIONS,
  METRIC_MAX_CUSTOM_VALUES,
  METRIC_NEEDS_HUMAN,
  METRIC_PENDING,
  METRIC_REOBSERVATION_DURATION,
  METRIC_SESSIONS,
  METRIC_VALUE_OTHER,
  METRIC_VALUE_UNKNOWN,
} from './semconv.js';

/**
 * A metric attribute whose values clients choose (runtime, decision names): the `known` values
 * always pass, then the first `max` others seen, then {@link METRIC_VALUE_OTHER}. Bounded memory
 * and bounded series, whatever the clients send.
 */
export class BoundedLabel {
  private readonly _known: ReadonlySet<string>;
  private readonly _seen = new Set<string>();
  constructor(
    known: readonly string[],
    private readonly _max: number = METRIC_MAX_CUSTOM_VALUES,
  ) {
    this._known = new Set(known);
  }

  /** The value to record for `value`. */
  value(value: string): string {
    if (this._known.has(value) || this._seen.has(value)) return value;
    if (this._seen.size >= this._max) return METRIC_VALUE_OTHER;
    this._seen.add(value);
    return value;
  }
}

/**
 * Histogram buckets for the re-observation duration, in seconds: from a prompt in-process
 * re-observation to an hour-long pause.
 */
export const REOBSERVATION_BUCKETS_S: readonly number[] = [
  0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 900, 1800, 3600,
];

/** Where the observable gauges read from (a {@link Correlator} fits). */
export interface ContinuityMetricsSource {
  readonly pendingCount: number;
  sessionSummary(): SessionSummaryEntry[];
  needsHuman(limit: number): NeedsHumanEntry[];
  /** The correlator's own counters; `approvalAttempts` feeds the attempts counter when present. */
  readonly stats?: { readonly approvalAttempts?: Readonly<Record<string, number>> };
}

/** Options of {@link ContinuityMetrics}. */
export interface ContinuityMetricsOptions {
  /** Where instruments come from. Default: the global meter provider, looked up when first needed. */
  meterProvider?: MeterProvider;
  /** Most series of the needs_human gauge (most recently active sessions kept). Default 1 000. */
  maxNeedsHumanSeries?: number;
}

// The global provider is a no-op until an SDK registers one; its meters are this class.
const NOOP_METER_CLASS = createNoopMeter().constructor;

interface Instruments {
  boundaries: Counter;
  evictions: Counter;
  duration: Histogram;
  gauges: Array<ObservableGauge | ObservableCounter>;
}

/** Records the continuity metrics. Never throws: a failing instrument must not break the agent. */
export class ContinuityMetrics {
  private _meterProvider: MeterProvider | undefined;
  private _instruments: Instruments | undefined;
  private readonly _source: ContinuityMetricsSource;
  private readonly _maxNeedsHuman: number;
  private readonly _runtimes = new BoundedLabel([...KNOWN_RUNTIMES, METRIC_VALUE_UNKNOWN]);
  private readonly _decisions = new BoundedLabel(['', ...WELL_KNOWN_DECISIONS]);

  /** Nothing is created here; see {@link ContinuityMetrics.ensure}. */
  constructor(source: ContinuityMetricsSource, options: ContinuityMetricsOptions = {}) {
    this._source = source;
    this._meterProvider = options.meterProvider;
    const max = options.maxNeedsHumanSeries ?? 1_000;
    this._maxNeedsHuman = Number.isFinite(max) && max >= 0 ? Math.floor(max) : 1_000;
  }

  /** Uses another meter provider from now on (instruments are created again on first use). */
  setMeterProvider(meterProvider: MeterProvider): void {
    this._meterProvider = meterProvider;
    this._instruments = undefined;
  }

  /** True once instruments exist on a real (non no-op) meter. */
  get ready(): boolean {
    return this._instruments !== undefined;
  }

  /**
   * Creates the instruments if a real meter is available; cheap when they exist. Returns whether
   * the metrics are live. With the global provider still a no-op it tries again next time.
   */
  ensure(): boolean {
    if (this._instruments) return true;
    const provider = this._meterProvider ?? metrics.getMeterProvider();
    const meter = provider.getMeter(INSTRUMENTATION_SCOPE);
    if (this._meterProvider === undefined && meter instanceof NOOP_METER_CLASS) return false;
    this._instruments = this._create(meter);
    return true;
  }

  /** Records one resolved boundary: the counter, the histogram (when a post arrived), evictions. */
  record(r: Resolution): void {
    this.recordAll([r]);
  }

  /**
   * Records resolved boundaries as {@link record} does each, with one counter increment per
   * attribute set among them (the SDK hashes the attributes of every call, sorting and
   * serializing them: a request of the service resolves several boundaries at once, mostly alike).
   */
  recordAll(resolutions: readonly Resolution[]): void {
    if (resolutions.length === 0 || !this.ensure()) return;
    const i = this._instruments!;
    const boundaries = new Map<string, { n: number; attributes: Attributes }>();
    const timing = new Map<string, Attributes>();
    const evictions = new Map<string, { n: number; attributes: Attributes }>();
    for (const r of resolutions) {
      const c = r.classification;
      const runtime = this._runtimes.value(r.runtime ?? METRIC_VALUE_UNKNOWN);
      const trigger = r.trigger ?? METRIC_VALUE_UNKNOWN;
      const primary = this._decisions.value(c.primaryDecision ?? '');
      const key = `${c.state}\u0000${c.reason}\u0000${runtime}\u0000${trigger}\u0000${primary}`;
      const seen = boundaries.get(key);
      if (seen) seen.n++;
      else {
        boundaries.set(key, {
          n: 1,
          attributes: {
            [METRIC_ATTR_STATE]: c.state,
            [METRIC_ATTR_REASON]: c.reason,
            [METRIC_ATTR_RUNTIME]: runtime,
            [METRIC_ATTR_TRIGGER]: trigger,
            [METRIC_ATTR_PRIMARY_DECISION]: primary,
          },
        });
      }
      if (r.reobservationSeconds !== null) {
        const at = `${runtime}\u0000${trigger}`;
        let attributes = timing.get(at);
        if (!attributes) {
          attributes = { [METRIC_ATTR_RUNTIME]: runtime, [METRIC_ATTR_TRIGGER]: trigger };
          timing.set(at, attributes);
        }
        i.duration.record(r.reobservationSeconds, attributes);
      }
      if (r.cause === 'evicted') {
        const e = evictions.get(runtime);
        if (e) e.n++;
        else evictions.set(runtime, { n: 1, attributes: { [METRIC_ATTR_RUNTIME]: runtime } });
      }
    }
    for (const { n, attributes } of boundaries.values()) i.boundaries.add(n, attributes);
    for (const { n, attributes } of evictions.values()) i.evictions.add(n, attributes);
  }

  private _create(meter: Meter): Instruments {
    const def = METRIC_DEFINITIONS;
    const boundaries = meter.createCounter(METRIC_BOUNDARIES, {
      unit: def[METRIC_BOUNDARIES].unit,
      description: def[METRIC_BOUNDARIES].description,
    });
    const evictions = meter.createCounter(METRIC_EVICTIONS, {
      unit: def[METRIC_EVICTIONS].unit,
      description: def[METRIC_EVICTIONS].description,
    });
    const duration = meter.createHistogram(METRIC_REOBSERVATION_DURATION, {
      unit: def[METRIC_REOBSERVATION_DURATION].unit,
      description: def[METRIC_REOBSERVATION_DURATION].description,
      advice: { explicitBucketBoundaries: [...REOBSERVATION_BUCKETS_S] },
    });
    const sessions = meter.createObservableGauge(METRIC_SESSIONS, {
      unit: def[METRIC_SESSIONS].unit,
      description: def[METRIC_SESSIONS].description,
    });
    // An observable gauge is not enough on its own: with cumulative temporality the SDK merges
    // each collection into the previous ones, so a cell observed once and absent later would keep
    // its old count forever. Every cell seen before is observed again, as 0 when it is empty now.
    // Bounded: cells are continuity states × activity states (both closed sets). Kept per set of
    // instruments, like the SDK's own history: a new meter provider starts from nothing.
    const seenCells = new Map<string, Attributes>();
    sessions.addCallback((result) =>
      guarded(result, (res) => {
        const now = new Map<string, number>();
        for (const cell of this._source.sessionSummary()) {
          const key = `${cell.state}\u0000${cell.activity}`;
          if (!seenCells.has(key)) {
            seenCells.set(key, { [METRIC_ATTR_STATE]: cell.state, [METRIC_ATTR_ACTIVITY]: cell.activity });
          }
          now.set(key, cell.sessions);
        }
        for (const [key, attrs] of seenCells) res.observe(now.get(key) ?? 0, attrs);
      }),
    );
    const pending = meter.createObservableGauge(METRIC_PENDING, {
      unit: def[METRIC_PENDING].unit,
      description: def[METRIC_PENDING].description,
    });
    pending.addCallback((result) => guarded(result, (res) => res.observe(this._source.pendingCount)));
    const needsHuman = meter.createObservableGauge(METRIC_NEEDS_HUMAN, {
      unit: def[METRIC_NEEDS_HUMAN].unit,
      description: def[METRIC_NEEDS_HUMAN].description,
    });
    // Series observed as 1 by the previous callback, by attribute set. A series that no longer
    // applies (approved, re-observed, expired, or pushed out of the most recent
    // `maxNeedsHumanSeries`) is observed once as 0 and forgotten, so this map never holds more than
    // `maxNeedsHumanSeries` entries. Why 0 and not absence: with cumulative temporality the SDK
    // merges each collection into the previous ones, so an attribute set it has seen keeps its last
    // value in every later export; without the 0 the session would read 1 forever. The SDK goes on
    // exporting that 0 (stale, but true: "does not need a human"), so consumers select `== 1`.
    // What bounds those leftover series is the SDK's per-instrument cardinality limit (2 000 by
    // default, then `otel.metric.overflow`), as before; a restart of the process clears them.
    let lastNeedsHuman = new Map<string, Attributes>();
    needsHuman.addCallback((result) =>
      guarded(result, (res) => {
        const now = new Map<string, Attributes>();
        if (this._maxNeedsHuman > 0) {
          for (const n of this._source.needsHuman(this._maxNeedsHuman)) {
            const attrs: Attributes = {
              [METRIC_ATTR_SESSION_ID]: n.sessionId,
              [METRIC_ATTR_BOUNDARY_ID]: n.boundaryId ?? '',
              [METRIC_ATTR_STATE]: n.state,
              [METRIC_ATTR_REASON]: n.reason,
              [METRIC_ATTR_PRIMARY_DECISION]: this._decisions.value(n.primaryDecision ?? ''),
              [METRIC_ATTR_RUNTIME]: this._runtimes.value(n.runtime ?? METRIC_VALUE_UNKNOWN),
            };
            // The values are strings built in a fixed key order: their JSON is a stable key.
            now.set(JSON.stringify(attrs), attrs);
          }
        }
        for (const [key, attrs] of lastNeedsHuman) if (!now.has(key)) res.observe(0, attrs);
        for (const attrs of now.values()) res.observe(1, attrs);
        lastNeedsHuman = now;
      }),
    );
    // Approvals that did not count: observed from the correlator's counts (cumulative, so a
    // restart that replays the journal reports the same totals), every result from 0 on, so an
    // alert on `increase()` sees the first attempt.
    const attempts = meter.createObservableCounter(METRIC_APPROVAL_ATTEMPTS, {
      unit: def[METRIC_APPROVAL_ATTEMPTS].unit,
      description: def[METRIC_APPROVAL_ATTEMPTS].description,
    });
    attempts.addCallback((result) =>
      guarded(result, (res) => {
        const counts = this._source.stats?.approvalAttempts;
        if (!counts) return;
        for (const [reason, n] of Object.entries(counts)) res.observe(n, { [METRIC_ATTR_RESULT]: reason });
      }),
    );
    return { boundaries, evictions, duration, gauges: [sessions, pending, needsHuman, attempts] };
  }
}

/** A gauge callback that cannot throw into the metric reader. */
function guarded(result: ObservableResult, fn: (result: ObservableResult) => void): void {
  try {
    fn(result);
  } catch (err) {
    // A summary that fails to read reports nothing this round rather than breaking collection.
    diag.warn('agent-continuity: a continuity gauge callback failed', err);
  }
}
