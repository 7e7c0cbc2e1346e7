// @ts-check
// The core's cost, as ratios against baselines measured in the same run (machines here are shared
// and noisy, so absolute figures are printed only beside their baseline):
//
// 1. normalize + digest per decision (normalizer v1: validation, NFC, RFC 8785, SHA-256 or
//    HMAC-SHA-256) against JSON.stringify + SHA-256 of the same value: what canonical, validated
//    digests cost over the naive hash that would call {"b":1,"a":2} and {"a":2,"b":1} different.
// 2. classify() throughput for 5-decision snapshots, against a plain loop doing the same digest
//    string comparisons (presence + equality per required decision, worst verdict kept): what the
//    freshness, scheme, approval-chain and priority rules cost over bare comparison.
//
// Run: npm run bench (builds first), or node bench/run.js core after `npm run build`.
import { createHash } from 'node:crypto';
import { classify, createDigestKey, digestValue } from '../dist/core.js';

const ROUNDS = 7;
const gc = /** @type {(() => void) | undefined} */ (globalThis.gc);

/** Five decision values of the kind the six-case example carries (small JSON objects). */
const VALUES = [
  { repository: 'acme/payments', paths: ['services/ledger'] },
  { requires_human: ['deploy', 'schema_migration'] },
  { branch: 'fix/ledger-rounding', environment: 'staging' },
  { forbid: ['force_push', 'edit_migrations'], note: 'no schema changes this run' },
  { command: 'npm test -- ledger', must_pass: true },
];
const NAMES = ['scope', 'approval_boundary', 'target', 'constraint', 'acceptance_test'];

/**
 * Times each function over the same rounds, interleaved (baseline, candidate, baseline, …) so a
 * burst of load from another process hits all of them alike. Returns, per function, the median
 * nanoseconds per iteration and the median of its per-round ratio to the first (the baseline).
 * @param {Array<(n: number) => unknown>} fns
 * @param {number} iterations
 */
function compare(fns, iterations) {
  for (const fn of fns) fn(Math.max(1, Math.floor(iterations / 10))); // warm up the JIT
  /** @type {number[][]} */
  const perOp = fns.map(() => []);
  for (let r = 0; r < ROUNDS; r++) {
    fns.forEach((fn, i) => {
      gc?.();
      const t0 = process.hrtime.bigint();
      fn(iterations);
      /** @type {number[]} */ (perOp[i]).push(Number(process.hrtime.bigint() - t0) / iterations);
    });
  }
  const base = /** @type {number[]} */ (perOp[0]);
  return perOp.map((times) => ({
    ns: median(times),
    ratio: median(times.map((t, r) => t / /** @type {number} */ (base[r]))),
  }));
}

/** @param {number[]} xs */
function median(xs) {
  const sorted = [...xs].sort((a, b) => a - b);
  return /** @type {number} */ (sorted[Math.floor(sorted.length / 2)]);
}

/** Keeps results alive so the JIT cannot drop the work. */
let sink = 0;

/** @param {number} ns */
function us(ns) {
  return `${(ns / 1000).toFixed(2)} µs`;
}

/** @param {number} perSecond */
function rate(perSecond) {
  return Math.round(perSecond).toLocaleString('en-US');
}

// --- 1. normalize + digest per decision ------------------------------------------------------------

const key = createDigestKey(Buffer.alloc(32, 0x5a));
const DIGEST_ITERATIONS = 20_000;

const [naive, plain, keyed] = compare(
  [
    (n) => {
      for (let i = 0; i < n; i++) {
        const v = VALUES[i % VALUES.length];
        sink += createHash('sha256').update(JSON.stringify(v)).digest('hex').length;
      }
    },
    (n) => {
      for (let i = 0; i < n; i++) sink += digestValue(VALUES[i % VALUES.length]).length;
    },
    (n) => {
      for (let i = 0; i < n; i++) sink += digestValue(VALUES[i % VALUES.length], key).length;
    },
  ],
  DIGEST_ITERATIONS,
).map((x) => /** @type {{ ns: number, ratio: number }} */ (x));

