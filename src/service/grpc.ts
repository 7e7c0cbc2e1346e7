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
import {
  Metadata,
  Server,
  ServerCredentials,
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
  });
  const handler =
    (signal: Signal) =>
    (call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>): void => {
      const fail = (code: number, details: string, metadata?: Metadata) => {
        target.answered(code);
        callback(metadata ? { code, details, metadata } : { code, details });
      };
      if (!authorized(call.metadata, target.tokenHash)) {
        fail(
          status.UNAUTHENTICATED,
          'missing or wrong bearer token: send authorization: Bearer <token> metadata',
        );
        return;
      }
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
