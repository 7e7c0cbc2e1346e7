// @ts-check
// `continuity serve`, measured against baselines in the same run (machines here are shared and
// noisy, so absolute figures are printed only beside their baseline):
//
// 1. Ingest throughput, spans/s, OTLP/HTTP protobuf in batches of 512: a client sends to the
//    service (a `node bin/continuity.js serve` child process), the service forwards to a sink;
//    the baseline is a pass-through relay on the same HTTP stack (node:http in a child process:
//    read the body, answer 200, forward the bytes with the same keep-alive concurrency). Measured
//    from the first request until the sink has every span. Two mixes: ordinary spans only, and
//    batches where 16 of the 512 spans are compaction spans (pre/post pairs), so the service also
//    correlates, journals (fsync), enriches and splices.
// 2. Memory per pending boundary with 5 decisions at 100 000 pending boundaries: the correlator's
//    heap (in process, after GC) against an empty one; and the service's resident memory growth
//    from /metrics after 100 000 pre spans were sent to it.
// 3. A million pending boundaries (BENCH_SERVE_PENDING to change it; 1 decision each): resident
//    memory per boundary, how long each background snapshot took (the worker's own figure, from
//    the service log) and the final one at SIGTERM, and the longest answer to a one-span probe
//    request sent every 25 ms throughout (against the median probe: what persistence adds).
//
// Run: npm run bench (builds first), or node --expose-gc bench/run.js service after `npm run build`.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs/light.js';
import { Correlator } from '../dist/correlate/correlator.js';
import { readCompactionSpan, snapshotAttributes } from '../dist/otel/attributes.js';
import { encodeTraceRequest, recordToAttributes } from '../dist/otlp/index.js';

const here = dirname(fileURLToPath(import.meta.url));
const BIN = join(here, '..', 'bin', 'continuity.js');
const gc = /** @type {(() => void) | undefined} */ (globalThis.gc);
export const BATCH = 512;
export const CONCURRENCY = 4;
/** A floor under V8's old-generation limit, MiB (docs/service.md, "Run it"). */
export const HEAP_FLOOR = '--initial-old-space-size=128';

// ── Load ─────────────────────────────────────────────────────────────────────────────────────

const DIGEST = (/** @type {number} */ i) => `sha256:${i.toString(16).padStart(64, '0')}`;
const NAMES = ['scope', 'approval_boundary', 'target', 'constraint', 'acceptance_test'];

/** A 5-decision snapshot for one session. @param {string} sessionId @param {string} at */
function snapshot(sessionId, at) {
  /** @type {Record<string, {digest: string, revision: number, observedAt: string, source: string}>} */
  const decisions = {};
  NAMES.forEach((n, i) => {
    decisions[n] = { digest: DIGEST(i + 1), revision: 1, observedAt: at, source: 'task-record' };
  });
  return { sessionId, capturedAt: at, normalizerVersion: 1, decisions };
}

let idSeq = 1;
const hex = (/** @type {number} */ n, /** @type {number} */ len) => n.toString(16).padStart(len, '0');

