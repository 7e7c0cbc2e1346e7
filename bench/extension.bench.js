// @ts-check
// The SDK extension's cost at a compaction point: one capturePre + observePost pair with 5
// decisions (values in: normalize, digest, attributes, two spans), as a ratio to creating and
// ending two plain spans in the same pipeline, measured in the same run:
//
// 1. extension alone: BasicTracerProvider → BatchSpanProcessor → an exporter that drops all;
// 2. extension + ContinuityProcessor (read, correlate, classify, write the state, link, metrics):
//    what an agent pays per compaction with the processor registered.
//
// Rounds alternate between the pair and the baseline; the ratio reported is the median of the
// per-round ratios, so drift in machine load hits both sides alike. A compaction happens a few
// times per session, so a ratio in the tens is still microseconds per compaction: the absolute
// figures are printed beside it.
//
// Run: npm run bench (builds first), or node bench/run.js extension after `npm run build`.
import { ContinuityProcessor, createContinuity } from '../dist/core.js';
import { exportedSpans, pipeline as sharedPipeline } from './pipeline.js';

/** @param {boolean} withProcessor */
function pipeline(withProcessor) {
  return sharedPipeline(withProcessor ? [new ContinuityProcessor({ maxPendingBoundaries: 100_000 })] : []);
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

/** Five decisions of a consequential task, as an agent holds them. */
const DECISIONS = {
  scope: { value: { repository: 'acme/payments', paths: ['services/ledger', 'services/reconcile'] } },
  approval_boundary: { value: { requires_human: ['deploy', 'schema_migration', 'data_deletion'] } },
  target: { value: { branch: 'feature/ledger-rounding', environment: 'staging' }, revision: 2 },
  acceptance_test: { value: { command: 'npm test -- ledger', must_pass: true }, source: 'task-record' },
  constraint: { value: { never: ['force-push', 'edit migrations in place'] } },
};

/**
 * @param {import('@opentelemetry/api').Tracer} tracer
 * @param {ReturnType<typeof createContinuity>} continuity
 * @param {number} n pairs
 * @param {number} round
 */
async function pairs(continuity, n, round) {
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const session = `bench-${round}-${i}`;
    await continuity.capturePre(session, DECISIONS, { trigger: 'auto' });
    await continuity.observePost(session, DECISIONS);
    if (i % 128 === 127) await tick();
  }
  return Number(process.hrtime.bigint() - start) / n;
}

/**
 * Two plain spans per iteration, awaited the same way (one microtask each).
 * @param {import('@opentelemetry/api').Tracer} tracer
 * @param {number} n
 */
async function plain(tracer, n) {
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    tracer.startSpan('agent.step').end();
    tracer.startSpan('agent.step').end();
    if (i % 128 === 127) await tick();
  }
  return Number(process.hrtime.bigint() - start) / n;
}

/** @param {number[]} xs */
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

/** @param {boolean} withProcessor */
async function measure(withProcessor) {
  const { tracer, provider } = pipeline(withProcessor);
  const continuity = createContinuity({ tracer, runtime: 'sdk' });
  const N = 1_000;
  await pairs(continuity, 500, -1); // warm-up
  await plain(tracer, 2_000);
  const ratios = [];
  const pairNs = [];
  const plainNs = [];
  for (let round = 0; round < 7; round++) {
    const p = await pairs(continuity, N, round);
    const b = await plain(tracer, N * 4);
    pairNs.push(p);
    plainNs.push(b);
    ratios.push(p / b);
  }
  await provider.shutdown();
  return { ratio: median(ratios), pairUs: median(pairNs) / 1000, plainUs: median(plainNs) / 1000 };
}

const alone = await measure(false);
const full = await measure(true);
const fmt = (/** @type {number} */ x) => x.toFixed(1);
process.stdout.write(
  `pre+post pair, 5 decisions, extension only:          ${fmt(alone.ratio)}× two plain spans` +
    ` (${fmt(alone.pairUs)} µs vs ${fmt(alone.plainUs)} µs)\n`,
);
process.stdout.write(
  `pre+post pair, 5 decisions, + ContinuityProcessor:   ${fmt(full.ratio)}× two plain spans` +
    ` (${fmt(full.pairUs)} µs vs ${fmt(full.plainUs)} µs)\n`,
);
if (exportedSpans() < 0) process.stdout.write('unreachable\n');
