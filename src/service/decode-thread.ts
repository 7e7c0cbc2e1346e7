/**
 * The body decoder thread: zstd, snappy and LZ4 bodies (the codings decoded in JavaScript and
 * WebAssembly, about 0.2 s for 20 MiB of output) are decoded in one worker thread
 * (./decode-worker.ts), so a large body does not hold up the event loop that answers every other
 * request. gzip, deflate and zlib need no thread of ours: node:zlib decodes them on libuv's pool.
 *
 * A body's memory moves to the thread and the decoded body's memory back (transferred, not
 * copied). The worker starts on the first body and does not keep the process alive while idle.
 * If it stops (a crash, out of memory), the body it was decoding is answered 400, as a body that
 * cannot be decoded (so a client does not retry it into the next crash), the bodies waiting behind
 * it a retryable 503, and the next body starts a new worker. If it cannot start at all (a broken
 * installation), bodies are decoded in place, as without it. No body is sent before the worker
 * says it is ready, so none is lost with a worker that never started.
 */
import { Worker } from 'node:worker_threads';
import {
  type BodyDecoder,
  BodyError,
  decodeInProcess,
  type InProcessCoding,
  ownedArrayBuffer,
} from './body.js';
import { Refusal } from './receiver.js';

/** One body sent to the worker. */
export interface DecodeJob {
  id: number;
  body: ArrayBuffer;
  coding: InProcessCoding;
  maxBytes: number;
}

/** The worker's answer to one job. */
export type DecodeAnswer =
  | { id: number; ok: true; body: ArrayBuffer }
  | { id: number; ok: false; status: BodyError['status']; code: BodyError['code']; message: string }
  | { id: number; ok: false; internal: string };

/** Seconds a client is asked to wait before retrying a body the stopped worker did not reach. */
const RETRY_AFTER_S = 1;

const shuttingDown = () => new Refusal(503, 'shutting down: send to another instance', RETRY_AFTER_S);

/**
 * An error's name and code, never its message: the message of an error from the thread can carry
 * a file path, and this text reaches a client's 400 and the log.
 */
function errorName(e: unknown): string {
  const { name, code } = e as { name?: string; code?: string };
  return `${name ?? 'Error'}${code ? ` ${code}` : ''}`;
}

interface Pending {
  coding: InProcessCoding;
  resolve(body: Buffer): void;
  reject(e: Error): void;
}

/** Options of {@link DecoderThread}. */
export interface DecoderThreadOptions {
  /**
   * Told when the worker stops on its own (`restarts`: the next body starts a new one), or cannot
   * start at all (bodies are decoded in place from then on). `detail` is an error's name and code,
   * or the exit code.
   */
  onStop?: (detail: string, restarts: boolean) => void;
  /** The worker's entry module; default ./decode-worker.js beside this file. */
  entry?: URL;
}

/** Decodes bodies in a worker thread; see the module comment. */
export class DecoderThread implements BodyDecoder {
  /** The worker once it said it is ready (undefined before the first body, and after a stop). */
  private _ready: Promise<Worker> | undefined;
  private _worker: Worker | undefined;
  /** The worker could not start: bodies are decoded in place from then on. */
  private _unavailable = false;
  /** Jobs sent and not answered, in the order sent (the worker answers them in that order). */
  private readonly _pending = new Map<number, Pending>();
  private _nextId = 1;
  private _closed = false;
  private readonly _entry: URL;
  private readonly _onStop: DecoderThreadOptions['onStop'];

  constructor(options: DecoderThreadOptions = {}) {
    this._entry = options.entry ?? new URL('./decode-worker.js', import.meta.url);
    this._onStop = options.onStop;
  }

  /** Decodes `body` (its memory moves to the worker: do not use it after). */
  async decode(body: Buffer, coding: InProcessCoding, maxBytes: number): Promise<Buffer> {
    if (this._closed) throw shuttingDown();
    if (this._unavailable) return decodeInProcess(body, coding, maxBytes);
    let worker: Worker;
    try {
      worker = await this._started();
    } catch (e) {
      // No thread to be had (a broken installation, resources exhausted): decode in place, as
      // without one, rather than refuse bodies. The body was not sent, so it is still here.
      if (!this._unavailable) {
        this._unavailable = true;
        // The message is errorName's or the exit's, never a path.
        this._onStop?.((e as Error).message, false);
      }
      return decodeInProcess(body, coding, maxBytes);
    }
    if (this._closed) throw shuttingDown();
    return new Promise((resolve, reject) => {
      const id = this._nextId++;
      this._pending.set(id, { coding, resolve, reject });
      if (this._pending.size === 1) worker.ref();
      const job: DecodeJob = { id, body: ownedArrayBuffer(body), coding, maxBytes };
      worker.postMessage(job, [job.body]);
    });
  }

  /** Stops the worker; bodies not yet decoded are answered 503 (retryable). Safe to call twice. */
  async close(): Promise<void> {
    this._closed = true;
    this._failAll(shuttingDown);
    const worker = this._worker;
    this._worker = undefined;
    this._ready = undefined;
    await worker?.terminate();
  }

  /** The worker, started on first use; resolves once it says it is ready, rejects if it cannot start. */
  private _started(): Promise<Worker> {
    this._ready ??= new Promise<Worker>((resolve, reject) => {
      let worker: Worker;
      try {
        worker = new Worker(this._entry);
      } catch (e) {
        return reject(new Error(errorName(e)));
      }
      worker.unref();
      this._worker = worker;
      let ready = false;
      let failure = '';
      worker.on('message', (answer: DecodeAnswer | { ready: true }) => {
        if ('ready' in answer) {
          ready = true;
          resolve(worker);
        } else this._answered(worker, answer);
      });
      // An uncaught error in the worker: 'exit' follows, which answers what was waiting.
      worker.on('error', (e) => {
        failure = errorName(e);
      });
      worker.on('exit', (code) => {
        if (this._worker !== worker) return; // closed, or already replaced
        this._worker = undefined;
        this._ready = undefined;
        const detail = failure || `exit code ${code}`;
        if (!ready) return reject(new Error(detail));
        this._onStop?.(detail, true);
        this._stopped(detail);
      });
    });
    return this._ready;
  }

  /** The worker stopped: the body it was on is answered 400, the ones behind it 503. */
  private _stopped(detail: string): void {
    let first = true;
    this._failAll((p) => {
      if (!first) return new Refusal(503, 'the body decoder stopped before this body; retry', RETRY_AFTER_S);
      first = false;
      return new BodyError(
        400,
        'bad_compression',
        `Content-Encoding is ${p.coding} but the decoder stopped on this body (${detail}): send it with another Content-Encoding`,
      );
    });
  }

  private _answered(worker: Worker, answer: DecodeAnswer): void {
    const p = this._pending.get(answer.id);
    if (!p) return;
    this._pending.delete(answer.id);
    if (this._pending.size === 0) worker.unref();
    if (answer.ok) p.resolve(Buffer.from(answer.body));
    else if ('internal' in answer) p.reject(new Error(answer.internal));
    else p.reject(new BodyError(answer.status, answer.code, answer.message));
  }

  private _failAll(error: (p: Pending) => Error): void {
    const pending = [...this._pending.values()];
    this._pending.clear();
    for (const p of pending) p.reject(error(p));
  }
}
