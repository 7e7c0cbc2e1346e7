/**
 * The OTLP/gRPC receiver of `continuity serve` (@grpc/grpc-js): the trace, metrics and logs
 * collector services on 127.0.0.1:4317 by default. Messages are taken as bytes (no generated
 * stubs), so a trace request goes through the same walk-and-splice path as an OTLP/HTTP protobuf
 * body, and metrics and logs pass through untouched. gzip and deflate message compression is
 * grpc-js's own.
 *
 * Status codes as the OTLP specification says: `OK` (with `partial_success` when compaction spans
 * were refused), `INVALID_ARGUMENT` for a message that is not a valid request, `UNAUTHENTICATED`
 * without the bearer token, `RESOURCE_EXHAUSTED` (queue full while the downstream keeps up) and
 * `UNAVAILABLE` (downstream failing, shutting down, pending state not writable), both with a
 * `google.rpc.RetryInfo` so clients retry after the delay.
 */
import { timingSafeEqual } from 'node:crypto';
import { constants as http2Constants, type ServerHttp2Stream } from 'node:http2';
import {
  Metadata,
  Server,
  ServerCredentials,
  ServerInterceptingCall,
  type ServerInterceptor,
  type ServerUnaryCall,
  type ServiceDefinition,
  type sendUnaryData,
  status,
} from '@grpc/grpc-js';
import { Writer } from 'protobufjs/light.js';
import { hashToken, MalformedRequest, type PartialSuccess, Refusal } from './receiver.js';
import { GRPC_PATHS, type Signal, STATUS_DETAILS_KEY, statusWithRetryInfo } from './transport.js';

/** What the gRPC receiver needs from the service. */
export interface GrpcTarget {
  /** SHA-256 of the bearer token, when one is required (`authorization: Bearer <token>` metadata). */
  tokenHash: Buffer | undefined;
  /** Most bytes of one message. */
  maxMessageBytes: number;
  /**
   * The request message must have arrived this long (ms) after the call's headers, else the call
   * is ended with `DEADLINE_EXCEEDED` and what it had buffered is let go (`server.requestTimeout`).
   */
  receiveTimeoutMs: number;
  /** A trace request's bytes: the partial success to report. Throws Refusal / MalformedRequest. */
  traces(body: Buffer): Promise<PartialSuccess | undefined>;
  /** A metrics or logs request's bytes, queued as they are. Throws Refusal. */
  passthrough(signal: Exclude<Signal, 'traces'>, body: Buffer): void;
  /** Counts one answered call by gRPC status code. */
  answered(code: number): void;
}

const bytes = (b: Buffer) => b;

function method(path: string) {
  return {
    path,
    requestStream: false,
    responseStream: false,
    requestSerialize: bytes,
    requestDeserialize: bytes,
    responseSerialize: bytes,
    responseDeserialize: bytes,
  } as const;
}

/** The OTLP collector service of `signal` with its one `Export` method, messages as bytes. */
export function exportService(signal: Signal): ServiceDefinition {
  return { Export: method(GRPC_PATHS[signal]) } as unknown as ServiceDefinition;
}

/** An Export*ServiceResponse with `partial_success { 1: rejected, 2: message }` (field 1). */
function partialResponse(partial: PartialSuccess | undefined): Buffer {
  if (!partial || partial.rejectedSpans === 0) return Buffer.alloc(0);
  const inner = Writer.create()
    .uint32(8)
    .int64(partial.rejectedSpans)
    .uint32(18)
    .string(partial.errorMessage)
    .finish();
  return Buffer.from(Writer.create().uint32(10).bytes(inner).finish());
}

function authorized(metadata: Metadata, tokenHash: Buffer | undefined): boolean {
  if (tokenHash === undefined) return true;
  const header = metadata.get('authorization')[0];
  if (typeof header !== 'string' || !/^Bearer /i.test(header)) return false;
  return timingSafeEqual(hashToken(header.slice(7).trim()), tokenHash);
}

/**
 * Checks the bearer token on the call's headers, before the message is read, and ends a call
 * whose message has not arrived within `receiveTimeoutMs`.
 *
 * Why an interceptor: the handler of a unary method sees the request only once its last byte has
 * arrived, and grpc-js keeps the bytes of a message that never completes for as long as the
 * client holds the stream open (ten 19 MiB messages held 180 MiB for a minute, with no token
 * sent). Refused here, at the headers, the message is never read: grpc-js reads a stream's data
 * only once the handler asks for it, so an unauthenticated stream holds at most HTTP/2's flow
 * control window. An authenticated (or token-less) stream holds at most `maxMessageBytes`, for at
 * most `receiveTimeoutMs`.
 */
