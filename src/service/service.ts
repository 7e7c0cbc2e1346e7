/**
 * `continuity serve` put together: the OTLP/HTTP receiver, the correlator (pure, the clock passed
 * in), the durable pending state, the forward queue and forwarder, and the metrics, with start-up
 * recovery and graceful shutdown.
 *
 * Order of one request: decode → inspect (limits, session keys, compaction events) → reserve room
 * in the queue (else 429/503, nothing applied) → apply events to the correlator and append them
 * to the journal → enrich post spans, build check spans → wait for the journal's fsync → queue the
 * spans → answer 200. So an answered request is durable and queued; an unanswered one the client
 * retries (the correlator ignores a span it has already seen).
 */
import { randomUUID } from 'node:crypto';
import type { Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Worker } from 'node:worker_threads';
import type { Server as GrpcServer } from '@grpc/grpc-js';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { Correlator } from '../correlate/correlator.js';
import type { CorrelatorOptions, Resolution } from '../correlate/types.js';
import type { CompactionEvent } from '../otel/attributes.js';
import { ContinuityMetrics } from '../otel/metrics.js';
import { PASSTHROUGH_SIGNALS, SERVICE_DROP_REASONS } from '../otel/semconv.js';
import {
  decodeSpan,
  decodeTraceRequest,
  decodeTraceResponse,
  encodeSpan,
  encodeTraceRequest,
  OtlpError,
  type OtlpResourceSpans,
  type OtlpSpan,
  type OtlpTraceRequest,
} from '../otlp/index.js';
import { type ContinuityPage, continuityPageFromConfig } from '../ui/page.js';
import { BodyError, type OtlpEncoding } from './body.js';
import { BodyPool } from './body-pool.js';
import {
  defaultStateDir,
  grpcPortOf,
  passthroughEndpoint,
  redactUrl,
  resolveBearerToken,
  SERVICE_DEFAULTS,
  type ServiceConfig,
} from './config.js';
import { DecoderThread } from './decode-thread.js';
import {
  applyPostEnrichment,
  checkResourceSpans,
  enrichPostSpans,
  type InspectableSpan,
  inspectRequest,
  inspectSpans,
  planPostEnrichment,
  rejectionMessage,
} from './enrich.js';
import { Forwarder } from './forwarder.js';
import { startGrpcServer, stopGrpcServer } from './grpc.js';
import { HostAllowList } from './host-check.js';
import { createLogger, type Logger } from './log.js';
import { SERVICE_SCOPE, ServiceMetrics } from './metrics.js';
import { type QueueItem, SpanQueue } from './queue.js';
import { addToOutbox, correlatorSnapshot, type Outbox, rebuildCorrelator } from './rebuild.js';
import {
  handlePassthrough,
  handleTraces,
  hashToken,
  MalformedRequest,
  type PartialSuccess,
  type PassthroughTarget,
  type ReceiverTarget,
  Refusal,
  tokenMatches,
} from './receiver.js';
import { sendError, sendText } from './responses.js';
import { createServiceServer, listen } from './server.js';
import { patchWireSpan, readWireSpan } from './span-wire.js';
import { type SpanSite, splice, walkTraceRequest } from './splice.js';
import { PendingStore } from './state.js';
import { createTransport, type ExportBody, partsOf, type Signal } from './transport.js';

/** Records the continuity metrics for resolved boundaries (boundaries, reobservation, ...). */
export interface ContinuityMetricsRecorder {
  record(resolutions: readonly Resolution[]): void;
}

type PassthroughSignal = (typeof PASSTHROUGH_SIGNALS)[number];

/** Options of {@link ContinuityService.start} beside the configuration. */
export interface StartOptions {
  /** Default: JSON lines on stderr at `log.level`. */
  logger?: Logger;
  /** The environment (state directory default, resource detection). Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /**
   * Builds the continuity metrics on the service's meter provider and correlator. Default: the
   * processor's metrics module.
   */
  continuityMetrics?: (
    metrics: ServiceMetrics,
    correlator: Correlator,
  ) => ContinuityMetricsRecorder | undefined;
}

/** Most bytes of metrics or logs requests queued per signal (429/503 above it). */
const PASSTHROUGH_QUEUE_BYTES = 64 * 1024 * 1024;

/** The HTTP status a gRPC status code is counted under in the requests counter. */
const GRPC_AS_HTTP: Readonly<Record<number, number>> = { 0: 200, 3: 400, 8: 429, 13: 500, 14: 503, 16: 401 };

/** Seconds a client is asked to wait: queue full while the downstream keeps up. */
const RETRY_AFTER_BUSY_S = 1;
/** Seconds a client is asked to wait: downstream failing, shutting down, or the disk failing. */
const RETRY_AFTER_UNAVAILABLE_S = 5;

