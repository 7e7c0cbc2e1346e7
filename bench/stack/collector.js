// @ts-check
// `npm run bench:stack`: what putting `continuity serve` in a Collector pipeline costs, against the
// Collector alone, measured in one run (machines here are shared and noisy: only ratios and
// differences against the same run's baseline mean anything).
//
// The Collector is the one `npm run test:stack` builds (scripts/stack/toolchain.js), on
// bench/stack/otelcol-bench.yaml: OTLP/HTTP in, OTLP out, no processor.
//   Collector alone:     load ──▶ Collector ──▶ sink
//   sidecar:             load ──▶ continuity serve ──▶ Collector (otlp/enriched) ──▶ sink
//   the Collector twice: load ──▶ Collector ──▶ the same Collector (otlp/enriched) ──▶ sink
//   gateway:             load ──▶ Collector ──▶ continuity serve ──▶ Collector (otlp/enriched) ──▶ sink
// The sidecar is collector-config/otelcol-sidecar.yaml's recipe; the gateway is
// otelcol-gateway.yaml's with one instance, the Collector reaching the service over OTLP/HTTP,
// then over OTLP/gRPC with compression none and gzip (the load_balancing exporter speaks only
// OTLP/gRPC, gzip by default); the Collector twice is that recipe's loop without the service.
// Every path's Collector runs side by side; rounds go through the paths in turn.
//
// Three mixes in batches of 512 spans: ordinary spans; a realistic mix (one pre/post pair per 39
// batches: about 1 compaction span per 10 000); the stress mix (16 compaction spans per batch).
// Throughput: spans/s from the first request until the sink has them all (4 requests in flight).
// Latency: a probe of one span every 20 ms during the rounds, from its send until the sink has it;
// the added p99 is the p99 with continuity serve minus the p99 of the Collector alone.
//
// Then `continuity serve` as it starts (on Node 20 with the heap floor applied from inside the
// process; Node >= 22.15 puts it on its command line) and with no floor, against the benches'
// pass-through relay (bench/relay.js) on the stress mix. The load, the sink and the children are
// bench/otlp-load.js's, which bench/service.bench.js uses too.
//
// Run: npm run bench:stack (builds the package, and the Collector if it is not in the cache).
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodeTraceRequest } from '../../dist/otlp/index.js';
import { ensureCollector, STACK_VERSIONS } from '../../scripts/stack/toolchain.js';
import {
  BATCH,
  batches,
  cpuMsOf,
  fmt,
  median,
  post,
  spawnChild,
  startRelay,
  startService,
  startSink,
  throughput,
} from '../otlp-load.js';

const here = dirname(fileURLToPath(import.meta.url));
const ROUNDS = Number(process.env.BENCH_STACK_ROUNDS ?? 5);
const N = Number(process.env.BENCH_STACK_N ?? 120);
/** The mixes to run (BENCH_STACK_MIXES, comma-separated); all three by default. */
const MIXES = (process.env.BENCH_STACK_MIXES ?? 'ordinary,realistic,stress').split(',').filter(Boolean);
/** Whether to run the serve-vs-relay section (BENCH_STACK_RELAY=0 skips it). */
const RELAY = process.env.BENCH_STACK_RELAY !== '0';

// ── Children ────────────────────────────────────────────────────────────────────────────────

/** A free port (bound, released). */
async function freePort() {
  const s = createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', () => r(undefined)));
  const port = /** @type {import('node:net').AddressInfo} */ (s.address()).port;
  await new Promise((r) => s.close(() => r(undefined)));
  return port;
}

/**
 * The Collector on otelcol-bench.yaml; `next` is where its traces/in pipeline exports (an
 * OTLP/HTTP URL, or with `grpc` a host:port reached over OTLP/gRPC with that compression), `sink`
 * where its traces/enriched pipeline (listening on `enrichedPort`) exports.
 * @param {string} binary @param {string} next @param {string} sink @param {number} enrichedPort
 * @param {{ compression: 'gzip' | 'none' }} [grpc]
 */
