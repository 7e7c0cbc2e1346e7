// @ts-check
// The OTLP load both service benches send and measure with (bench/service.bench.js, and
// bench/stack/collector.js through a Collector): protobuf batches of ordinary and compaction
// spans, a sink that counts what arrives (and when a probe does), the senders, `continuity serve`
// and the pass-through relay (bench/relay.js) as children stopped when the bench exits, and the
// CPU figures of a child from /proc. Not a bench itself (bench/run.js runs *.bench.js).
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs/light.js';
import { snapshotAttributes } from '../dist/otel/attributes.js';
import { encodeTraceRequest, recordToAttributes } from '../dist/otlp/index.js';

const here = dirname(fileURLToPath(import.meta.url));
const BIN = join(here, '..', 'bin', 'continuity.js');
/** Spans per request. */
export const BATCH = 512;
/** Requests in flight. */
export const CONCURRENCY = 4;

// ── Load ─────────────────────────────────────────────────────────────────────────────────────

export const DIGEST = (/** @type {number} */ i) => `sha256:${i.toString(16).padStart(64, '0')}`;
const NAMES = ['scope', 'approval_boundary', 'target', 'constraint', 'acceptance_test'];

/** A 5-decision snapshot for one session. @param {string} sessionId @param {string} at */
export function snapshot(sessionId, at) {
  /** @type {Record<string, {digest: string, revision: number, observedAt: string, source: string}>} */
  const decisions = {};
  NAMES.forEach((n, i) => {
    decisions[n] = { digest: DIGEST(i + 1), revision: 1, observedAt: at, source: 'task-record' };
  });
  return { sessionId, capturedAt: at, normalizerVersion: 1, decisions };
}

let idSeq = 1;
export const hex = (/** @type {number} */ n, /** @type {number} */ len) => n.toString(16).padStart(len, '0');

/** One OTLP span object. @param {string} name @param {Record<string, unknown>} attributes */
export function span(name, attributes) {
  const id = idSeq++;
  return {
    traceId: hex(id, 32),
    spanId: hex(id, 16),
    name,
    kind: 1,
    startTimeUnixNano: '1764500000000000000',
    endTimeUnixNano: '1764500000100000000',
    attributes: recordToAttributes(/** @type {never} */ (attributes)),
  };
}

/**
 * A compaction span of session `sid` (boundary `<sid>-b`) with a 5-decision snapshot.
 * @param {'pre' | 'post'} phase @param {string} sid @param {string} at
 */
function compactionSpan(phase, sid, at) {
  const ctx = { boundaryId: `${sid}-b`, runtime: 'sdk', trigger: 'auto' };
  return span(`continuity.compaction.${phase}`, snapshotAttributes(phase, snapshot(sid, at), ctx));
}

/**
 * `count` protobuf batches of 512 spans: ordinary spans with a few attributes, and per batch
 * `pairs` pre/post pairs in fresh sessions (or `pres` pre spans only).
 * @param {number} count @param {{ pairs?: number, pres?: number }} mix @param {string} tag
 */
export function batches(count, mix, tag) {
  const out = [];
  for (let b = 0; b < count; b++) {
    const spans = [];
    for (let p = 0; p < (mix.pairs ?? 0); p++) {
      const sid = `${tag}-${b}-${p}`;
      spans.push(compactionSpan('pre', sid, '2026-11-30T10:00:00Z'));
      spans.push(compactionSpan('post', sid, '2026-11-30T10:05:00Z'));
    }
    for (let p = 0; p < (mix.pres ?? 0); p++) {
      spans.push(compactionSpan('pre', `${tag}-${b}-${p}`, '2026-11-30T10:00:00Z'));
    }
    while (spans.length < BATCH) {
      spans.push(
        span('llm.call', {
          'gen_ai.system': 'example',
          'gen_ai.request.model': 'model-1',
          'gen_ai.usage.input_tokens': 1200,
          'http.response.status_code': 200,
        }),
      );
    }
    out.push(
      Buffer.from(
        encodeTraceRequest(
          {
            resourceSpans: [
              {
                resource: { attributes: recordToAttributes({ 'service.name': 'bench-agent' }) },
                scopeSpans: [{ scope: { name: 'bench' }, spans }],
              },
            ],
          },
          'protobuf',
        ),
      ),
    );
  }
  return out;
}