/** A running `continuity serve`. */
export class ContinuityService {
  private readonly _config: ServiceConfig;
  private readonly _log: Logger;
  private readonly _correlator: Correlator;
  private readonly _store: PendingStore;
  private readonly _queue: SpanQueue;
  private readonly _forwarder: Forwarder;
  private readonly _passthrough: Map<PassthroughSignal, { queue: SpanQueue; forwarder: Forwarder }>;
  private _grpc: { server: GrpcServer; port: number; host: string } | undefined;
  private readonly _metrics: ServiceMetrics;
  private readonly _continuity: ContinuityMetricsRecorder | undefined;
  private readonly _page: ContinuityPage | undefined;
  private readonly _checkSource: {
    resource: Record<string, string>;
    scopeName: string;
    scopeVersion: string;
  };
  private readonly _downstreamEncoding: OtlpEncoding;
  private _server: Server | undefined;
  private _metricsServer: Server | undefined;
  private _ticker: NodeJS.Timeout | undefined;
  private _ready = false;
  private _closing = false;
  private _inflight = 0;
  private _inflightDone: Array<() => void> = [];
  private _stopped: Promise<void> | undefined;
  /** zstd, snappy and LZ4 request bodies are decoded in this worker thread, off the event loop. */
  private readonly _decoder: DecoderThread;
  /** Resolved verdicts whose spans the downstream has not taken yet (`rebuild.ts`). */
  private _outbox: Outbox = new Map();

  private constructor(parts: {
    config: ServiceConfig;
    log: Logger;
    correlator: Correlator;
    store: PendingStore;
    queue: SpanQueue;
    forwarder: Forwarder;
    passthrough: ContinuityService['_passthrough'];
    metrics: ServiceMetrics;
    continuity: ContinuityMetricsRecorder | undefined;
    page: ContinuityPage | undefined;
    checkSource: ContinuityService['_checkSource'];
  }) {
    this._passthrough = parts.passthrough;
    this._config = parts.config;
    this._log = parts.log;
    this._correlator = parts.correlator;
    this._store = parts.store;
    this._queue = parts.queue;
    this._forwarder = parts.forwarder;
    this._metrics = parts.metrics;
    this._continuity = parts.continuity;
    this._page = parts.page;
    this._checkSource = parts.checkSource;
    this._downstreamEncoding = parts.config.downstream.protocol === 'http/json' ? 'json' : 'protobuf';
    this._decoder = new DecoderThread({
      onStop: (detail, restarts) =>
        this._log.warn(
          restarts
            ? 'the body decoder thread stopped; the next zstd, snappy or LZ4 body starts it again'
            : 'the body decoder thread could not start; zstd, snappy and LZ4 bodies are decoded on the event loop',
          { detail },
        ),
    });
  }

