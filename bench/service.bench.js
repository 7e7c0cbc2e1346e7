// @ts-check
// `continuity serve`, measured against baselines in the same run (machines here are shared and
// noisy, so absolute figures are printed only beside their baseline):
//
// 1. Ingest throughput, spans/s, OTLP/HTTP protobuf in batches of 512: a client sends to the
//    service (a `node bin/continuity.js serve` child process), the service forwards to a sink;
//    the baseline is a pass-through relay on the same HTTP stack (bench/relay.js, node:http in a
//    child process: read the body, answer 200, forward the bytes with the same keep-alive
//    concurrency). Measured
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
// The load, the sink and the children are bench/otlp-load.js's, which bench/stack/collector.js uses too.
//
// Run: npm run bench (builds first), or node --expose-gc bench/run.js service after `npm run build`.
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Correlator } from '../dist/correlate/correlator.js';
import { readCompactionSpan, snapshotAttributes } from '../dist/otel/attributes.js';
import { encodeTraceRequest } from '../dist/otlp/index.js';
import {
  BATCH,
  batches,
  CONCURRENCY,
  clientAgent,
  cpuMsOf,
  DIGEST,
  fmt,
  hex,
  mainThreadMsOf,
  median,
  post,
  sendAll,
  snapshot,
  span,
  startRelay,
  startService,
  startSink,
  throughput,
} from './otlp-load.js';

const gc = /** @type {(() => void) | undefined} */ (globalThis.gc);
/** A floor under V8's old-generation limit, MiB (docs/service.md, "Run it"). */
const HEAP_FLOOR = '--initial-old-space-size=128';

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

/** Section 1. @param {import('./otlp-load.js').Sink} sink @param {string} tmp */
async function throughputSection(sink, tmp) {
  const ROUNDS = 5;
  // Requests per round. Rounds are short (the relay's well under a second); BENCH_SERVE_N makes
  // them longer, which also takes the service past the journal size where it snapshots in the
  // background (64 MiB, about 3 200 compaction requests), as a long-running one does.
  const N = Number(process.env.BENCH_SERVE_N ?? 120);
  const relay = await startRelay(sink.url);
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

/** Section 2. @param {import('./otlp-load.js').Sink} sink */
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

await main();
