// @ts-check
// The ContinuityProcessor's cost, as ratios against baselines measured in the same run
// (machines here are shared and noisy, so absolute figures are printed only beside their baseline):
//
// 1. Span throughput of a pipeline with the processor against the same pipeline without it, on
//    ordinary (non-compaction) spans: BasicTracerProvider → [ContinuityProcessor,]
//    BatchSpanProcessor → an exporter that drops everything. Goal: at most 3 % slower.
//    The machine is shared, so whole rounds are useless (an identical pipeline measured twice
//    differs by ±15 %). Instead chunks of 256 spans run interleaved, the order rotating every
//    chunk, and the ratio compares the lower quartile and the median of the per-chunk times
//    (interference only ever adds time). An A/A control (the baseline against an identical
//    pipeline) shows the noise floor; a pipeline with a NoopSpanProcessor in the same place shows
//    what any second processor costs.
// 2. A pre + post pair with 5 decisions through the processor (read, correlate, classify, write
//    the state on the post span, link, metrics) against creating and ending two plain spans in
//    the same pipeline, measured the same interleaved way. The attributes are built beforehand:
//    digesting the values is the extension's cost, not the processor's.
//
// Run: npm run bench (builds first), or node bench/run.js processor after `npm run build`.
import { NoopSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ContinuityProcessor, digestValue, snapshotAttributes } from '../dist/core.js';
import { exportedSpans, pipeline as sharedPipeline } from './pipeline.js';

const gc = /** @type {(() => void) | undefined} */ (globalThis.gc);
/**
 * The same pipeline, with nothing, a ContinuityProcessor or a NoopSpanProcessor before the batch
 * processor.
 * @param {'none' | 'continuity' | 'noop'} first
 */
function pipeline(first) {
  const extra =
    first === 'continuity' ? [new ContinuityProcessor()] : first === 'noop' ? [new NoopSpanProcessor()] : [];
  const built = sharedPipeline(extra);
  providers.push(built.provider);
  return built;
}
/** @type {import('@opentelemetry/sdk-trace-base').BasicTracerProvider[]} */
const providers = [];

/** Yields so the batch processor can export (it exports in a promise continuation). */
const tick = () => new Promise((resolve) => setImmediate(resolve));

// Ordinary spans of a traced agent: model calls, tool calls, HTTP.
const ORDINARY = [
  {
    name: 'chat claude-sonnet',
    attributes: {
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'claude-sonnet',
      'gen_ai.usage.input_tokens': 1200,
      'gen_ai.usage.output_tokens': 310,
    },
  },
  {
    name: 'execute_tool read_file',
    attributes: {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'read_file',
      'session.id': 'sess-1',
    },
  },
  {
    name: 'GET',
    attributes: {
      'http.request.method': 'GET',
      'url.full': 'https://api.example.test/v1/items',
      'http.response.status_code': 200,
    },
  },
  { name: 'agent.step', attributes: { 'session.id': 'sess-1', 'agent.step.index': 7 } },
];

/**
 * Ends 256 ordinary spans; returns the nanoseconds it took.
 * @param {import('@opentelemetry/api').Tracer} tracer
 * @param {number} c chunk number
 */
function ordinaryChunk(tracer, c) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < 256; i++) {
    const o = /** @type {(typeof ORDINARY)[number]} */ (ORDINARY[(c + i) & 3]);
    const span = tracer.startSpan(o.name, { attributes: o.attributes });
    span.setAttribute('bench.i', i);
    span.end();
  }
  return Number(process.hrtime.bigint() - t0);
}

/**
 * Runs every side's chunk once per step, rotating the order, yielding between steps so batches
 * get exported. Returns the per-chunk times of each side (after a warm-up).
 * @template {string} K
 * @param {Record<K, (c: number) => number>} sides
 * @param {number} steps
 */
async function interleaved(sides, steps) {
  const keys = /** @type {K[]} */ (Object.keys(sides));
  const times = /** @type {Record<K, number[]>} */ (Object.fromEntries(keys.map((k) => [k, []])));
  const warmup = Math.floor(steps / 10);
  for (let c = 0; c < steps; c++) {
    for (let k = 0; k < keys.length; k++) {
      const key = /** @type {K} */ (keys[(k + c) % keys.length]);
      const t = sides[key](c);
      if (c >= warmup) times[key].push(t);
    }
    if (c % 64 === 0) gc?.();
    await tick();
  }
  return times;
}

/**
 * @param {number[]} xs
 * @param {number} p 0..1
 */
function quantile(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  return /** @type {number} */ (s[Math.floor((s.length - 1) * p)]);
}

/** @param {number} perSecond */
function rate(perSecond) {
  return Math.round(perSecond).toLocaleString('en-US');
}

/** @param {number} r */
function pct(r) {
  return `${r >= 1 ? '+' : ''}${((r - 1) * 100).toFixed(1)} %`;
}

// --- 1. ordinary-span throughput, with and without the processor ---------------------------------

