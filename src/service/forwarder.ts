/**
 * The downstream forwarder: takes batches from the {@link SpanQueue} and exports them over
 * OTLP/HTTP, retrying retryable failures (429, 502, 503, 504, network errors, timeouts) with
 * exponential backoff that honours `Retry-After`. Every span leaves through exactly one door:
 * forwarded, or dropped with a reason, both counted by the observer. Nothing is lost silently.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { gzipSync } from 'node:zlib';
import { SERVICE_DROP_REASONS } from '../otel/semconv.js';
import type { OtlpProtocol } from './config.js';
import type { QueueItem, SpanQueue } from './queue.js';

/** Where the forwarder reports what happened to spans. */
export interface ForwarderObserver {
  /** The downstream accepted `spans` spans. */
  forwarded(spans: number): void;
  /** `spans` spans will never be delivered, for `reason` (a `SERVICE_DROP_REASONS` value). */
  dropped(spans: number, reason: string): void;
  /** One export attempt failed (`status_503`, `network`, `timeout`, ...); `detail` has no payload. */
  exportFailed(reason: string, detail: string): void;
}

/** Retry policy (all in milliseconds). */
export interface RetryPolicy {
  initialInterval: number;
  maxInterval: number;
  maxElapsedTime: number;
  multiplier: number;
}

/** How the forwarder reaches the downstream. */
export interface ForwarderOptions {
  /** Full OTLP/HTTP traces URL; undefined drops every span with reason `no_downstream`. */
  endpoint: string | undefined;
  protocol: OtlpProtocol;
  /** Extra request headers. */
  headers: Readonly<Record<string, string>>;
  compression: 'gzip' | 'none';
  /** One attempt's timeout in ms. */
  timeoutMs: number;
  /** Exports in flight at once. */
  concurrency: number;
  /** Most spans in one export. */
  maxBatchSpans: number;
  retry: RetryPolicy;
  queue: SpanQueue;
  /** Builds one request body (in `protocol`) from queue items. */
  encode: (items: readonly QueueItem[]) => Uint8Array;
  /** Reads an OTLP partial success from a 2xx response body; undefined when there is none. */
  readPartialSuccess: (
    body: Buffer,
    protocol: OtlpProtocol,
  ) => { rejectedSpans: number; errorMessage: string } | undefined;
  observer: ForwarderObserver;
  /** Jitter source in [0, 1). Default Math.random. */
  random?: () => number;
}

/** OTLP/HTTP: these statuses are retryable (the specification's list). */
const RETRYABLE_STATUS = new Set([429, 502, 503, 504]);
/** Backoff randomization: each wait is the computed interval ±50 %, as the collector does. */
const RANDOMIZATION = 0.5;
/** Most bytes of a downstream response read (a partial success is small). */
const MAX_RESPONSE_BYTES = 64 * 1024;

type Attempt =
  | { kind: 'response'; status: number; headers: IncomingHttpHeaders; body: Buffer }
  | { kind: 'error'; reason: 'network' | 'timeout' | 'aborted'; detail: string };

/**
 * Parses a `Retry-After` header (delay-seconds or an HTTP date) into milliseconds from `nowMs`.
 * Undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | string[] | undefined, nowMs: number): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined || v.trim() === '') return undefined;
  if (/^\d+$/.test(v.trim())) return Number(v.trim()) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/**
 * The wait before retry number `attempt + 1`: `initialInterval × multiplier^attempt`, capped at
 * `maxInterval`, randomized ±50 % (`random` in [0, 1)), and never shorter than the server's
 * `Retry-After` (the server knows best when it can take more).
 */
export function retryDelay(
  attempt: number,
  policy: RetryPolicy,
  retryAfterMs: number | undefined,
  random: number,
): number {
  const base = Math.min(policy.maxInterval, policy.initialInterval * policy.multiplier ** attempt);
  const wait = base * (1 - RANDOMIZATION + 2 * RANDOMIZATION * random);
  return retryAfterMs === undefined ? wait : Math.max(wait, retryAfterMs);
}