// ── The sink: counts spans by walking the protobuf wire format (no full decode) ──────────────

/** Spans in an ExportTraceServiceRequest body. @param {Uint8Array} body */
export function countSpans(body) {
  let n = 0;
  const top = protobuf.Reader.create(body);
  while (top.pos < top.len) {
    const tag = top.uint32();
    if (tag >>> 3 !== 1 || (tag & 7) !== 2) {
      top.skipType(tag & 7);
      continue;
    }
    const rs = protobuf.Reader.create(top.bytes());
    while (rs.pos < rs.len) {
      const t = rs.uint32();
      if (t >>> 3 !== 2 || (t & 7) !== 2) {
        rs.skipType(t & 7);
        continue;
      }
      const ss = protobuf.Reader.create(rs.bytes());
      while (ss.pos < ss.len) {
        const s = ss.uint32();
        if (s >>> 3 === 2) n++;
        ss.skipType(s & 7);
      }
    }
  }
  return n;
}

/**
 * An OTLP/HTTP endpoint that counts the spans it receives and answers 200, and notes when a
 * probe's trace id arrives. `until(n)` rejects after `timeoutMs` (default 120 s) without them:
 * nothing may hang.
 * @param {{ timeoutMs?: number }} [options]
 */
export async function startSink({ timeoutMs = 120_000 } = {}) {
  let spans = 0;
  /** @type {Array<() => void>} */
  let waiters = [];
  /** @type {Map<string, { id: Buffer, sent: bigint, resolve: (ms: number) => void }>} */
  const probes = new Map();
  const server = createServer((req, res) => {
    /** @type {Buffer[]} */
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const now = process.hrtime.bigint();
      for (const [key, p] of probes) {
        if (body.indexOf(p.id) >= 0) {
          probes.delete(key);
          p.resolve(Number(now - p.sent) / 1e6);
        }
      }
      spans += countSpans(body);
      res.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-length': 0 });
      res.end();
      const w = waiters;
      waiters = [];
      for (const f of w) f();
    });
  });
  // Above the senders' keep-alive: Node's 5 s default closes a socket a client is just reusing.
  server.keepAliveTimeout = 65_000;
  await new Promise((r) => server.listen(0, '127.0.0.1', () => r(undefined)));
  const port = /** @type {import('node:net').AddressInfo} */ (server.address()).port;
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    get spans() {
      return spans;
    },
    reset() {
      spans = 0;
    },
    /** Resolves once `n` spans arrived. @param {number} n */
    until(n) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`sink: ${spans} of ${n} spans after ${timeoutMs / 1000} s`)),
          timeoutMs,
        );
        const check = () => {
          if (spans < n) return waiters.push(check);
          clearTimeout(timer);
          resolve(undefined);
        };
        check();
      });
    },
    /** Resolves with the ms from `sent` until a body holding `id` arrived. @param {Buffer} id @param {bigint} sent */
    probe(id, sent) {
      return new Promise((resolve) => probes.set(id.toString('hex'), { id, sent, resolve }));
    },
    close: () => new Promise((r) => server.close(() => r(undefined))),
  };
}

/** @typedef {Awaited<ReturnType<typeof startSink>>} Sink */

/**
 * CPU time (user + system, every thread) a process has used, ms; NaN where /proc is not there.
 * Unlike throughput it does not move when other processes take the cores, so it is printed beside.
 * @param {number | undefined} pid
 */
export function cpuMsOf(pid) {
  return ticksMs(`/proc/${pid}/stat`);
}

/**
 * CPU time of a process's main thread alone (its JavaScript, and what V8 does on it), ms. The
 * rest of {@link cpuMsOf} is V8's helper threads (concurrent marking, parallel scavenges,
 * compilation) and libuv's (fdatasync): the main thread is what bounds a Node service's
 * throughput, the whole process what it costs the machine.
 * @param {number | undefined} pid
 */
export function mainThreadMsOf(pid) {
  return ticksMs(`/proc/${pid}/task/${pid}/stat`);
}

