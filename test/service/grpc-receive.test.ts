/**
 * gRPC messages that never complete (issue 26): ten streams each sending 19 MiB of a message and
 * then nothing held 180 MiB of `continuity serve` for as long as the client liked, with no bearer
 * token sent. The token is checked on the headers, before the message is read, and a message must
 * arrive within `server.requestTimeout`. Memory is read from the real process (`/proc/<pid>/status`).
 */
import { readFileSync } from 'node:fs';
import { type ClientHttp2Session, type ClientHttp2Stream, connect } from 'node:http2';
import { afterEach, describe, expect, it } from 'vitest';
import { GRPC_PATHS } from '../../src/service/transport.js';
import { type ServeProcess, startServe } from './harness.js';

const TOKEN = 'a-test-token-of-some-length';
const MiB = 1024 * 1024;
/** Bytes of a message each stream sends; the message header claims a little more. */
const SENT = 19 * MiB;
const STREAMS = 10;

let serve: ServeProcess | undefined;
let session: ClientHttp2Session | undefined;
afterEach(async () => {
  session?.destroy();
  session = undefined;
  await serve?.stop();
  serve = undefined;
});

function rssBytes(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m![1]) * 1024;
}

interface Held {
  stream: ClientHttp2Stream;
  /** The grpc-status the server answered, once it did. */
  status: () => string | undefined;
  /** Whether all of SENT was taken by the transport. */
  written: () => boolean;
  closed: () => boolean;
}

/** Opens a stream and sends SENT bytes of a message that claims SENT + 1 MiB, never ending it. */
function holdIncomplete(s: ClientHttp2Session, authorization: string | undefined): Held {
  const stream = s.request({
    ':method': 'POST',
    ':path': GRPC_PATHS.traces,
    'content-type': 'application/grpc',
    te: 'trailers',
    ...(authorization && { authorization }),
  });
  let grpcStatus: string | undefined;
  let done = false;
  let closed = false;
  const take = (h: Record<string, unknown>) => {
    const v = h['grpc-status'];
    if (v !== undefined) grpcStatus = String(v);
  };
  stream.on('response', take);
  stream.on('trailers', take);
  stream.on('error', () => undefined);
  stream.on('close', () => {
    closed = true;
  });
  stream.resume();
  const header = Buffer.alloc(5);
  header.writeUInt32BE(SENT + MiB, 1);
  stream.write(header);
  const chunk = Buffer.alloc(MiB, 0x61);
  let n = 0;
  const next = () => {
    if (n === SENT / MiB) {
      done = true;
      return;
    }
    n++;
    stream.write(chunk, next);
  };
  next();
  return { stream, status: () => grpcStatus, written: () => done, closed: () => closed };
}

/** Polls until `ready()` or `rounds` × 100 ms: a bounded loop, no timing asserted. */
async function settle(ready: () => boolean, rounds = 150): Promise<void> {
  for (let i = 0; i < rounds && !ready(); i++) await new Promise((r) => setTimeout(r, 100));
}

describe('continuity serve gRPC receive bounds', () => {
  it('refuses a stream without the bearer token on its headers, before reading its message', async () => {
    serve = await startServe({
      config: { server: { grpcPort: 0, bearerToken: TOKEN }, ui: { enabled: false } },
    });
    session = connect(`http://${serve.grpc}`, { maxSessionMemory: 1024 });
    const before = rssBytes(serve.pid);
    const held = Array.from({ length: STREAMS }, () => holdIncomplete(session!, undefined));
    // Settled once each stream was answered, or all its bytes were taken (the old behaviour).
    await settle(() => held.every((h) => h.status() !== undefined || h.written()));
    await new Promise((r) => setTimeout(r, 500));
    const grown = rssBytes(serve.pid) - before;
    expect(held.map((h) => h.status())).toEqual(Array(STREAMS).fill('16'));
    // Ten 19 MiB streams held 190 MiB before; now at most the flow-control windows and noise.
    expect(grown).toBeLessThan(40 * MiB);
  }, 60_000);

  it('ends a stream whose message does not arrive within server.requestTimeout, and lets its bytes go', async () => {
    serve = await startServe({
      config: { server: { grpcPort: 0, bearerToken: TOKEN, requestTimeout: '2s' }, ui: { enabled: false } },
    });
    session = connect(`http://${serve.grpc}`, { maxSessionMemory: 1024 });
    const held = Array.from({ length: STREAMS }, () => holdIncomplete(session!, `Bearer ${TOKEN}`));
    await settle(() => held.every((h) => h.status() !== undefined));
    expect(held.map((h) => h.status())).toEqual(Array(STREAMS).fill('4'));
    // The server closes each stream, so the client cannot keep it (and its buffered bytes) alive.
    await settle(() => held.every((h) => h.closed()), 50);
    expect(held.every((h) => h.closed())).toBe(true);
  }, 60_000);
});