/** One OTLP span object. @param {string} name @param {Record<string, unknown>} attributes */
function span(name, attributes) {
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
      const ctx = { boundaryId: `${sid}-b`, runtime: 'sdk', trigger: 'auto' };
      spans.push(
        span(
          'continuity.compaction.pre',
          snapshotAttributes('pre', snapshot(sid, '2026-11-30T10:00:00Z'), ctx),
        ),
      );
      spans.push(
        span(
          'continuity.compaction.post',
          snapshotAttributes('post', snapshot(sid, '2026-11-30T10:05:00Z'), ctx),
        ),
      );
    }
    for (let p = 0; p < (mix.pres ?? 0); p++) {
      const sid = `${tag}-${b}-${p}`;
      const ctx = { boundaryId: `${sid}-b`, runtime: 'sdk', trigger: 'auto' };
      spans.push(
        span(
          'continuity.compaction.pre',
          snapshotAttributes('pre', snapshot(sid, '2026-11-30T10:00:00Z'), ctx),
        ),
      );
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

export async function startSink() {
  let spans = 0;
  /** @type {Array<() => void>} */
  let waiters = [];
  const server = createServer((req, res) => {
    /** @type {Buffer[]} */
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      spans += countSpans(Buffer.concat(chunks));
      res.writeHead(200, { 'content-length': 0 });
      res.end();
      const w = waiters;
      waiters = [];
      for (const f of w) f();
    });
  });
  server.keepAliveTimeout = 30_000;
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
    /** Resolves once `n` spans arrived; rejects after 120 s without them (nothing may hang). @param {number} n */
    until(n) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`sink: ${spans} of ${n} spans after 120 s`)),
          120_000,
        );
        const check = () => {
          if (spans < n) return waiters.push(check);
          clearTimeout(timer);
          resolve(undefined);
        };
        check();
      });
    },
    close: () => new Promise((r) => server.close(() => r(undefined))),
  };
}

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

/** Every child started, stopped by PID when this process exits, whatever happened. */
/** @type {import('node:child_process').ChildProcess[]} */
const children = [];
process.on('exit', () => {
  for (const c of children)
    if (c.exitCode === null && c.signalCode === null && c.pid) process.kill(c.pid, 'SIGKILL');
});

/** @param {string[]} args @param {NodeJS.ProcessEnv} [env] */
export async function child(args, env) {
  const proc = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH, ...env },
  });
  children.push(proc);
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

const clientAgent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });

/** @param {string} url @param {Buffer} body */
export function post(url, body) {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent: clientAgent,
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
 * @param {string} url @param {Buffer[]} bodies @param {Awaited<ReturnType<typeof startSink>>} sink
 */
export async function throughput(url, bodies, sink) {
  sink.reset();
  const t0 = process.hrtime.bigint();
  await sendAll(url, bodies);
  await sink.until(bodies.length * BATCH);
  return (bodies.length * BATCH) / (Number(process.hrtime.bigint() - t0) / 1e9);
}

/** The body of a GET. @param {string} url @returns {Promise<string>} */
function getText(url) {
  return new Promise((resolve, reject) => {
    request(url, (res) => {
      let body = '';
      res.on('data', (d) => {
        body += d;
      });
      res.on('end', () => resolve(body));
    })
      .on('error', reject)
      .end();
  });
}

/** @param {number[]} xs */
export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return /** @type {number} */ (s[Math.floor(s.length / 2)]);
}

export const fmt = (/** @type {number} */ n) => Math.round(n).toLocaleString('en-US');