process.stdout.write(
  `normalize + digest, per decision (small JSON objects, median of ${ROUNDS} interleaved rounds)\n`,
);
process.stdout.write(`  baseline JSON.stringify + SHA-256:   ${us(naive.ns)}\n`);
process.stdout.write(
  `  normalizer v1 + SHA-256:             ${us(plain.ns)}   ratio ${plain.ratio.toFixed(2)}×\n`,
);
process.stdout.write(
  `  normalizer v1 + HMAC-SHA-256:        ${us(keyed.ns)}   ratio ${keyed.ratio.toFixed(2)}×\n`,
);

// --- 2. classifier throughput, 5-decision snapshots ------------------------------------------------

const PRE_AT = '2026-11-30T10:00:00Z';
const POST_AT = '2026-11-30T10:05:00Z';
const digests = VALUES.map((v) => digestValue(v));
const changed = digestValue({ command: 'npm test -- ledger reconcile', must_pass: true });

/**
 * @param {string[]} ds digests by position in NAMES; empty string: absent
 * @param {string} capturedAt
 * @param {string} observedAt
 */
function snapshot(ds, capturedAt, observedAt) {
  /** @type {Record<string, { digest: string, revision: number, observedAt: string }>} */
  const decisions = {};
  ds.forEach((d, i) => {
    if (d) decisions[/** @type {string} */ (NAMES[i])] = { digest: d, revision: 1, observedAt };
  });
  return { sessionId: 'bench', capturedAt, normalizerVersion: 1, decisions };
}

const pre = snapshot(digests, PRE_AT, PRE_AT);
const approval = {
  decision: 'acceptance_test',
  fromDigest: /** @type {string} */ (digests[4]),
  toDigest: changed,
  approvalRef: 'approval-1',
  approvedBy: 'reviewer-1',
  approvedAt: '2026-11-30T10:03:00Z',
};
/** A mix like the six cases: preserved ×2, approved change, dropped, conflicting, stale. */
const BOUNDARIES = [
  { pre, post: snapshot(digests, POST_AT, POST_AT), approvals: [] },
  { pre, post: snapshot(digests, POST_AT, POST_AT), approvals: [] },
  { pre, post: snapshot([...digests.slice(0, 4), changed], POST_AT, POST_AT), approvals: [approval] },
  { pre, post: snapshot(['', ...digests.slice(1)], POST_AT, POST_AT), approvals: [] },
  { pre, post: snapshot([changed, ...digests.slice(1)], POST_AT, POST_AT), approvals: [] },
  { pre, post: snapshot(digests, POST_AT, PRE_AT), approvals: [] },
];

const CLASSIFY_ITERATIONS = 60_000;
const SEVERITY = { conflicting: 0, dropped: 1, unverified: 2, approved_change: 3, preserved: 4 };

const [loop, full] = compare(
  [
    (n) => {
      for (let i = 0; i < n; i++) {
        const b = /** @type {(typeof BOUNDARIES)[number]} */ (BOUNDARIES[i % BOUNDARIES.length]);
        // The same digest string comparisons, with none of the rules around them.
        let worst = SEVERITY.preserved;
        for (const name of Object.keys(b.pre.decisions)) {
          const after = b.post.decisions[name];
          const s = !after
            ? SEVERITY.dropped
            : after.digest === b.pre.decisions[name]?.digest
              ? SEVERITY.preserved
              : SEVERITY.conflicting;
          if (s < worst) worst = s;
        }
        sink += worst;
      }
    },
    (n) => {
      for (let i = 0; i < n; i++) {
        const b = /** @type {(typeof BOUNDARIES)[number]} */ (BOUNDARIES[i % BOUNDARIES.length]);
        sink += classify(b).state.length;
      }
    },
  ],
  CLASSIFY_ITERATIONS,
).map((x) => /** @type {{ ns: number, ratio: number }} */ (x));

process.stdout.write(
  `\nclassify(), 5-decision snapshots, six-case mix (median of ${ROUNDS} interleaved rounds)\n`,
);
process.stdout.write(`  baseline digest-comparison loop:     ${rate(1e9 / loop.ns)} boundaries/s\n`);
process.stdout.write(
  `  classify():                          ${rate(1e9 / full.ns)} boundaries/s   ${us(full.ns)} each   ratio ${full.ratio.toFixed(1)}× the loop's time\n`,
);

if (sink === -1) process.stdout.write('');
