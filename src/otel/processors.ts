/**
 * `continuityProcessors`: the span processors an app that passed NodeSDK a `traceExporter` gives
 * it instead, so adding continuity does not stop its export. NodeSDK uses `traceExporter` only when
 * `spanProcessors` is absent; `spanProcessors: [new ContinuityProcessor()]` alone exports nothing.
 *
 * The batch processor is the app's own SDK's, found where NodeSDK finds it (the copy of
 * `@opentelemetry/sdk-trace` beside the app's `@opentelemetry/sdk-node`, else
 * `@opentelemetry/sdk-trace-base`), loaded only when this function is called: the package itself
 * depends on no SDK.
 */
import { createRequire } from 'node:module';
import { ContinuityProcessor } from './processor.js';
import type { ContinuityProcessorOptions } from './processor-types.js';

/** A span exporter as the SDK's batch processor takes it (`traceExporter` of NodeSDK). */
export interface ContinuitySpanExporter {
  export(spans: unknown[], resultCallback: (result: { code: number; error?: Error }) => void): void;
  shutdown(): Promise<void>;
  forceFlush?(): Promise<void>;
}

/** Options of {@link continuityProcessors}. */
export interface ContinuityProcessorsOptions {
  /** The exporter the app passed as NodeSDK's `traceExporter`. */
  exporter: ContinuitySpanExporter;
  /** Options of the {@link ContinuityProcessor}. Default: its defaults. */
  continuity?: ContinuityProcessorOptions;
  /**
   * Options of the batch processor (`maxQueueSize`, `maxExportBatchSize`, `scheduledDelayMillis`,
   * `exportTimeoutMillis`). Default: the SDK's, from `OTEL_BSP_*` as NodeSDK does.
   */
  batch?: {
    maxQueueSize?: number;
    maxExportBatchSize?: number;
    scheduledDelayMillis?: number;
    exportTimeoutMillis?: number;
  };
}

/** The span processor shape both processors returned here have (the SDK's `SpanProcessor`). */
export type ContinuitySpanProcessor = Pick<
  ContinuityProcessor,
  'onStart' | 'onEnd' | 'forceFlush' | 'shutdown'
>;

type BatchConstructor = new (...args: unknown[]) => ContinuitySpanProcessor;

/** The SDK's BatchSpanProcessor and how it takes its exporter: 3.x-style options or 2.x positional. */
function findBatchSpanProcessor(): { Batch: BatchConstructor; optionsObject: boolean } {
  const here = createRequire(import.meta.url);
  const from: NodeRequire[] = [];
  for (const entry of ['@opentelemetry/sdk-node/package.json', '@opentelemetry/sdk-node']) {
    try {
      from.push(createRequire(here.resolve(entry)));
      break;
    } catch {
      // No sdk-node (or no such export): look from this package (the app's node_modules above it).
    }
  }
  from.push(here);
  for (const req of from) {
    // sdk-trace takes `{ exporter, ...config }` (2.12 and 3.x); sdk-trace-base 2.x `(exporter, config)`.
    for (const [name, optionsObject] of [
      ['@opentelemetry/sdk-trace', true],
      ['@opentelemetry/sdk-trace-base', false],
    ] as const) {
      try {
        const Batch = (req(name) as { BatchSpanProcessor?: BatchConstructor }).BatchSpanProcessor;
        if (typeof Batch === 'function') return { Batch, optionsObject };
      } catch {
        // Not installed there: try the next.
      }
    }
  }
  throw new Error(
    'continuityProcessors: found neither @opentelemetry/sdk-trace nor @opentelemetry/sdk-trace-base beside @opentelemetry/sdk-node or this package; install the OpenTelemetry SDK (npm install @opentelemetry/sdk-node), or pass spanProcessors: [new ContinuityProcessor(), new BatchSpanProcessor(...)] yourself',
  );
}

/**
 * The span processors for NodeSDK's `spanProcessors`: a {@link ContinuityProcessor} first (what it
 * emits at shutdown must still reach the exporter), then the SDK's `BatchSpanProcessor` around
 * `exporter`, as NodeSDK builds it for `traceExporter`:
 *
 * ```js
 * new NodeSDK({ spanProcessors: continuityProcessors({ exporter: new OTLPTraceExporter() }) });
 * ```
 *
 * Throws (at set-up, never later) when no OpenTelemetry trace SDK can be found.
 */
export function continuityProcessors(options: ContinuityProcessorsOptions): ContinuitySpanProcessor[] {
  if (!options || typeof options.exporter?.export !== 'function') {
    throw new TypeError(
      'continuityProcessors: expected { exporter } with the span exporter you passed NodeSDK as traceExporter',
    );
  }
  const { Batch, optionsObject } = findBatchSpanProcessor();
  const batch = optionsObject
    ? new Batch({ ...options.batch, exporter: options.exporter })
    : new Batch(options.exporter, options.batch);
  return [new ContinuityProcessor(options.continuity), batch];
}
