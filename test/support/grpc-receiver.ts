/**
 * An OTLP/gRPC receiver for tests (@grpc/grpc-js, 127.0.0.1, a free port): the trace, metrics and
 * logs collector services taking messages as bytes, so a test sees exactly what was sent. Stands
 * for the next hop of `continuity serve` with `downstream.protocol: grpc`.
 */
import { Server, ServerCredentials, type sendUnaryData, status } from '@grpc/grpc-js';
import { decodeTraceRequest } from '../../src/otlp/index.js';
import { exportService } from '../../src/service/grpc.js';
import type { Signal } from '../../src/service/transport.js';
import { type ReceivedSpan, spansOf } from './otlp-receiver.js';

/** A running gRPC receiver. */
export interface GrpcReceiver {
  /** `http://127.0.0.1:<port>` (the OTLP gRPC endpoint form). */
  endpoint: string;
  /** Every message received, by signal, in arrival order. */
  messages: Array<{ signal: Signal; body: Buffer }>;
  /** Decoded spans of every trace message. */
  spans: ReceivedSpan[];
  close(): Promise<void>;
}

/** Starts the receiver. */
export async function startGrpcReceiver(): Promise<GrpcReceiver> {
  const messages: GrpcReceiver['messages'] = [];
  const spans: ReceivedSpan[] = [];
  const server = new Server({ 'grpc.max_receive_message_length': 64 * 1024 * 1024 });
  for (const signal of ['traces', 'metrics', 'logs'] as const) {
    server.addService(exportService(signal), {
      Export: (call: { request: Buffer }, callback: sendUnaryData<Buffer>) => {
        messages.push({ signal, body: call.request });
        if (signal === 'traces') {
          try {
            spans.push(...spansOf(decodeTraceRequest(call.request, 'protobuf')));
          } catch (e) {
            callback({ code: status.INVALID_ARGUMENT, details: (e as Error).message });
            return;
          }
        }
        callback(null, Buffer.alloc(0));
      },
    });
  }
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) =>
      e ? reject(e) : resolve(p),
    ),
  );
  return {
    endpoint: `http://127.0.0.1:${port}`,
    messages,
    spans,
    close: () => new Promise((resolve) => server.tryShutdown(() => resolve())),
  };
}