async function main() {
  const tmp = mkdtempSync(join(tmpdir(), 'bench-serve-'));
  const sink = await startSink();
  try {
    // ── 1. Throughput ──
    if (section(1)) await throughputSection(sink, tmp);
    // ── 2. Memory per pending boundary ──
    if (section(2)) await memorySection(sink);
    // ── 3. A million pending boundaries ──
    if (section(3)) await million(sink.url);
  } finally {
    await sink.close();
    clientAgent.destroy();
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** BENCH_SERVE_SECTIONS (e.g. "1" or "1,2") runs only those sections; all by default. @param {number} n */
function section(n) {
  const only = process.env.BENCH_SERVE_SECTIONS;
  return only === undefined || only.split(',').map(Number).includes(n);
}

/** Section 1. @param {Awaited<ReturnType<typeof startSink>>} sink @param {string} tmp */
async function throughputSection(sink, tmp) {
  const ROUNDS = 5;
  // Requests per round. Rounds are short (the relay's well under a second); BENCH_SERVE_N makes
  // them longer, which also takes the service past the journal size where it snapshots in the
  // background (64 MiB, about 3 200 compaction requests), as a long-running one does.
  const N = Number(process.env.BENCH_SERVE_N ?? 120);
  const relay = await child([fileURLToPath(import.meta.url), '--relay', sink.url]);
  // The service with no floor under V8's old-generation limit (CONTINUITY_SERVE_HEAP_FLOOR_MB=0),
  // as it starts (on Node 20, which has no execve, the floor applied from inside the process:
  // src/service/heap-floor.ts; on Node 22.15 and later, on the command line), and started with the
  // floor on the command line (docs/service.md, "Run it"): with requests queued for the
  // downstream, their objects are promoted and die old, and without a floor V8 sets its limit
  // close above a small heap and runs a full mark-compact every 50-100 requests.
  const services = [
    {
      label: 'service, no floor',
      proc: await startService(sink.url, join(tmp, 'nofloor'), {}, { CONTINUITY_SERVE_HEAP_FLOOR_MB: '0' }),
    },
    { label: 'service as it starts', proc: await startService(sink.url, join(tmp, 'default')) },
    {
      label: `service, node ${HEAP_FLOOR}`,
      proc: await startService(sink.url, join(tmp, 'floor'), {}, undefined, [HEAP_FLOOR]),
    },
  ];
  if (process.env.BENCH_DEBUG)
    console.log(`relay ${relay.otlp} services ${services.map((s) => s.proc.otlp)}`);
  // Both warmed on both mixes first: a running service is past its JIT warm-up, and the
  // compaction path has far more code to compile than the pass-through (measured: the first
  // few hundred compaction requests cost two to three times the later ones).
  for (const mix of [{}, { pairs: 8 }, {}, { pairs: 8 }]) {
    await throughput(relay.otlp, batches(N, mix, `warm-relay-${mix.pairs ?? 0}-${Math.random()}`), sink);
    for (const { proc } of services) {
      await throughput(proc.otlp, batches(N, mix, `warm-svc-${mix.pairs ?? 0}-${Math.random()}`), sink);
    }
  }
  console.log(
    `ingest throughput, protobuf, ${BATCH} spans per request, ${CONCURRENCY} in flight, ${N * BATCH} spans per round, median of ${ROUNDS} rounds:`,
  );
  for (const [label, tag, mix] of /** @type {const} */ ([
    ['ordinary spans only', 'plain', {}],
    ['16 compaction spans per batch', 'compaction', { pairs: 8 }],
  ])) {
    /** @type {number[]} */
    const base = [];
    /** @type {number[]} */
    const relayCpuMs = [];
    const per = services.map(() => ({
      /** @type {number[]} */ svc: [],
      /** @type {number[]} */ ratios: [],
      /** @type {number[]} */ cpuMs: [],
      /** @type {number[]} */ mainMs: [],
    }));
    for (let r = 0; r < ROUNDS; r++) {
      const relayBodies = batches(N, mix, `relay-${tag}-${r}`);
      gc?.();
      const rc = cpuMsOf(relay.pid);
      const b = await throughput(relay.otlp, relayBodies, sink);
      relayCpuMs.push((cpuMsOf(relay.pid) - rc) / N);
      base.push(b);
      for (const [i, { proc }] of services.entries()) {
        const m = /** @type {(typeof per)[number]} */ (per[i]);
        const svcBodies = batches(N, mix, `svc${i}-${tag}-${r}`);
        gc?.();
        const sc = cpuMsOf(proc.pid);
        const sm = mainThreadMsOf(proc.pid);
        const s = await throughput(proc.otlp, svcBodies, sink);
        m.cpuMs.push((cpuMsOf(proc.pid) - sc) / N);
        m.mainMs.push((mainThreadMsOf(proc.pid) - sm) / N);
        m.svc.push(s);
        m.ratios.push(s / b);
      }
    }
    console.log(
      `  ${label.padEnd(30)} relay ${fmt(median(base))} spans/s, CPU ${median(relayCpuMs).toFixed(2)} ms per request`,
    );
    for (const [i, { label: who }] of services.entries()) {
      const m = /** @type {(typeof per)[number]} */ (per[i]);
      const cpu = m.cpuMs.every(Number.isFinite)
        ? `; CPU per request ${median(m.cpuMs).toFixed(2)} ms (main thread ${median(m.mainMs).toFixed(2)} ms)`
        : '';
      const range = `${Math.min(...m.ratios).toFixed(2)}-${Math.max(...m.ratios).toFixed(2)}`;
      console.log(
        `  ${''.padEnd(30)} ${who}: ${fmt(median(m.svc))} spans/s, ratio ${median(m.ratios).toFixed(2)} (rounds ${range})${cpu}`,
      );
    }
  }
  console.log(
    "  (CPU: user+system time of each process from /proc; the rest of the service's is V8's helper threads)",
  );
  await relay.stop();
  for (const { proc } of services) await proc.stop();
}

/** Section 2. @param {Awaited<ReturnType<typeof startSink>>} sink */
async function memorySection(sink) {
  const PENDING = 100_000;
  console.log(`\nmemory per pending boundary, 5 decisions, ${fmt(PENDING)} pending:`);
  const now = Date.parse('2026-11-30T12:00:00Z');
  const options = {
    maxPendingBoundaries: 2 * PENDING,
    postWindowsMs: { default: 86_400_000, sdk: 86_400_000 },
  };
  gc?.();
  const empty = new Correlator(options);
  gc?.();
  const before = process.memoryUsage().heapUsed;
  const correlator = new Correlator(options);
  for (let i = 0; i < PENDING; i++) {
    const sid = `mem-${i}`;
    const attrs = snapshotAttributes('pre', snapshot(sid, '2026-11-30T10:00:00Z'), {
      boundaryId: `${sid}-b`,
      runtime: 'sdk',
      trigger: 'auto',
    });
    const event = readCompactionSpan('continuity.compaction.pre', attrs, 1764500000000000000n, {
      traceId: hex(i + 1, 32),
      spanId: hex(i + 1, 16),
    });
    if (event) correlator.observe(event, now);
  }
  gc?.();
  const after = process.memoryUsage().heapUsed;
  if (correlator.pendingCount !== PENDING || empty.pendingCount !== 0)
    throw new Error('unexpected pending count');
  const perBoundaryHeap = (after - before) / PENDING;
  console.log(
    `  correlator heap (in process, after GC)   ${fmt(perBoundaryHeap)} bytes per boundary  (${fmt((after - before) / 1048576)} MiB for ${fmt(PENDING)})`,
  );

  const memDir = mkdtempSync(join(tmpdir(), 'bench-serve-mem-'));
  const svc = await startService(sink.url, memDir, {
    correlation: { maxPendingBoundaries: 2 * PENDING, postWindows: { sdk: '24h' } },
  });
  const rss = async () => {
    const text = await getText(/** @type {string} */ (svc.metrics));
    const m = /^process_memory_usage_bytes\{[^}]*\} (\S+)$/m.exec(/** @type {string} */ (text));
    const p = /^continuity_pending\{[^}]*\} (\S+)$/m.exec(/** @type {string} */ (text));
    return { rss: Number(m?.[1]), pending: Number(p?.[1]) };
  };
  await sendAll(svc.otlp, batches(10, {}, 'memwarm'));
  const rssBefore = (await rss()).rss;
  // 500 pre spans and 12 ordinary spans per request of 512: exactly 100 000 boundaries.
  const bodies = batches(PENDING / 500, { pres: 500 }, 'mempre');
  await sendAll(svc.otlp, bodies);
  const state = await rss();
  console.log(
    `  service resident memory growth             ${fmt((state.rss - rssBefore) / state.pending)} bytes per boundary  (${fmt((state.rss - rssBefore) / 1048576)} MiB for ${fmt(state.pending)}; includes V8 heap slack, no forced GC)`,
  );
  console.log(
    `  baseline: the same correlator with no boundary: ${fmt(before / 1048576)} MiB heap in this process`,
  );
  await svc.stop();
  rmSync(memDir, { recursive: true, force: true });
}