/** Moves spans from the queue to the downstream. */
export class Forwarder {
  private readonly _o: ForwarderOptions;
  private readonly _random: () => number;
  private readonly _agent: HttpAgent | undefined;
  private readonly _url: URL | undefined;
  private _active = 0;
  private _backingOff = 0;
  /** Set at the shutdown deadline: waits end at once and in-flight requests are aborted. */
  private _aborted = false;
  private readonly _wakers = new Set<() => void>();
  private readonly _inflight = new Set<{ destroy: () => void }>();
  private _idle: Array<() => void> = [];

  constructor(options: ForwarderOptions) {
    this._o = options;
    this._random = options.random ?? Math.random;
    if (options.endpoint !== undefined) {
      this._url = new URL(options.endpoint);
      const AgentClass = this._url.protocol === 'https:' ? HttpsAgent : HttpAgent;
      this._agent = new AgentClass({ keepAlive: true, maxSockets: options.concurrency });
    }
  }

  /** True while some export waits to retry: the downstream is failing (the receiver then says 503). */
  get backingOff(): boolean {
    return this._backingOff > 0;
  }

  /** Exports in flight or waiting to retry. */
  get active(): number {
    return this._active;
  }

  /** Starts exports for whatever is queued, up to the concurrency limit. Call after each push. */
  pump(): void {
    if (this._aborted) return;
    if (this._url === undefined) {
      // Metrics-only mode: nothing to send to; count, never pretend.
      const items = this._o.queue.drain();
      const spans = items.reduce((n, i) => n + i.spans, 0);
      if (spans > 0) this._o.observer.dropped(spans, SERVICE_DROP_REASONS.noDownstream);
      this._notifyIdle();
      return;
    }
    while (this._active < this._o.concurrency && this._o.queue.length > 0) {
      const batch = this._o.queue.take(this._o.maxBatchSpans);
      this._active++;
      void this._export(batch).finally(() => {
        this._active--;
        this.pump();
        this._notifyIdle();
      });
    }
  }

  /**
   * Stops taking new work after the queue empties: keeps exporting (and retrying) until the queue
   * is empty or `timeoutMs` passes, then aborts and counts what is left as dropped (`shutdown`).
   * Safe to call twice.
   */
  async shutdown(timeoutMs: number): Promise<void> {
    this.pump();
    const deadline = new Promise<'deadline'>((resolve) => {
      const t = setTimeout(() => resolve('deadline'), timeoutMs);
      t.unref();
    });
    const idle = new Promise<'idle'>((resolve) => {
      if (this._isIdle()) resolve('idle');
      else this._idle.push(() => resolve('idle'));
    });
    if ((await Promise.race([idle, deadline])) === 'deadline') {
      this._aborted = true;
      for (const wake of this._wakers) wake();
      for (const req of this._inflight) req.destroy();
      await new Promise<void>((resolve) => {
        if (this._active === 0) resolve();
        else this._idle.push(resolve);
      });
      const rest = this._o.queue.drain();
      const spans = rest.reduce((n, i) => n + i.spans, 0);
      if (spans > 0) this._o.observer.dropped(spans, SERVICE_DROP_REASONS.shutdown);
    }
    this._agent?.destroy();
  }

  private _isIdle(): boolean {
    return this._active === 0 && this._o.queue.length === 0;
  }

  private _notifyIdle(): void {
    if (!this._isIdle() && !(this._aborted && this._active === 0)) return;
    const waiting = this._idle;
    this._idle = [];
    for (const w of waiting) w();
  }