  /**
   * Recovers the pending state, starts the listeners and the expiry ticker. Throws when the state
   * directory is locked by another live process or a port cannot be bound.
   */
  static async start(config: ServiceConfig, options: StartOptions = {}): Promise<ContinuityService> {
    const env = options.env ?? process.env;
    const log = options.logger ?? createLogger(config.log.level);
    const tokenHash = (() => {
      const token = resolveBearerToken(config);
      return token === undefined ? undefined : hashToken(token);
    })();

    const instanceId = randomUUID();
    const resource = resourceFromAttributes({
      'service.name': 'continuity-serve',
      'service.version': SERVICE_SCOPE.version,
      'service.instance.id': instanceId,
    }).merge(detectResources({ detectors: [envDetector] }));
    const checkResource: Record<string, string> = {};
    for (const [k, v] of Object.entries(resource.attributes)) if (typeof v === 'string') checkResource[k] = v;

    const stateDir = config.state.dir ?? defaultStateDir(config.server.port, env);
    const correlatorOptions: CorrelatorOptions = {
      postWindowsMs: config.correlation.postWindows,
      // Always set: the service counts an approval only when a key of its own configuration signed it.
      approverKeys: config.correlation.approverKeys,
      ...(config.correlation.maxPendingBoundaries !== undefined && {
        maxPendingBoundaries: config.correlation.maxPendingBoundaries,
      }),
    };
    const { store, recovered } = await PendingStore.open({
      dir: stateDir,
      compactAfterBytes: config.state.compactAfterBytes,
      snapshotAt: (dir, seq) => snapshotInWorker(dir, seq, correlatorOptions, log),
    });

    const correlator = new Correlator(correlatorOptions);
    for (const w of correlator.warnings) log.warn('correlator option clamped', { detail: w });

    const queue = new SpanQueue(config.downstream.queueMaxSpans);
    // Uncompressed request bodies are read into this pool, and each export gives back the bodies
    // its items pointed into once it is over (./body-pool.ts).
    const bodies = new BodyPool();
    const giveBack = (items: readonly QueueItem[]) => {
      for (const i of items) if (i.lease) bodies.give(i.lease);
    };
    const metrics = new ServiceMetrics({
      resource,
      queue,
      ...(config.metrics.otlp.endpoint !== undefined && {
        otlp: {
          endpoint: config.metrics.otlp.endpoint,
          protocol: config.metrics.otlp.protocol,
          headers: config.metrics.otlp.headers,
          intervalMs: config.metrics.otlp.interval,
          timeoutMs: config.metrics.otlp.timeout,
        },
      }),
    });
    const continuity = (options.continuityMetrics ?? defaultContinuityMetrics)(metrics, correlator);

    const transportOf = (signal: Signal, url: string | undefined) =>
      url === undefined
        ? undefined
        : createTransport({
            url,
            protocol: config.downstream.protocol,
            signal,
            headers: config.downstream.headers,
            compression: config.downstream.compression,
            timeoutMs: config.downstream.timeout,
            concurrency: config.downstream.concurrency,
          });
    const traceJson = config.downstream.protocol === 'http/json';
    // The service settles delivered verdicts; it exists only once the forwarder does.
    let settle: (items: readonly QueueItem[]) => void = () => undefined;
    const forwarder = new Forwarder({
      transport: transportOf('traces', config.downstream.endpoint),
      concurrency: config.downstream.concurrency,
      maxBatchSpans: config.downstream.maxBatchSpans,
      retry: config.downstream.retry,
      queue,
      encode: (items) => ({ body: encodeBatch(items), json: traceJson }),
      finished: giveBack,
      readPartialSuccess: (body) => {
        const r = decodeTraceResponse(body, traceJson ? 'json' : 'protobuf');
        if (!r.partialSuccess) return undefined;
        return {
          rejectedSpans: Number(r.partialSuccess.rejectedSpans),
          errorMessage: r.partialSuccess.errorMessage,
        };
      },
      observer: {
        forwarded: (n, of) => {
          metrics.forwarded(n);
          settle(of);
        },
        dropped: (n, reason, of) => {
          metrics.dropped(n, reason);
          // Dropped at shutdown: kept, so the next start sends it (the final snapshot holds it).
          if (reason !== SERVICE_DROP_REASONS.shutdown) settle(of);
          if (reason !== SERVICE_DROP_REASONS.noDownstream) log.warn('spans dropped', { spans: n, reason });
        },
        exportFailed: (reason, detail) => {
          metrics.exportFailed(reason);
          log.warn('export to the downstream failed', { reason, detail });
        },
      },
    });
    // Metrics and logs: queued as they came (bytes), one request per export, never decoded.
    const passthrough = new Map<PassthroughSignal, { queue: SpanQueue; forwarder: Forwarder }>();
    for (const signal of PASSTHROUGH_SIGNALS) {
      const q = new SpanQueue(PASSTHROUGH_QUEUE_BYTES);
      passthrough.set(signal, {
        queue: q,
        forwarder: new Forwarder({
          transport: transportOf(signal, passthroughEndpoint(config, signal)),
          concurrency: config.downstream.concurrency,
          maxBatchSpans: 1,
          retry: config.downstream.retry,
          queue: q,
          encode: (items) =>
            items[0]!.json
              ? { body: items[0]!.json, json: true }
              : { body: items[0]!.protobuf!, json: false },
          finished: giveBack,
          // A downstream's partial success counts data points or log records, which the service
          // does not count; the request was delivered.
          readPartialSuccess: () => undefined,
          observer: {
            forwarded: (_n, of) => metrics.passthroughForwarded(signal, of.length),
            dropped: (_n, reason, of) => {
              metrics.passthroughDropped(signal, of.length, reason);
              if (reason !== SERVICE_DROP_REASONS.noDownstream) {
                log.warn(`${signal} requests dropped`, { requests: of.length, reason });
              }
            },
            exportFailed: (reason, detail) => {
              metrics.exportFailed(reason);
              log.warn(`${signal} export to the downstream failed`, { reason, detail });
            },
          },
        }),
      });
    }

    // The continuity page reads the correlator through a read-only view and hears each correlation.
    const page = continuityPageFromConfig(config.ui, {
      source: { sessions: (limit) => correlator.sessions(limit) },
      checkToken: tokenHash && ((token) => tokenMatches(token, tokenHash)),
      env,
      warn: (message) => log.warn(message),
    });

    const service = new ContinuityService({
      config,
      log,
      correlator,
      store,
      queue,
      forwarder,
      passthrough,
      metrics,
      continuity,
      page,
      checkSource: {
        resource: checkResource,
        scopeName: SERVICE_SCOPE.name,
        scopeVersion: SERVICE_SCOPE.version,
      },
    });
    settle = (items) => service._settle(items);
    service._recover(recovered, stateDir);

    const decoder = service._decoder;
    const target: ReceiverTarget = {
      maxRequestBytes: config.server.maxRequestBytes,
      requestTimeoutMs: config.server.requestTimeout,
      decoder,
      tokenHash,
      bodies,
      admit: () => service._admit(0),
      ingestProtobuf: (body) => service._ingestProtobuf(body),
      ingest: (request, encoding, body) => service._ingest(request, encoding, body),
      answered: (status) => metrics.request(status),
    };
    const separateMetrics = config.metrics.port !== undefined;
    const hosts = new HostAllowList(config.server.allowedHosts);
    const passthroughTarget = (signal: PassthroughSignal): PassthroughTarget => ({
      maxRequestBytes: config.server.maxRequestBytes,
      requestTimeoutMs: config.server.requestTimeout,
      decoder,
      tokenHash,
      bodies,
      accept: (body, encoding) => service._acceptPassthrough(signal, body, encoding),
      answered: (status) => metrics.request(status),
    });
    const metricsTarget = passthroughTarget('metrics');
    const logsTarget = passthroughTarget('logs');
    service._server = createServiceServer({
      traces: (req, res) => service._track(handleTraces(req, res, target)),
      metricsSignal: (req, res) => service._track(handlePassthrough(req, res, metricsTarget)),
      logs: (req, res) => service._track(handlePassthrough(req, res, logsTarget)),
      metrics: separateMetrics ? undefined : (req, res) => metrics.handle(req, res),
      ui: separateMetrics ? undefined : page && ((req, res) => page.handle(req, res)),
      health: (_req, res) => sendText(res, 200, 'ok'),
      ready: (_req, res) => service._readiness(res),
      closing: () => service._closing,
      refuse: (res) =>
        sendError(res, 503, undefined, 'shutting down: send to another instance', {
          retryAfterSeconds: RETRY_AFTER_UNAVAILABLE_S,
          close: true,
        }),
      requestTimeoutMs: config.server.requestTimeout,
      hosts,
    });
    await listen(service._server, config.server.port, config.server.host);
    const grpcPort = grpcPortOf(config);
    if (grpcPort !== false) {
      const grpc = await startGrpcServer(config.server.host, grpcPort, {
        tokenHash,
        maxMessageBytes: config.server.maxRequestBytes,
        receiveTimeoutMs: config.server.requestTimeout,
        traces: (body) => service._grpcTraces(body),
        passthrough: (signal, body) => service._acceptPassthrough(signal, body, 'protobuf'),
        answered: (code) => metrics.request(GRPC_AS_HTTP[code] ?? 500),
      }).catch(async (e: unknown) => {
        await closeServer(service._server!);
        throw e;
      });
      service._grpc = { ...grpc, host: config.server.host };
    }
    if (separateMetrics) {
      service._metricsServer = createServiceServer({
        metrics: (req, res) => metrics.handle(req, res),
        ui: page && ((req, res) => page.handle(req, res)),
        health: (_req, res) => sendText(res, 200, 'ok'),
        ready: (_req, res) => service._readiness(res),
        closing: () => false,
        refuse: () => undefined,
        requestTimeoutMs: config.server.requestTimeout,
        hosts,
      });
      await listen(service._metricsServer, config.metrics.port!, config.metrics.host ?? config.server.host);
    }

    service._ticker = setInterval(() => service._tick(), config.correlation.expireInterval);
    service._ready = true;
    log.info('continuity serve listening', {
      otlp: `${service.url}${SERVICE_DEFAULTS.tracesPath}`,
      ...(service.grpcAddress !== undefined && { grpc: service.grpcAddress }),
      metrics: `${service.metricsUrl}${SERVICE_DEFAULTS.metricsPath}`,
      ...(service.uiUrl && { ui: service.uiUrl }),
      downstream:
        config.downstream.endpoint === undefined
          ? '(none: metrics only, spans counted as dropped no_downstream)'
          : redactUrl(config.downstream.endpoint),
      pending: correlator.pendingCount,
    });
    return service;
  }