const STEPS = 3_000;
const baseline = pipeline('none');
const control = pipeline('none');
const withNoop = pipeline('noop');
const withP = pipeline('continuity');
const t1 = await interleaved(
  {
    baseline: (c) => ordinaryChunk(baseline.tracer, c),
    control: (c) => ordinaryChunk(control.tracer, c),
    noop: (c) => ordinaryChunk(withNoop.tracer, c),
    continuity: (c) => ordinaryChunk(withP.tracer, c),
  },
  STEPS,
);
/** @param {number[]} xs */
const ratioTo = (xs) => ({
  q1: quantile(xs, 0.25) / quantile(t1.baseline, 0.25),
  med: quantile(xs, 0.5) / quantile(t1.baseline, 0.5),
});
const ctl = ratioTo(t1.control);
const noop = ratioTo(t1.noop);
const cont = ratioTo(t1.continuity);
process.stdout.write(
  `ordinary spans, ${(STEPS * 0.9 * 256).toLocaleString('en-US')} per pipeline in interleaved chunks of 256\n`,
);
process.stdout.write(
  `  baseline (batch processor only):         ${rate(256e9 / quantile(t1.baseline, 0.5))} spans/s (median chunk)\n`,
);
process.stdout.write(
  `  A/A control (identical pipeline):        lower quartile ${pct(ctl.q1)}, median ${pct(ctl.med)}\n`,
);
process.stdout.write(
  `  + NoopSpanProcessor (any 2nd processor): lower quartile ${pct(noop.q1)}, median ${pct(noop.med)}\n`,
);
process.stdout.write(
  `  + ContinuityProcessor:                   lower quartile ${pct(cont.q1)}, median ${pct(cont.med)}   (goal <= +3 %)\n`,
);

// --- 2. a pre + post pair with 5 decisions vs two plain spans --------------------------------------

const NAMES = ['scope', 'approval_boundary', 'target', 'constraint', 'acceptance_test'];
const digests = NAMES.map((n) => digestValue({ decision: n, value: `value of ${n}` }));
/**
 * @param {string} sessionId
 * @param {string} at
 */
function snapshot(sessionId, at) {
  /** @type {Record<string, { digest: string, revision: number, observedAt: string }>} */
  const decisions = {};
  NAMES.forEach((n, i) => {
    decisions[n] = { digest: /** @type {string} */ (digests[i]), revision: 1, observedAt: at };
  });
  return { sessionId, capturedAt: at, normalizerVersion: 1, decisions };
}
const SESSIONS = 1_000;
const PAIRS = Array.from({ length: SESSIONS }, (_, i) => ({
  pre: snapshotAttributes('pre', snapshot(`sess-${i}`, '2026-11-30T10:00:00Z'), {
    runtime: 'sdk',
    trigger: 'auto',
  }),
  post: snapshotAttributes('post', snapshot(`sess-${i}`, '2026-11-30T10:05:00Z'), {
    runtime: 'sdk',
    trigger: 'auto',
  }),
}));
const PLAIN = { 'gen_ai.operation.name': 'chat', 'session.id': 'sess-1' };

/**
 * Ends 64 pairs of spans (compaction pre + post, or two plain spans); returns the nanoseconds.
 * @param {import('@opentelemetry/api').Tracer} tracer
 * @param {boolean} compaction
 * @param {number} c chunk number
 */
function pairChunk(tracer, compaction, c) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < 64; i++) {
    if (compaction) {
      const p = /** @type {(typeof PAIRS)[number]} */ (PAIRS[(c * 64 + i) % SESSIONS]);
      tracer.startSpan('continuity.compaction.pre', { attributes: p.pre }).end();
      tracer.startSpan('continuity.compaction.post', { attributes: p.post }).end();
    } else {
      tracer.startSpan('chat', { attributes: PLAIN }).end();
      tracer.startSpan('chat', { attributes: PLAIN }).end();
    }
  }
  return Number(process.hrtime.bigint() - t0);
}

const PAIR_STEPS = 1_000;
const t2 = await interleaved(
  { plain: (c) => pairChunk(withP.tracer, false, c), pair: (c) => pairChunk(withP.tracer, true, c) },
  PAIR_STEPS,
);
const plainUs = quantile(t2.plain, 0.5) / 64 / 1000;
const pairUs = quantile(t2.pair, 0.5) / 64 / 1000;
process.stdout.write(
  `\npre + post pair, 5 decisions, through the processor (${(PAIR_STEPS * 0.9 * 64).toLocaleString('en-US')} each, interleaved, median chunk)\n`,
);
process.stdout.write(`  baseline two plain spans:                ${plainUs.toFixed(2)} µs\n`);
process.stdout.write(
  `  pre + post pair (read, correlated, classified, state + link written, metrics): ${pairUs.toFixed(2)} µs   ratio ${(pairUs / plainUs).toFixed(1)}×\n`,
);

await Promise.all(providers.map((p) => p.shutdown()));
if (exportedSpans() === -1) process.stdout.write('');