/** Section 3: memory, snapshot time and the longest probe answer at a million pending. @param {string} sinkUrl */
async function million(sinkUrl) {
  const TOTAL = Number(process.env.BENCH_SERVE_PENDING ?? 1_000_000);
  const PER = 2000;
  console.log(
    `\n${fmt(TOTAL)} pending boundaries (1 decision each), background snapshots every 128 MiB of journal:`,
  );
  const dir = mkdtempSync(join(tmpdir(), 'bench-serve-million-'));
  const svc = await startService(
    sinkUrl,
    dir,
    {
      correlation: { maxPendingBoundaries: TOTAL + 100_000, postWindows: { sdk: '24h' } },
      state: { dir: join(dir, 'state'), compactAfterBytes: '128MiB' },
      log: { level: 'info' },
    },
    { NODE_OPTIONS: '--max-old-space-size=8192' },
  );
  const scrapeLine = async (/** @type {RegExp} */ re) =>
    Number(re.exec(await getText(/** @type {string} */ (svc.metrics)))?.[1]);
  const RSS = /^process_memory_usage_bytes\{[^}]*\} (\S+)$/m;
  const rssBefore = await scrapeLine(RSS);
  const pre = (/** @type {number} */ from) => {
    /** @type {unknown[]} */
    const spans = [];
    for (let k = 0; k < PER; k++) {
      const i = from + k;
      const sid = `mil-${i}`;
      const at = '2026-11-30T10:00:00Z';
      spans.push(
        span('continuity.compaction.pre', {
          ...snapshotAttributes(
            'pre',
            {
              sessionId: sid,
              capturedAt: at,
              normalizerVersion: 1,
              decisions: { scope: { digest: DIGEST(1), revision: 1, observedAt: at, source: 'task-record' } },
            },
            { boundaryId: `${sid}-b`, runtime: 'sdk', trigger: 'auto' },
          ),
        }),
      );
    }
    return Buffer.from(encodeTraceRequest({ resourceSpans: [{ scopeSpans: [{ spans }] }] }, 'protobuf'));
  };
  const probeBody = Buffer.from(
    encodeTraceRequest({ resourceSpans: [{ scopeSpans: [{ spans: [span('probe', {})] }] }] }, 'protobuf'),
  );
  /** @type {number[]} */
  const probes = [];
  let filling = true;
  const probe = (async () => {
    while (filling) {
      const t0 = performance.now();
      await post(svc.otlp, probeBody);
      probes.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, 25));
    }
  })();
  const t0 = performance.now();
  for (let from = 0; from < TOTAL; from += PER) await post(svc.otlp, pre(from));
  const fillS = (performance.now() - t0) / 1000;
  filling = false;
  await probe;
  const pending = await scrapeLine(/^continuity_pending\{[^}]*\} (\S+)$/m);
  const writes = histogram(
    await getText(/** @type {string} */ (svc.metrics)),
    'continuity_service_pending_write_duration_seconds',
  );
  const rss = await scrapeLine(RSS);
  const snapshots = svc
    .stderr()
    .split('\n')
    .filter((l) => l.includes('"pending-state snapshot written"'))
    .map((l) => JSON.parse(l));
  const stop0 = performance.now();
  await svc.stop();
  const stopMs = performance.now() - stop0;
  const sorted = [...probes].sort((a, b) => a - b);
  console.log(
    `  filled in ${fillS.toFixed(0)} s (${fmt(pending / fillS)} pre spans/s, 1 request of ${PER} in flight)`,
  );
  console.log(
    `  service resident memory growth             ${fmt((rss - rssBefore) / pending)} bytes per boundary  (${fmt((rss - rssBefore) / 1048576)} MiB for ${fmt(pending)})`,
  );
  console.log(
    `  background snapshots (worker thread)       ${snapshots.map((x) => `${fmt(x.entries)} entries in ${(x.ms / 1000).toFixed(1)} s`).join('; ') || 'none'}`,
  );
  console.log(`  stop with the final snapshot of all        ${(stopMs / 1000).toFixed(1)} s`);
  console.log(
    `  one-span probe every 25 ms during the fill: median ${sorted[Math.floor(sorted.length / 2)]?.toFixed(1)} ms, p99 ${sorted[Math.floor(sorted.length * 0.99)]?.toFixed(1)} ms, longest ${sorted.at(-1)?.toFixed(1)} ms (${probes.length} probes; a probe waits behind the ${PER}-span request in progress)`,
  );
  if (writes.count > 0) {
    const within = writes.buckets.find((b) => b.le === 0.1)?.count ?? 0;
    console.log(
      `  what persistence adds (continuity_service_pending_write_duration_seconds, every fill request): median <= ${fmtS(writes.quantile(0.5))}, p99 <= ${fmtS(writes.quantile(0.99))}, ${fmt(within)} of ${fmt(writes.count)} within 100 ms`,
    );
  }
  rmSync(dir, { recursive: true, force: true });
}