  /** `http://host:port` of the OTLP listener. */
  get url(): string {
    return urlOf(this._server!);
  }

  /** `http://host:port/ui` of the continuity page, or undefined when `ui.enabled` is false. */
  get uiUrl(): string | undefined {
    return this._page ? `${this.metricsUrl}${SERVICE_DEFAULTS.uiPath}` : undefined;
  }

  /** `host:port` of the OTLP/gRPC listener, when gRPC is on. */
  get grpcAddress(): string | undefined {
    if (!this._grpc) return undefined;
    const h = this._grpc.host.includes(':') ? `[${this._grpc.host}]` : this._grpc.host;
    return `${h}:${this._grpc.port}`;
  }

  /** `http://host:port` of the listener serving `/metrics`. */
  get metricsUrl(): string {
    return urlOf(this._metricsServer ?? this._server!);
  }

  /** The correlator (read-only use: pending count, summaries). */
  get correlator(): Correlator {
    return this._correlator;
  }

  /** The service's meter provider and self-metrics. */
  get metrics(): ServiceMetrics {
    return this._metrics;
  }

  /**
   * Graceful stop: not ready, stop accepting, finish requests in flight, resolve what is already
   * due, flush the queue (up to `shutdown.timeout`, the rest counted dropped), write the final
   * snapshot, export metrics a last time. Safe to call twice.
   */
  stop(): Promise<void> {
    this._stopped ??= this._stop();
    return this._stopped;
  }

