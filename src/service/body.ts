/**
 * Reading an OTLP/HTTP request body: content type, content encoding (the Collector's set: gzip,
 * zstd, deflate, zlib, snappy, x-snappy-framed and lz4), the size limit before and after
 * decompression, and the request timeout. Each failure is a {@link BodyError} carrying the HTTP
 * status the OTLP/HTTP specification asks for and a message a client developer can act on.
 *
 * gzip, deflate and zlib are node:zlib's; zstd is `fzstd` (pure JavaScript); snappy blocks are
 * `hysnappy` (WebAssembly); the snappy framing format (./snappy.ts) and LZ4 frames (./lz4.ts) are
 * read by our own code, as no maintained pure-JavaScript package reads them safely. No native
 * addon. Those three run in JavaScript or WebAssembly, synchronously (about 0.2 s for 20 MiB of
 * output), so the service decodes their bodies in a worker thread (./decode-thread.ts), not on the
 * event loop that answers everyone else.
 */
import type { IncomingMessage } from 'node:http';
import { gunzip, inflate } from 'node:zlib';
import { Decompress } from 'fzstd';
import type { BodyPool } from './body-pool.js';
import { DecodeError } from './decode-error.js';
import { decodeLz4 } from './lz4.js';
import { decodeSnappy, decodeSnappyFramed, isSnappyFramed } from './snappy.js';

/** The OTLP/HTTP payload encodings. */
export type OtlpEncoding = 'protobuf' | 'json';

/** Content types per encoding (the OTLP/HTTP specification's). */
export const OTLP_CONTENT_TYPES = {
  protobuf: 'application/x-protobuf',
  json: 'application/json',
} as const satisfies Record<OtlpEncoding, string>;

/** A request body that cannot be used, with the status to answer. */
export class BodyError extends Error {
  override readonly name = 'BodyError';
  /**
   * The HTTP status: 400, 413, 415, or 503 for a body that did not arrive in time (retryable, as
   * the OTLP/HTTP specification lists; 408 is not one a client retries).
   */
  readonly status: 400 | 413 | 415 | 503;
  /** A literal code for metrics and tests. */
  readonly code:
    | 'unsupported_media_type'
    | 'unsupported_encoding'
    | 'too_large'
    | 'bad_compression'
    | 'timeout'
    | 'aborted';
  constructor(status: BodyError['status'], code: BodyError['code'], message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/**
 * The payload encoding from a `Content-Type` header (parameters such as `charset` ignored, case
 * insensitive). Throws a 415 {@link BodyError} for anything else.
 */
export function encodingOf(contentType: string | undefined): OtlpEncoding {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === OTLP_CONTENT_TYPES.protobuf) return 'protobuf';
  if (type === OTLP_CONTENT_TYPES.json) return 'json';
  throw new BodyError(
    415,
    'unsupported_media_type',
    `unsupported Content-Type ${JSON.stringify(contentType ?? '')}: send application/x-protobuf or application/json`,
  );
}

/** The request body codings accepted (`Content-Encoding`), as the Collector's HTTP receiver does. */
export type BodyCoding = 'identity' | 'gzip' | 'zstd' | 'zlib' | 'snappy' | 'x-snappy-framed' | 'lz4';

/**
 * The body's coding from `Content-Encoding`: gzip, zstd, deflate and zlib (both the zlib format,
 * as the Collector reads them), snappy (the block format, or the framing format when the body
 * starts with its stream identifier, as the Collector detects it), x-snappy-framed (the framing
 * format), lz4 (the LZ4 frame format), identity or none. Throws a 415 for other codings.
 */
export function codingOf(contentEncoding: string | undefined): BodyCoding {
  const coding = (contentEncoding ?? '').trim().toLowerCase();
  switch (coding) {
    case '':
    case 'identity':
      return 'identity';
    case 'gzip':
    case 'x-gzip':
      return 'gzip';
    case 'zstd':
      return 'zstd';
    case 'deflate':
    case 'zlib':
      return 'zlib';
    case 'snappy':
    case 'x-snappy-framed':
    case 'lz4':
      return coding;
    default:
      throw new BodyError(
        415,
        'unsupported_encoding',
        `unsupported Content-Encoding ${JSON.stringify(contentEncoding)}: send gzip, zstd, deflate, zlib, snappy, x-snappy-framed, lz4 or no Content-Encoding`,
      );
  }
}

/** Limits on one body. */
export interface BodyLimits {
  /** Most bytes on the wire and after decompression. */
  maxBytes: number;
  /** Milliseconds for the whole body to arrive. */
  timeoutMs: number;
}

/**
 * Reads the whole body, refusing more than `maxBytes` (413) as soon as it is exceeded, whether the
 * client sent a `Content-Length` or not. Does not decompress. With a `pool`, a body whose
 * `Content-Length` is in the pool's range is read straight into pooled memory (see
 * ./body-pool.ts for who gives it back); one that fails to arrive goes back at once.
 */
export function readRawBody(req: IncomingMessage, limits: BodyLimits, pool?: BodyPool): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limits.maxBytes) {
    return Promise.reject(tooLarge(limits.maxBytes, `Content-Length ${declared}`));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    // Node's parser delivers exactly Content-Length bytes (no more: the rest would be the next
    // request), so a body with one fits the buffer taken for it.
    const into = declared === undefined ? undefined : pool?.take(Number(declared));
    let size = 0;
    let done = false;
    const finish = (err: BodyError | undefined, body?: Buffer) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onAborted);
      if (err) {
        if (into) pool!.give(into);
        // Keep reading (and discarding) so the response can still be written on this connection.
        req.resume();
        reject(err);
      } else resolve(body!);
    };
    const onData = (chunk: Buffer) => {
      if (into) {
        if (size + chunk.length > into.length) {
          finish(new BodyError(400, 'aborted', 'the request body is longer than its Content-Length'));
          return;
        }
        chunk.copy(into, size);
        size += chunk.length;
        return;
      }
      size += chunk.length;
      if (size > limits.maxBytes) finish(tooLarge(limits.maxBytes, 'the body'));
      else chunks.push(chunk);
    };
    const onEnd = () => {
      if (into) finish(undefined, size === into.length ? into : into.subarray(0, size));
      else finish(undefined, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onError = () => finish(new BodyError(400, 'aborted', 'the request body could not be read'));
    const onAborted = () => finish(new BodyError(400, 'aborted', 'the client aborted the request'));
    const timer = setTimeout(
      () =>
        finish(
          new BodyError(
            503,
            'timeout',
            `the request body did not arrive within ${limits.timeoutMs} ms (server.requestTimeout); retry`,
          ),
        ),
      limits.timeoutMs,
    );
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onAborted);
  });
}