async function startCollector(binary, next, sink, enrichedPort, grpc) {
  const inPort = await freePort();
  const proc = spawnChild(binary, ['--config', join(here, 'otelcol-bench.yaml')], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: {
      PATH: process.env.PATH,
      BENCH_IN: `127.0.0.1:${inPort}`,
      BENCH_ENRICHED: `127.0.0.1:${enrichedPort}`,
      BENCH_NEXT: grpc ? sink : next,
      BENCH_SINK: sink,
      ...(grpc && {
        BENCH_NEXT_EXPORTER: 'otlp_grpc/next',
        BENCH_NEXT_GRPC: next,
        BENCH_GRPC_COMPRESSION: grpc.compression,
      }),
    },
  });
  let err = '';
  proc.stderr?.on('data', (d) => {
    err += d;
  });
  const url = `http://127.0.0.1:${inPort}/v1/traces`;
  // Ready when the receiver answers an empty export.
  for (let i = 0; ; i++) {
    const ok = await post(url, Buffer.alloc(0), probeAgent).then(
      () => true,
      () => false,
    );
    if (ok) break;
    if (proc.exitCode !== null || i > 200) throw new Error(`the Collector did not start: ${err}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    pid: proc.pid,
    stop: () =>
      new Promise((r) => {
        proc.once('exit', () => r(undefined));
        proc.kill('SIGTERM');
      }),
  };
}

const probeAgent = new Agent({ keepAlive: true, maxSockets: 1 });

let probeSeq = 1;

/** One ordinary span with a fresh trace id, as a request body, and that id. */
function probeBody() {
  const id = Buffer.alloc(16);
  id.writeUInt32BE(0xc0ffee00, 0);
  id.writeUInt32BE(probeSeq++, 12);
  const now = BigInt(Date.now()) * 1_000_000n;
  const body = encodeTraceRequest(
    {
      resourceSpans: [
        {
          resource: { attributes: [] },
          scopeSpans: [
            {
              scope: { name: 'probe' },
              spans: [
                {
                  traceId: id.toString('hex'),
                  spanId: id.subarray(8).toString('hex'),
                  name: 'probe',
                  kind: 1,
                  startTimeUnixNano: String(now),
                  endTimeUnixNano: String(now + 1000n),
                  attributes: [],
                },
              ],
            },
          ],
        },
      ],
    },
    'protobuf',
  );
  return { id, body: Buffer.from(body) };
}

/**
 * Sends a probe every 20 ms to `url` until `stop()`; resolves with the latencies.
 * @param {string} url @param {import('../otlp-load.js').Sink} sink
 */
function probing(url, sink) {
  /** @type {Promise<number>[]} */
  const latencies = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const { id, body } = probeBody();
      const sent = process.hrtime.bigint();
      latencies.push(sink.probe(id, sent));
      await post(url, body, probeAgent).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      // Probes still in flight arrive with the round's last spans.
      const done = await Promise.all(
        latencies.map((p) => Promise.race([p, new Promise((r) => setTimeout(() => r(Number.NaN), 30_000))])),
      );
      return /** @type {number[]} */ (done).filter((x) => !Number.isNaN(x));
    },
  };
}

/** @param {number[]} xs @param {number} q */
function quantile(xs, q) {
  const s = [...xs].sort((a, b) => a - b);
  return /** @type {number} */ (s[Math.min(s.length - 1, Math.floor(q * s.length))]);
}

/** The request bodies of one round of a mix. @param {string} mix @param {string} tag */
function bodies(mix, tag) {
  if (mix === 'ordinary') return batches(N, {}, tag);
  if (mix === 'stress') return batches(N, { pairs: 8 }, tag);
  // realistic: one pre/post pair in every 39th batch, about 1 compaction span per 10 000
  const out = [];
  for (let i = 0; i < N; i++) out.push(...batches(1, i % 39 === 0 ? { pairs: 1 } : {}, `${tag}-${i}`));
  return out;
}

async function main() {
  const tmp = mkdtempSync(join(tmpdir(), 'bench-stack-'));
  const { path: otelcol } = await ensureCollector();
  const sink = await startSink({ timeoutMs: 180_000 });
  console.log(
    `Collector ${STACK_VERSIONS.collector} (contrib ${STACK_VERSIONS.collectorContrib}), Node ${process.version}; ` +
      `${ROUNDS} rounds of ${N} requests of ${BATCH} spans per mix, rounds alternating\n`,
  );
  try {
    const alone = await startCollector(otelcol, sink.url, sink.url, await freePort());
    // The continuity path: the service forwards to the second Collector's otlp/enriched, whose
    // traces/in exports to the service (each needs the other's address: the port is chosen first).
    const enrichedPort = await freePort();
    const serve = await startService(`http://127.0.0.1:${enrichedPort}/v1/traces`, join(tmp, 'serve'));
    // A service that dies mid-run says why (its log), rather than leaving a socket hang-up.
    process.on('exit', (code) => {
      if (code !== 0) process.stderr.write(`continuity serve's log:\n${serve.stderr()}\n`);
    });
    const viaServe = await startCollector(otelcol, serve.otlp, sink.url, enrichedPort);
    // The shipped gateway's transport to the instances: its load_balancing exporter speaks
    // OTLP/gRPC, gzip unless its `compression` says otherwise (collector-config/otelcol-gateway.yaml).
    // These Collectors' traces/in export to the service's gRPC listener; the service forwards to
    // viaServe's otlp/enriched, which exports to the sink (their own otlp/enriched stays idle).
    if (!serve.grpc) throw new Error('continuity serve printed no gRPC address');
    const viaGrpcGzip = await startCollector(otelcol, serve.grpc, sink.url, await freePort(), {
      compression: 'gzip',
    });
    const viaGrpc = await startCollector(otelcol, serve.grpc, sink.url, await freePort(), {
      compression: 'none',
    });
    // The gateway's loop without the service: a Collector whose traces/in exports to its own
    // otlp/enriched, so each span crosses it twice, as in the gateway recipe. What the recipe costs
    // before continuity serve does anything.
    const twicePort = await freePort();
    const twice = await startCollector(
      otelcol,
      `http://127.0.0.1:${twicePort}/v1/traces`,
      sink.url,
      twicePort,
    );

    for (const mix of MIXES) {
      /** @typedef {'alone'|'twice'|'sidecar'|'serve'|'grpc'|'grpcGzip'} Path */
      /** @type {Record<Path, { tput: number[], cpu: number[], svcCpu: number[], lat: number[] }>} */
      const r = {
        alone: { tput: [], cpu: [], svcCpu: [], lat: [] },
        twice: { tput: [], cpu: [], svcCpu: [], lat: [] },
        sidecar: { tput: [], cpu: [], svcCpu: [], lat: [] },
        serve: { tput: [], cpu: [], svcCpu: [], lat: [] },
        grpc: { tput: [], cpu: [], svcCpu: [], lat: [] },
        grpcGzip: { tput: [], cpu: [], svcCpu: [], lat: [] },
      };
      /** @type {Array<[Path, { url: string }, Array<number | undefined>]>} */
      const paths = [
        ['alone', alone, [alone.pid]],
        ['twice', twice, [twice.pid]],
        // The sidecar recipe (collector-config/otelcol-sidecar.yaml): the load sent to the
        // service, which forwards to the Collector's otlp/enriched.
        ['sidecar', { url: serve.otlp }, [viaServe.pid, serve.pid]],
        ['serve', viaServe, [viaServe.pid, serve.pid]],
        ['grpc', viaGrpc, [viaGrpc.pid, viaServe.pid, serve.pid]],
        ['grpcGzip', viaGrpcGzip, [viaGrpcGzip.pid, viaServe.pid, serve.pid]],
      ];
      // Warm every path once.
      for (const [key, target] of paths)
        await throughput(target.url, bodies(mix, `warm-${key}-${mix}`), sink);
      for (let round = 0; round < ROUNDS; round++) {
        for (const [key, target, pids] of paths) {
          const b = bodies(mix, `${key}-${mix}-${round}`);
          const cpu0 = pids.reduce((n, p) => n + cpuMsOf(p), 0);
          const svc0 = cpuMsOf(serve.pid);
          const probe = probing(target.url, sink);
          const t = await throughput(target.url, b, sink);
          const lat = await probe.stop();
          r[key].tput.push(t);
          r[key].cpu.push((pids.reduce((n, p) => n + cpuMsOf(p), 0) - cpu0) / N);
          r[key].svcCpu.push((cpuMsOf(serve.pid) - svc0) / N);
          r[key].lat.push(...lat);
        }
      }
      const line = (/** @type {Path} */ key, /** @type {string} */ label, /** @type {Path} */ base) => {
        const t = median(r[key].tput);
        const p = quantile(r[key].lat, 0.99);
        const svc =
          key !== 'alone' && key !== 'twice' ? `; the service ${median(r[key].svcCpu).toFixed(2)}` : '';
        const vs =
          key === base
            ? ''
            : `, ${(t / median(r[base].tput)).toFixed(2)}× ${base === 'alone' ? 'the Collector alone' : 'the Collector twice'}, added p99 ${(p - quantile(r[base].lat, 0.99)).toFixed(1)} ms`;
        console.log(
          `  ${label.padEnd(44)} ${fmt(t).padStart(9)} spans/s, CPU ${median(r[key].cpu).toFixed(2)} ms/request${svc}, probe p99 ${p.toFixed(1)} ms (${r[key].lat.length})${vs}`,
        );
      };
      const ratioOf = (/** @type {Path} */ a, /** @type {Path} */ b) => median(r[a].tput) / median(r[b].tput);
      console.log(`${mix} spans`);
      line('alone', 'Collector alone', 'alone');
      line('sidecar', 'sidecar: continuity serve ──▶ Collector', 'alone');
      line('twice', 'the Collector twice (the gateway loop)', 'alone');
      line('serve', 'gateway: Collector ──▶ serve ──▶ Collector', 'alone');
      line('grpc', '  the same, Collector ──OTLP/gRPC──▶ serve', 'alone');
      line('grpcGzip', '  the same, OTLP/gRPC gzip (the exporter default)', 'alone');
      console.log(
        `  the continuity hop: ${ratioOf('sidecar', 'alone').toFixed(2)}× the Collector alone in front of it (sidecar); ${ratioOf('serve', 'twice').toFixed(2)}× the Collector's own loop, ${ratioOf('serve', 'alone').toFixed(2)}× the Collector alone (gateway)\n`,
      );
    }
    await twice.stop();
    await viaGrpc.stop();
    await viaGrpcGzip.stop();
    await viaServe.stop();
    await alone.stop();
    await serve.stop();

    // continuity serve as it starts, against the relay, on the stress mix; beside it the same
    // service with no heap floor (CONTINUITY_SERVE_HEAP_FLOOR_MB=0), as it started on Node 20
    // before the floor was applied from inside the process.
    if (!RELAY) return;
    const relay = await startRelay(sink.url);
    const svc = await startService(sink.url, join(tmp, 'serve-vs-relay'));
    const bare = await startService(
      sink.url,
      join(tmp, 'serve-no-floor'),
      {},
      { CONTINUITY_SERVE_HEAP_FLOOR_MB: '0' },
    );
    /** @type {number[]} */
    const ratios = [];
    /** @type {number[]} */
    const bareRatios = [];
    await throughput(relay.otlp, batches(N, { pairs: 8 }, 'warm-relay'), sink);
    await throughput(svc.otlp, batches(N, { pairs: 8 }, 'warm-svc'), sink);
    await throughput(bare.otlp, batches(N, { pairs: 8 }, 'warm-bare'), sink);
    for (let round = 0; round < ROUNDS; round++) {
      const rt = await throughput(relay.otlp, batches(N, { pairs: 8 }, `relay-${round}`), sink);
      const st = await throughput(svc.otlp, batches(N, { pairs: 8 }, `svc-${round}`), sink);
      const bt = await throughput(bare.otlp, batches(N, { pairs: 8 }, `bare-${round}`), sink);
      ratios.push(st / rt);
      bareRatios.push(bt / rt);
    }
    console.log(`stress mix, continuity serve against the relay (Node ${process.version})`);
    console.log(
      `  as it starts:  per-round ratios ${ratios.map((x) => x.toFixed(2)).join(' ')}; median ${median(ratios).toFixed(2)}× the relay`,
    );
    console.log(
      `  no heap floor: per-round ratios ${bareRatios.map((x) => x.toFixed(2)).join(' ')}; median ${median(bareRatios).toFixed(2)}× the relay`,
    );
    await bare.stop();
    await relay.stop();
    await svc.stop();
  } finally {
    await sink.close();
    probeAgent.destroy();
    rmSync(tmp, { recursive: true, force: true });
  }
}

await main();