  private async _export(items: QueueItem[]): Promise<void> {
    const spans = items.reduce((n, i) => n + i.spans, 0);
    let body: Uint8Array;
    try {
      body = this._o.encode(items);
      if (this._o.compression === 'gzip') body = gzipSync(body);
    } catch (e) {
      this._o.observer.exportFailed('encode', (e as Error).message);
      this._o.observer.dropped(spans, SERVICE_DROP_REASONS.rejectedDownstream);
      return;
    }
    const started = Date.now();
    for (let attempt = 0; ; attempt++) {
      if (this._aborted) {
        this._o.observer.dropped(spans, SERVICE_DROP_REASONS.shutdown);
        return;
      }
      const result = await this._post(body);
      if (result.kind === 'response' && result.status >= 200 && result.status < 300) {
        const partial = this._readPartial(result.body);
        const rejected = Math.min(spans, partial?.rejectedSpans ?? 0);
        if (rejected > 0) {
          this._o.observer.exportFailed(
            'partial_success',
            `${rejected} of ${spans} spans rejected by the downstream`,
          );
          this._o.observer.dropped(rejected, SERVICE_DROP_REASONS.rejectedDownstream);
        }
        if (spans - rejected > 0) this._o.observer.forwarded(spans - rejected);
        return;
      }
      if (result.kind === 'error' && result.reason === 'aborted') {
        this._o.observer.dropped(spans, SERVICE_DROP_REASONS.shutdown);
        return;
      }
      const reason = result.kind === 'response' ? `status_${result.status}` : result.reason;
      // Only the status and size: a downstream's error text may quote the payload it refused.
      const detail =
        result.kind === 'response'
          ? `HTTP ${result.status}, ${result.body.length} byte answer`
          : result.detail;
      this._o.observer.exportFailed(reason, detail);
      const retryable = result.kind === 'error' || RETRYABLE_STATUS.has(result.status);
      if (!retryable) {
        this._o.observer.dropped(spans, SERVICE_DROP_REASONS.rejectedDownstream);
        return;
      }
      const retryAfter =
        result.kind === 'response' ? parseRetryAfter(result.headers['retry-after'], Date.now()) : undefined;
      const wait = retryDelay(attempt, this._o.retry, retryAfter, this._random());
      if (Date.now() + wait - started > this._o.retry.maxElapsedTime) {
        this._o.observer.dropped(spans, SERVICE_DROP_REASONS.retryExhausted);
        return;
      }
      await this._sleep(wait);
    }
  }

  private _readPartial(body: Buffer): { rejectedSpans: number; errorMessage: string } | undefined {
    if (body.length === 0) return undefined;
    try {
      return this._o.readPartialSuccess(body, this._o.protocol);
    } catch {
      // A 2xx with an unreadable body is still a success (the OTLP/HTTP specification).
      return undefined;
    }
  }

  private _sleep(ms: number): Promise<void> {
    this._backingOff++;
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this._wakers.delete(done);
        this._backingOff--;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this._wakers.add(done);
    });
  }

  private _post(body: Uint8Array): Promise<Attempt> {
    const url = this._url!;
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const headers: Record<string, string | number> = {
      ...this._o.headers,
      'content-type': this._o.protocol === 'http/json' ? 'application/json' : 'application/x-protobuf',
      'content-length': body.byteLength,
    };
    if (this._o.compression === 'gzip') headers['content-encoding'] = 'gzip';
    return new Promise((resolve) => {
      let settled = false;
      const settle = (a: Attempt) => {
        if (settled) return;
        settled = true;
        this._inflight.delete(handle);
        resolve(a);
      };
      const req = send(
        url,
        { method: 'POST', headers, agent: this._agent, timeout: this._o.timeoutMs },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            size += c.length;
            if (size <= MAX_RESPONSE_BYTES) chunks.push(c);
          });
          res.on('end', () =>
            settle({
              kind: 'response',
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: Buffer.concat(chunks),
            }),
          );
          res.on('error', (e) => settle({ kind: 'error', reason: 'network', detail: e.message }));
        },
      );
      const handle = {
        destroy: () => {
          settle({ kind: 'error', reason: 'aborted', detail: 'shutdown deadline' });
          req.destroy();
        },
      };
      this._inflight.add(handle);
      req.on('timeout', () => {
        settle({ kind: 'error', reason: 'timeout', detail: `no answer within ${this._o.timeoutMs} ms` });
        req.destroy();
      });
      req.on('error', (e: NodeJS.ErrnoException) =>
        settle({ kind: 'error', reason: 'network', detail: e.code ?? e.message }),
      );
      req.end(body);
    });
  }
}