function receiveGuard(target: GrpcTarget): ServerInterceptor {
  return (_method, call) => {
    let timer: NodeJS.Timeout | undefined;
    const stop = () => {
      clearTimeout(timer);
      timer = undefined;
    };
    const end = (code: number, details: string) => {
      stop();
      target.answered(code);
      call.sendStatus({ code, details, metadata: new Metadata() });
      stopReceiving(call);
    };
    return new ServerInterceptingCall(call, {
      start: (next) => {
        timer = setTimeout(
          () =>
            end(
              status.DEADLINE_EXCEEDED,
              `the request message did not arrive within ${target.receiveTimeoutMs} ms (server.requestTimeout)`,
            ),
          target.receiveTimeoutMs,
        );
        timer.unref();
        next({
          onReceiveMetadata: (metadata, pass) => {
            if (!authorized(metadata, target.tokenHash)) {
              end(
                status.UNAUTHENTICATED,
                'missing or wrong bearer token: send authorization: Bearer <token> metadata',
              );
              return;
            }
            pass(metadata);
          },
          onReceiveMessage: (message, pass) => {
            stop();
            pass(message);
          },
          onCancel: stop,
        });
      },
      sendStatus: (s, next) => {
        stop();
        next(s);
      },
    });
  };
}

/**
 * Resets the call's HTTP/2 stream with `NO_ERROR` once its status is sent: a server that answered
 * before the whole request arrived may ask the client to stop sending that way (RFC 9113 §8.1).
 * Why: grpc-js ends its half of the stream and then reads and drops whatever else comes, and
 * keeps the part of the message it had already read for as long as the client holds its half
 * open; ten such streams also made nghttp2 give up on the whole connection. grpc-js gives no API
 * for it: its base call keeps the stream as `stream` (outside its types; the test in
 * test/service/grpc-receive.test.ts fails if that changes).
 */
function stopReceiving(call: unknown): void {
  const stream = (call as { stream?: Partial<ServerHttp2Stream> }).stream;
  if (typeof stream?.close !== 'function' || typeof stream.respond !== 'function') return;
  const close = stream.close.bind(stream);
  // After the status frames already queued.
  setImmediate(() => {
    if (!stream.closed && !stream.destroyed) close(http2Constants.NGHTTP2_NO_ERROR);
  });
}

/** The gRPC error for a refusal: RESOURCE_EXHAUSTED / UNAVAILABLE with RetryInfo. */
function refusalError(r: Refusal) {
  const code = r.status === 429 ? status.RESOURCE_EXHAUSTED : status.UNAVAILABLE;
  const metadata = new Metadata();
  metadata.set(STATUS_DETAILS_KEY, statusWithRetryInfo(code, r.message, r.retryAfterSeconds));
  return { code, details: r.message, metadata };
}

/** Starts the gRPC server on `host:port`; resolves with it and the port bound. */
export async function startGrpcServer(
  host: string,
  port: number,
  target: GrpcTarget,
): Promise<{ server: Server; port: number }> {
  const server = new Server({
    'grpc.max_receive_message_length': target.maxMessageBytes,
    'grpc.max_send_message_length': 4 * 1024 * 1024,
    interceptors: [receiveGuard(target)],
  });
  const handler =
    (signal: Signal) =>
    (call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>): void => {
      const fail = (code: number, details: string, metadata?: Metadata) => {
        target.answered(code);
        callback(metadata ? { code, details, metadata } : { code, details });
      };
      // The token was checked on the headers, before the message was read (receiveGuard).
      const body = call.request;
      const done = (response: Buffer) => {
        target.answered(status.OK);
        callback(null, response);
      };
      const onError = (e: unknown) => {
        if (e instanceof Refusal) {
          const err = refusalError(e);
          fail(err.code, err.details, err.metadata);
        } else if (e instanceof MalformedRequest) {
          fail(status.INVALID_ARGUMENT, `cannot decode the Export request: ${e.message}`);
        } else {
          fail(status.INTERNAL, `internal error: ${(e as Error).message ?? String(e)}`);
        }
      };
      if (signal === 'traces') {
        target.traces(body).then((partial) => done(partialResponse(partial)), onError);
        return;
      }
      try {
        target.passthrough(signal, body);
        done(Buffer.alloc(0));
      } catch (e) {
        onError(e);
      }
    };
  for (const signal of ['traces', 'metrics', 'logs'] as const) {
    server.addService(exportService(signal), { Export: handler(signal) });
  }
  const bound = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${host}:${port}`, ServerCredentials.createInsecure(), (err, p) => {
      if (err) {
        reject(
          new Error(
            /in use|EADDRINUSE/i.test(err.message)
              ? `cannot listen on ${host}:${port} (gRPC): the address is in use (set server.grpcPort; 0 picks a free port, false turns gRPC off)`
              : `cannot listen on ${host}:${port} (gRPC): ${err.message}`,
          ),
        );
      } else resolve(p);
    });
  });
  return { server, port: bound };
}

/** Stops the gRPC server: no new calls, calls in flight finish, then everything is cut at `ms`. */
export function stopGrpcServer(server: Server, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, ms);
    server.tryShutdown(() => {
      clearTimeout(t);
      resolve();
    });
  });
}