/** The codings decoded in JavaScript or WebAssembly (node:zlib decodes the others on its pool). */
export type InProcessCoding = 'zstd' | 'snappy' | 'x-snappy-framed' | 'lz4';

/** Decodes bodies of an {@link InProcessCoding} off the event loop (./decode-thread.ts). */
export interface BodyDecoder {
  decode(body: Buffer, coding: InProcessCoding, maxBytes: number): Promise<Buffer>;
}

/**
 * Decompresses a body, refusing more than `maxBytes` of output (413) and bad data (400). zstd,
 * snappy and LZ4 bodies go to `decoder` when one is given, whatever their size: measured, `fzstd`
 * takes about 1.3 ms for a 600-byte body and LZ4 0.15 ms for 900 bytes, against 0.05-0.15 ms of
 * the event loop's time for the trip to the thread. The decoder takes over the body's memory (the
 * caller must not use `body` after).
 */
export function decodeBody(
  body: Buffer,
  coding: BodyCoding,
  maxBytes: number,
  decoder?: BodyDecoder,
): Promise<Buffer> {
  if (coding === 'identity') return Promise.resolve(body);
  if (coding === 'zstd' || coding === 'snappy' || coding === 'x-snappy-framed' || coding === 'lz4') {
    if (decoder) return decoder.decode(body, coding, maxBytes);
    try {
      return Promise.resolve(decodeInProcess(body, coding, maxBytes));
    } catch (e) {
      return Promise.reject(e);
    }
  }
  const run = coding === 'gzip' ? gunzip : inflate;
  return new Promise((resolve, reject) => {
    run(body, { maxOutputLength: maxBytes }, (err, out) => {
      if (!err) return resolve(out);
      if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
        return reject(tooLarge(maxBytes, 'the decompressed body'));
      }
      reject(badCompression(coding, (err as NodeJS.ErrnoException).code ?? err.message));
    });
  });
}

/**
 * The bytes of `view` in an ArrayBuffer of their own, to transfer: its own buffer when the view
 * covers all of it, else a copy (a view into a larger buffer, such as Node's shared pool of small
 * Buffers, must not be transferred: that would detach every other view of it).
 */
export function ownedArrayBuffer(view: Uint8Array): ArrayBuffer {
  const { buffer, byteOffset, byteLength } = view;
  if (buffer instanceof ArrayBuffer && byteOffset === 0 && byteLength === buffer.byteLength) return buffer;
  return buffer.slice(byteOffset, byteOffset + byteLength) as ArrayBuffer;
}

/**
 * Decodes a body of an {@link InProcessCoding} synchronously, on the calling thread. Throws a
 * {@link BodyError} (400 bad data, 413 too large).
 */
export function decodeInProcess(body: Buffer, coding: InProcessCoding, maxBytes: number): Buffer {
  if (coding === 'zstd') return unzstd(body, maxBytes);
  try {
    if (coding === 'lz4') return decodeLz4(body, maxBytes);
    return coding === 'snappy' ? decodeSnappy(body, maxBytes) : decodeSnappyFramed(body, maxBytes);
  } catch (e) {
    if (!(e instanceof DecodeError)) throw e;
    if (e.code === 'too_large') throw tooLarge(maxBytes, 'the decompressed body');
    const framed = coding === 'snappy' && isSnappyFramed(body);
    throw badCompression(coding, framed ? `framing format: ${e.message}` : e.message);
  }
}

function unzstd(body: Buffer, maxBytes: number): Buffer {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const overflow = new Error('too large');
  const stream = new Decompress((chunk) => {
    size += chunk.length;
    if (size > maxBytes) throw overflow;
    chunks.push(chunk);
  });
  try {
    stream.push(body, true);
  } catch (e) {
    if (e === overflow) throw tooLarge(maxBytes, 'the decompressed body');
    throw badCompression('zstd', 'corrupt data');
  }
  return Buffer.concat(chunks, size);
}

function badCompression(coding: BodyCoding, detail: string): BodyError {
  return new BodyError(
    400,
    'bad_compression',
    `Content-Encoding is ${coding} but the body is not valid ${coding} (${detail})`,
  );
}

function tooLarge(maxBytes: number, what: string): BodyError {
  return new BodyError(
    413,
    'too_large',
    `${what} exceeds the limit of ${maxBytes} bytes (server.maxRequestBytes): send smaller batches`,
  );
}