/** A seconds bucket bound for display. @param {number} s */
function fmtS(s) {
  return Number.isFinite(s) ? `${(s * 1000).toFixed(s < 0.01 ? 1 : 0)} ms` : 'over 10 s';
}

/**
 * A Prometheus histogram from a scrape: cumulative buckets, count, and the upper bound of the
 * bucket holding a quantile. @param {string} text @param {string} name
 */
function histogram(text, name) {
  /** @type {Array<{ le: number, count: number }>} */
  const buckets = [];
  for (const m of text.matchAll(new RegExp(`^${name}_bucket\\{[^}]*le="([^"]+)"[^}]*\\} (\\S+)$`, 'gm'))) {
    buckets.push({ le: m[1] === '+Inf' ? Number.POSITIVE_INFINITY : Number(m[1]), count: Number(m[2]) });
  }
  buckets.sort((a, b) => a.le - b.le);
  const count = buckets.at(-1)?.count ?? 0;
  return {
    buckets,
    count,
    quantile: (/** @type {number} */ q) => buckets.find((b) => b.count >= q * count)?.le ?? Number.NaN,
  };
}

// ── The relay baseline (this file, run as a child with --relay <downstream url>) ─────────────
function runRelay() {
  const target = new URL(/** @type {string} */ (process.argv[3]));
  const agent = new Agent({ keepAlive: true, maxSockets: 2 });
  /** @type {Buffer[]} */
  const queue = [];
  let active = 0;
  const pump = () => {
    while (active < 2 && queue.length > 0) {
      const body = /** @type {Buffer} */ (queue.shift());
      active++;
      const req = request(
        target,
        {
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/x-protobuf', 'content-length': body.length },
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            active--;
            pump();
          });
        },
      );
      req.on('error', () => {
        active--;
        pump();
      });
      req.end(body);
    }
  };
  const server = createServer((req, res) => {
    /** @type {Buffer[]} */
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      queue.push(Buffer.concat(chunks));
      pump();
      res.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-length': 0 });
      res.end();
    });
  });
  // As the service's listener (src/service/server.ts): Node's 5 s default closes a keep-alive
  // socket the client is just reusing while the other side is measured ("socket hang up").
  server.keepAliveTimeout = 65_000;
  server.listen(0, '127.0.0.1', () => {
    const a = /** @type {import('node:net').AddressInfo} */ (server.address());
    process.stdout.write(`${JSON.stringify({ otlp: `http://127.0.0.1:${a.port}/v1/traces` })}\n`);
  });
  process.on('SIGTERM', () => process.exit(0));
}

/** This file, run as the relay: `node service.bench.js --relay <downstream url>` (bench/stack uses it too). */
export const RELAY_SCRIPT = fileURLToPath(import.meta.url);
// Imported by bench/stack/collector.js for its load, sink and children; run only as the entry point.
if (process.argv[1] === RELAY_SCRIPT) {
  if (process.argv[2] === '--relay') runRelay();
  else await main();
}