  private async _stop(): Promise<void> {
    // One deadline for the whole stop: a failing downstream or metrics endpoint cannot stretch it.
    const deadline = Date.now() + this._config.shutdown.timeout;
    const left = () => Math.max(0, deadline - Date.now());
    this._ready = false;
    this._closing = true;
    clearInterval(this._ticker);
    this._page?.close();
    const closed = this._server ? closeServer(this._server) : Promise.resolve();
    this._server?.closeIdleConnections();
    await within(
      new Promise<void>((resolve) => {
        if (this._inflight === 0) resolve();
        else this._inflightDone.push(resolve);
      }),
      left(),
    );
    if (this._grpc) await stopGrpcServer(this._grpc.server, Math.min(left(), 2000));
    await this._decoder.close();
    this._tick();
    await Promise.all([
      this._forwarder.shutdown(left()),
      ...[...this._passthrough.values()].map((p) => p.forwarder.shutdown(left())),
    ]);
    try {
      await this._store.close(correlatorSnapshot(this._correlator, this._outbox));
    } catch (e) {
      this._log.error('could not write the final pending-state snapshot', { detail: (e as Error).message });
    }
    // The last metrics export gets what is left of the deadline, at least a moment.
    await within(this._metrics.shutdown(), Math.max(left(), 250));
    this._server?.closeAllConnections();
    await closed;
    if (this._metricsServer) {
      const m = closeServer(this._metricsServer);
      this._metricsServer.closeAllConnections();
      await m;
    }
    this._log.info('continuity serve stopped', { pending: this._correlator.pendingCount });
  }

  private _track(p: Promise<void>): void {
    this._inflight++;
    void p.finally(() => {
      this._inflight--;
      if (this._inflight === 0) {
        const done = this._inflightDone;
        this._inflightDone = [];
        for (const d of done) d();
      }
    });
  }

  private _readiness(res: ServerResponse): void {
    let problem: string | undefined;
    if (!this._ready) problem = this._closing ? 'shutting down' : 'starting';
    else if (this._store.failure) problem = 'pending state cannot be written';
    else if (!this._queue.canAccept(1)) problem = 'forward queue full';
    sendText(res, problem === undefined ? 200 : 503, problem ?? 'ready');
  }

  /** A refusal for a request of `spans` spans, or undefined when it can be taken. */
  private _admit(spans: number): Refusal | undefined {
    if (this._closing)
      return new Refusal(503, 'shutting down: send to another instance', RETRY_AFTER_UNAVAILABLE_S);
    if (this._store.failure) {
      return new Refusal(
        503,
        'the pending state cannot be written to disk; try again later',
        RETRY_AFTER_UNAVAILABLE_S,
      );
    }
    if (!this._queue.canAccept(Math.max(1, spans))) {
      return this._forwarder.backingOff
        ? new Refusal(
            503,
            'the downstream is failing and the forward queue is full; retry later',
            RETRY_AFTER_UNAVAILABLE_S,
          )
        : new Refusal(429, 'the forward queue is full; retry later', RETRY_AFTER_BUSY_S);
    }
    return undefined;
  }

  /**
   * A protobuf request: one walk over its bytes; without compaction spans it is queued as it
   * came, with some only they are decoded, and the changed ones are spliced back in (see
   * `splice.ts`). Resolves `decode` when the downstream needs the decoded request (JSON).
   * Throws {@link Refusal}, or {@link MalformedRequest} for a body that is not a valid request.
   */
  private async _ingestProtobuf(body: Buffer): Promise<PartialSuccess | undefined | 'decode'> {
    // A JSON downstream needs the decoded request anyway.
    if (this._downstreamEncoding !== 'protobuf') return 'decode';
    const walked = walkTraceRequest(body);
    if (!walked.ok) throw new MalformedRequest(walked.error);
    if (walked.compaction.length === 0) {
      if (walked.spans === 0) return undefined;
      this._reserve(walked.spans);
      try {
        this._metrics.received(walked.spans);
        this._queue.push({ spans: walked.spans, protobuf: body, lease: body });
        // Answered first: the export starts after (see Forwarder.pumpSoon).
        this._forwarder.pumpSoon();
      } finally {
        this._queue.release(walked.spans);
      }
      return undefined;
    }
    // Each compaction span is read from its bytes; the codec decodes only the unusual ones.
    const limits = this._config.limits;
    const items = walked.compaction.map((site) => {
      const wire = readWireSpan(body, site, limits);
      if (wire) return { path: sitePath(site), site, span: wire, wire, decoded: undefined };
      let span: OtlpSpan;
      try {
        span = decodeSpan(body.subarray(site.start, site.end));
      } catch (e) {
        throw new MalformedRequest(`${sitePath(site)}: ${(e as Error).message}`);
      }
      return { path: sitePath(site), site, span, wire: undefined, decoded: span };
    });
    const inspection = inspectSpans<InspectableSpan>(items, limits);
    const accepted = walked.spans - inspection.rejected.size;
    return this._apply(accepted, inspection.events, inspection, (resolutions, checks) => {
      const { edits, rest: needChecks } = planPostEnrichment(inspection.events, resolutions);
      const replace = new Map<SpanSite, Uint8Array | Uint8Array[] | null>();
      for (const i of inspection.rejected) replace.set(walked.compaction[i]!, null);
      for (const { found, attributes, links } of edits) {
        const { site, wire, decoded } = items[found.index]!;
        if (wire) replace.set(site, patchWireSpan(body, site, wire, attributes, links));
        else {
          applyPostEnrichment(decoded!, { attributes, links });
          replace.set(site, encodeSpan(decoded!));
        }
      }
      const spliced = splice(body, walked, replace);
      const extra = checks(needChecks);
      return {
        spans: accepted + needChecks.length,
        item: {
          spans: accepted + needChecks.length,
          protobuf: extra
            ? [...spliced, encodeTraceRequest({ resourceSpans: [extra] }, 'protobuf')]
            : spliced,
          lease: body,
        },
      };
    });
  }