/** utime + stime of a proc(5) `stat` file, ms; NaN where it cannot be read. @param {string} path */
function ticksMs(path) {
  try {
    const stat = readFileSync(path, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime, fields 14 and 15 of proc(5), in clock ticks (100 per second on Linux).
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}

// ── Children ─────────────────────────────────────────────────────────────────────────────────

/** @type {import('node:child_process').ChildProcess[]} */
const children = [];
process.on('exit', () => {
  for (const c of children)
    if (c.exitCode === null && c.signalCode === null && c.pid) process.kill(c.pid, 'SIGKILL');
});

/**
 * `spawn`, the child stopped by PID when this process exits, whatever happened.
 * @param {string} command @param {string[]} args @param {import('node:child_process').SpawnOptions} options
 */
export function spawnChild(command, args, options) {
  const proc = spawn(command, args, options);
  children.push(proc);
  return proc;
}

/**
 * A Node child that prints its addresses as one JSON line on stdout (`continuity serve`, the relay).
 * @param {string[]} args @param {NodeJS.ProcessEnv} [env]
 */
export async function child(args, env) {
  const proc = spawnChild(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH, ...env },
  });
  let err = '';
  proc.stderr.on('data', (d) => {
    err += d;
  });
  const line = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve(out.slice(0, nl));
    });
    proc.once('exit', (code) => reject(new Error(`child exited ${code}: ${err}`)));
  });
  const addr = JSON.parse(line);
  return {
    otlp: /** @type {string} */ (addr.otlp),
    grpc: /** @type {string | undefined} */ (addr.grpc),
    metrics: /** @type {string | undefined} */ (addr.metrics),
    pid: proc.pid,
    stderr: () => err,
    stop: () =>
      new Promise((resolve) => {
        proc.once('exit', () => resolve(undefined));
        proc.kill('SIGTERM');
      }),
  };
}

/**
 * `continuity serve` in a child, its configuration (`extra` replaces whole top-level keys) in
 * `stateDir`. @param {string} sinkUrl @param {string} stateDir @param {Record<string, unknown>} [extra]
 * @param {NodeJS.ProcessEnv} [env] @param {string[]} [nodeFlags] node options before the script
 */
export async function startService(sinkUrl, stateDir, extra = {}, env = undefined, nodeFlags = []) {
  mkdirSync(stateDir, { recursive: true });
  const file = join(stateDir, 'bench.yaml');
  writeFileSync(
    file,
    JSON.stringify({
      server: { port: 0 },
      downstream: { endpoint: sinkUrl, queueMaxSpans: 1_000_000 },
      state: { dir: join(stateDir, 'state') },
      log: { level: 'warn' },
      ...extra,
    }),
  );
  return child([...nodeFlags, BIN, 'serve', '--config', file], env);
}

/** The senders' connections: CONCURRENCY kept alive. Destroy it when done. */
export const clientAgent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });

/** POSTs one protobuf body; rejects unless 200. @param {string} url @param {Buffer} body @param {Agent} [agent] */
export function post(url, body, agent = clientAgent) {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/x-protobuf', 'content-length': body.length },
      },
      (res) => {
        res.resume();
        res.on('end', () =>
          res.statusCode === 200 ? resolve(undefined) : reject(new Error(`status ${res.statusCode}`)),
        );
      },
    );
    req.on('error', (e) => reject(new Error(`POST ${url}: ${e.message}`)));
    req.end(body);
  });
}

/** Sends every body with CONCURRENCY in flight. @param {string} url @param {Buffer[]} bodies */
export async function sendAll(url, bodies) {
  let next = 0;
  const worker = async () => {
    while (next < bodies.length) await post(url, /** @type {Buffer} */ (bodies[next++]));
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

/**
 * Spans/s from the first request until the sink has them all.
 * @param {string} url @param {Buffer[]} bodies @param {Sink} sink
 */
export async function throughput(url, bodies, sink) {
  sink.reset();
  const t0 = process.hrtime.bigint();
  await sendAll(url, bodies);
  await sink.until(bodies.length * BATCH);
  return (bodies.length * BATCH) / (Number(process.hrtime.bigint() - t0) / 1e9);
}

/** @param {number[]} xs */
export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return /** @type {number} */ (s[Math.floor(s.length / 2)]);
}

export const fmt = (/** @type {number} */ n) => Math.round(n).toLocaleString('en-US');

/** The pass-through relay: `node bench/relay.js <downstream url>`. */
export const RELAY_SCRIPT = join(here, 'relay.js');

/**
 * The baseline: a pass-through relay on the same HTTP stack as the service, forwarding to
 * `downstream`. @param {string} downstream
 */
export function startRelay(downstream) {
  return child([RELAY_SCRIPT, downstream]);
}