  /** A trace request over gRPC: the same path as an OTLP/HTTP protobuf body. */
  private async _grpcTraces(body: Buffer): Promise<PartialSuccess | undefined> {
    const early = this._admit(0);
    if (early) throw early;
    const result = await this._ingestProtobuf(body);
    if (result !== 'decode') return result;
    let request: OtlpTraceRequest;
    try {
      request = decodeTraceRequest(body, 'protobuf');
    } catch (e) {
      if (e instanceof OtlpError) throw new MalformedRequest(e.message);
      throw e;
    }
    return this._ingest(request, 'protobuf', body);
  }

  /**
   * A metrics or logs request, queued for the downstream as it came (bytes, its encoding). Throws
   * a {@link Refusal} when shutting down or when its queue is full.
   */
  private _acceptPassthrough(signal: PassthroughSignal, body: Buffer, encoding: OtlpEncoding): void {
    if (this._closing) {
      throw new Refusal(503, 'shutting down: send to another instance', RETRY_AFTER_UNAVAILABLE_S);
    }
    if (encoding === 'json' && this._config.downstream.protocol === 'grpc') {
      throw new BodyError(
        415,
        'unsupported_media_type',
        `OTLP/JSON ${signal} are passed through as they came, which needs an OTLP/HTTP downstream (downstream.protocol is grpc): send application/x-protobuf`,
      );
    }
    const p = this._passthrough.get(signal)!;
    const size = Math.max(1, body.length);
    if (!p.queue.reserve(size)) {
      throw p.forwarder.backingOff
        ? new Refusal(
            503,
            `the downstream is failing and the ${signal} queue is full; retry later`,
            RETRY_AFTER_UNAVAILABLE_S,
          )
        : new Refusal(429, `the ${signal} queue is full; retry later`, RETRY_AFTER_BUSY_S);
    }
    try {
      p.queue.push(
        encoding === 'json'
          ? { spans: size, json: body, lease: body }
          : { spans: size, protobuf: body, lease: body },
      );
      p.forwarder.pump();
    } finally {
      p.queue.release(size);
    }
  }

  /** Reserves queue room for `spans`, or throws the refusal to answer. */
  private _reserve(spans: number): void {
    const refusal = this._admit(spans);
    if (refusal || !this._queue.reserve(spans)) {
      throw refusal ?? new Refusal(429, 'the forward queue is full; retry later', RETRY_AFTER_BUSY_S);
    }
  }

  /**
   * The common steps of a request with compaction events: reserve room, correlate, journal, build
   * the queue item (`build`, given the resolutions and a check-span builder), wait for the journal,
   * count, queue. Returns the partial success to report.
   */
  private async _apply(
    accepted: number,
    events: ReadonlyArray<{ event: CompactionEvent }>,
    refused: { rejectedByReason: Map<string, number>; messages: string[] },
    build: (
      resolutions: Resolution[],
      checks: (r: Resolution[]) => OtlpResourceSpans | undefined,
    ) => { spans: number; item: QueueItem | undefined },
  ): Promise<PartialSuccess | undefined> {
    // Room for every accepted span and one check span per event, at most.
    const room = accepted + events.length;
    this._reserve(room);
    try {
      const nowMs = Date.now();
      const resolutions: Resolution[] = [];
      const verdicts: string[] = [];
      let lastSeq = 0;
      for (const found of events) {
        const resolved = this._correlator.observe(found.event, nowMs);
        resolutions.push(...resolved);
        lastSeq = this._store.record({ op: 'observe', at: nowMs, event: found.event });
        verdicts.push(...addToOutbox(this._outbox, lastSeq, resolved));
      }
      this._continuity?.record(resolutions);
      if (events.length > 0) this._page?.observed(resolutions, nowMs);
      const { spans, item } = build(resolutions, (r) => checkResourceSpans(r, nowMs, this._checkSource));
      if (lastSeq > 0) {
        const waitStart = performance.now();
        try {
          await this._store.durable(lastSeq);
          this._metrics.pendingWrite(performance.now() - waitStart);
        } catch (e) {
          this._log.error('pending state not durable', { detail: (e as Error).message });
          throw new Refusal(
            503,
            'the pending state cannot be written to disk; try again later',
            RETRY_AFTER_UNAVAILABLE_S,
          );
        }
      }
      const rejected = [...refused.rejectedByReason.values()].reduce((a, b) => a + b, 0);
      for (const [reason, n] of refused.rejectedByReason) this._metrics.rejected(n, reason);
      this._metrics.received(accepted);
      if (spans > 0 && item) {
        this._queue.push(verdicts.length > 0 ? { ...item, verdicts } : item);
        this._forwarder.pumpSoon();
      } else this._settleKeys(verdicts);
      if (rejected === 0) return undefined;
      return { rejectedSpans: rejected, errorMessage: rejectionMessage(refused) };
    } finally {
      this._queue.release(room);
    }
  }

  /** A decoded request (JSON, or protobuf for a JSON downstream). */
  private async _ingest(
    decoded: OtlpTraceRequest,
    encoding: OtlpEncoding,
    body: Buffer,
  ): Promise<PartialSuccess | undefined> {
    const inspection = inspectRequest(decoded, this._config.limits);
    return this._apply(inspection.accepted, inspection.events, inspection, (resolutions, checks) => {
      const needChecks = enrichPostSpans(inspection.events, resolutions);
      const enriched = resolutions.length - needChecks.length;
      const extra = checks(needChecks);
      const rejected = inspection.rejectedByReason.size > 0;
      const unchanged = !rejected && enriched === 0 && extra === undefined;
      const spans = inspection.accepted + needChecks.length;
      return {
        spans,
        item:
          spans > 0
            ? this._item(
                inspection.request,
                spans,
                extra ? [extra] : [],
                unchanged && encoding === this._downstreamEncoding ? body : undefined,
              )
            : undefined,
      };
    });
  }

  /** A queue item in the downstream's encoding; an unchanged body is forwarded byte for byte. */
  private _item(
    request: OtlpTraceRequest,
    spans: number,
    extra: OtlpResourceSpans[],
    raw: Buffer | undefined,
  ): QueueItem {
    if (this._downstreamEncoding === 'protobuf') {
      if (raw) return { spans, protobuf: raw };
      const full = extra.length > 0 ? { resourceSpans: [...request.resourceSpans, ...extra] } : request;
      return { spans, protobuf: encodeTraceRequest(full, 'protobuf') };
    }
    return {
      spans,
      request: extra.length > 0 ? { resourceSpans: [...request.resourceSpans, ...extra] } : request,
    };
  }

  /** Expiry tick: resolves boundaries past their post window; journals the tick when it resolved any. */
  private _tick(): void {
    const nowMs = Date.now();
    let resolutions: Resolution[];
    try {
      resolutions = this._correlator.expire(nowMs);
    } catch (e) {
      this._log.error('expiry failed', { detail: (e as Error).message });
      return;
    }
    if (resolutions.length === 0) return;
    let verdicts: string[] = [];
    try {
      verdicts = addToOutbox(this._outbox, this._store.record({ op: 'expire', at: nowMs }), resolutions);
    } catch {
      // Closed store (after shutdown): the resolutions are still emitted and counted below.
    }
    this._emitChecks(resolutions, nowMs, verdicts);
  }

  /**
   * Records resolutions that have no post span in hand and queues their check spans. `verdicts`:
   * their outbox keys, settled once the check spans are delivered (or dropped here).
   */
  private _emitChecks(resolutions: Resolution[], nowMs: number, verdicts: readonly string[] = []): void {
    if (resolutions.length === 0) return;
    this._continuity?.record(resolutions);
    this._page?.observed(resolutions, nowMs);
    const checks = checkResourceSpans(resolutions, nowMs, this._checkSource);
    if (!checks) return;
    if (!this._queue.canAccept(resolutions.length)) {
      this._metrics.dropped(resolutions.length, SERVICE_DROP_REASONS.queueFull);
      this._log.warn('check spans dropped: forward queue full', { spans: resolutions.length });
      this._settleKeys(verdicts);
      return;
    }
    const item = this._item({ resourceSpans: [] }, resolutions.length, [checks], undefined);
    this._queue.push(verdicts.length > 0 ? { ...item, verdicts } : item);
    this._forwarder.pump();
  }

  /** The verdicts the items carried were delivered (or dropped for good): out of the outbox. */
  private _settle(items: readonly QueueItem[]): void {
    const keys: string[] = [];
    for (const i of items) if (i.verdicts) keys.push(...i.verdicts);
    this._settleKeys(keys);
  }

  private _settleKeys(keys: readonly string[]): void {
    if (keys.length === 0) return;
    for (const k of keys) this._outbox.delete(k);
    try {
      // Not waited for: lost with a kill -9, the verdict is sent once more after the restart.
      this._store.record({ op: 'settled', at: Date.now(), keys: [...keys] });
    } catch {
      // Closed store (after shutdown): the final snapshot already holds the outbox without them.
    }
  }

  /** Rebuilds the correlator from the snapshot and the journal, then resolves what is overdue. */
  private _recover(
    recovered: Awaited<ReturnType<typeof PendingStore.open>>['recovered'],
    stateDir: string,
  ): void {
    const nowMs = Date.now();
    const { fromImport, replayProblems, outbox } = rebuildCorrelator(this._correlator, recovered, nowMs);
    for (const p of replayProblems) {
      this._log.warn('journal record could not be replayed', { seq: p.seq, detail: p.detail });
    }
    const problems = recovered.problems.length + replayProblems.length;
    for (const p of recovered.problems) this._log.warn('pending state record unreadable', { detail: p });
    this._metrics.recovery(this._correlator.pendingCount, problems);
    this._log.info('pending state recovered', {
      dir: stateDir,
      pending: this._correlator.pendingCount,
      replayed: recovered.records.length,
      problems,
    });
    this._emitChecks(fromImport, nowMs);
    // Verdicts resolved before the stop whose spans never reached the downstream (kill -9 while
    // it was down): counted again, shown again, sent again, so an alert on them can still fire.
    this._outbox = outbox;
    if (outbox.size > 0) {
      this._log.info('resolved verdicts not yet delivered: sent again', { verdicts: outbox.size });
      this._emitChecks([...outbox.values()], nowMs, [...outbox.keys()]);
    }
    // Journaled like any tick, so the state rebuilt from the files matches this one.
    const overdue = this._correlator.expire(nowMs);
    const verdicts =
      overdue.length > 0
        ? addToOutbox(this._outbox, this._store.record({ op: 'expire', at: nowMs }), overdue)
        : [];
    this._emitChecks(overdue, nowMs, verdicts);
  }
}

/** The processor's continuity metrics on the service's meter provider, reading the correlator. */
function defaultContinuityMetrics(
  metrics: ServiceMetrics,
  correlator: Correlator,
): ContinuityMetricsRecorder {
  const continuity = new ContinuityMetrics(correlator, { meterProvider: metrics.meterProvider });
  // Create the instruments now, so the gauges are scrapeable before the first boundary resolves.
  continuity.ensure();
  return {
    record: (resolutions) => continuity.recordAll(resolutions),
  };
}

/** Joins queue items into one request body in the items' encoding. */
function encodeBatch(items: readonly QueueItem[]): ExportBody {
  if (items.every((i) => i.protobuf !== undefined)) {
    // Protobuf messages of one type merge by concatenation (repeated resourceSpans append): the
    // items go out back to back as one body, not copied into one buffer first.
    return items.length === 1 ? items[0]!.protobuf! : items.flatMap((i) => partsOf(i.protobuf!));
  }
  const resourceSpans = items.flatMap((i) => (i.request as OtlpTraceRequest).resourceSpans);
  return Buffer.from(encodeTraceRequest({ resourceSpans }, 'json'));
}

function urlOf(server: Server): string {
  const a = server.address() as AddressInfo;
  const host = a.family === 'IPv6' ? `[${a.address}]` : a.address;
  return `http://${host}:${a.port}`;
}

/** The path of a compaction span in its request, for messages. */
function sitePath(site: SpanSite): string {
  return `resourceSpans[${site.resource}].scopeSpans[${site.scope}].spans[${site.index}]`;
}

/** Waits for `p`, at most `ms`. */
function within(p: Promise<unknown>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    void p.finally(() => {
      clearTimeout(t);
      resolve();
    });
  });
}

/**
 * Writes the snapshot at `seq` in a worker thread (`compact-worker.ts`), which rebuilds the state
 * from the files, so the event loop serving requests does none of it.
 */
function snapshotInWorker(
  dir: string,
  seq: number,
  correlator: CorrelatorOptions,
  log: Logger,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./compact-worker.js', import.meta.url), {
      workerData: { dir, seq, correlator, nowMs: Date.now() },
    });
    let settled = false;
    const started = Date.now();
    worker.once('message', (m: { ok: boolean; error?: string; entries?: number }) => {
      settled = true;
      if (m.ok) {
        log.info('pending-state snapshot written', { seq, entries: m.entries, ms: Date.now() - started });
        resolve();
      } else {
        log.warn('pending-state snapshot failed; the journals stay', { detail: m.error ?? 'unknown' });
        reject(new Error(m.error));
      }
      void worker.terminate();
    });
    worker.once('error', (e) => {
      if (settled) return;
      settled = true;
      log.warn('pending-state snapshot failed; the journals stay', { detail: e.message });
      reject(e);
    });
    worker.once('exit', (code) => {
      if (!settled) reject(new Error(`snapshot worker exited with code ${code}`));
    });
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}
