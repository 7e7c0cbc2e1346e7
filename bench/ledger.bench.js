// @ts-check
// The ledger's cost, as ratios against baselines measured in the same run (machines here are
// shared and noisy, so absolute figures are printed only beside their baseline):
//
// 1. Append throughput with fsync: `ledger.append()` (lock file, tail read, schema + leak guard,
//    canonical JSON + SHA-256 chain, one write, fsync, index update) against a bare loop of
//    `appendFileSync` + `fsyncSync` writing lines of the same size to an open file.
// 2. `continuity status --session S` with 100 000 records in the ledger against 1 000 (target:
//    within 1.5×), as a real child process; and the same read in process (index path, and a forced
//    full scan to show what the index saves). The session's records sit near the start of the
//    file, the worst place for a tail scan.
// 3. Loading the lean reader (`dist/ledger/latest.js`, what the write gate imports) against
//    `node -e 0`.
// 4. `verifyLedger` per record against hashing the same bytes with node:crypto (SHA-256 of the
//    whole file, what `sha256sum` does) in the same run.
// 5. Plain `continuity status` (every session, no `--session`) with 1 000 000 records against
//    1 000, as a real child process; both ledgers hold the same 500 sessions. Set
//    LEDGER_BENCH_LARGE to use another size for the large ledger.
//
// Run: npm run bench (builds first), or node bench/run.js ledger after `npm run build`.
import { spawnSync } from 'node:child_process';
import { createHash, generateKeyPairSync } from 'node:crypto';
import {
  appendFileSync,
  closeSync,
  fsyncSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { certify } from '../dist/authority/key-store.js';
import { writePin } from '../dist/authority/pin.js';
import { keyIdOf, publicKeyHex, signStatement } from '../dist/authority/signing.js';
import { approvalStatement } from '../dist/authority/statement.js';
import { Ledger, readLatestBoundary, verifyLedger } from '../dist/core.js';
import { sealRecord } from '../dist/ledger/chain.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const cli = join(root, 'bin', 'continuity.js');
const dir = mkdtempSync(join(tmpdir(), 'ledger-bench-'));
const ROUNDS = 5;

/** @param {number[]} xs */
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const fmt = (/** @type {number} */ x, d = 2) => x.toFixed(d);
const digest = (/** @type {number} */ i) => `sha256:${(i >>> 0).toString(16).padStart(64, '0')}`;
const at = (/** @type {number} */ s) => new Date(Date.UTC(2026, 10, 30, 12, 0, 0) + s * 1000).toISOString();

/**
 * A pre or post snapshot of three decisions, the common record.
 * @param {string} sessionId @param {string} boundaryId @param {'pre' | 'post'} phase @param {number} i
 * @returns {import('../dist/core.js').NewRecord}
 */
function snapshot(sessionId, boundaryId, phase, i) {
  return {
    type: 'snapshot',
    phase,
    sessionId,
    boundaryId,
    capturedAt: at(i),
    normalizerVersion: 1,
    decisions: {
      scope: { digest: digest(i), revision: 1, observedAt: at(i) },
      target: { digest: digest(i + 1), revision: 1, observedAt: at(i) },
      acceptance_test: { digest: digest(i + 2), revision: 1, observedAt: at(i) },
    },
  };
}

// ── 1. append throughput ─────────────────────────────────────────────────────────────────────
async function appendThroughput() {
  const N = 300;
  const sample = `${JSON.stringify({ ...snapshot('session-0001', 'b-1', 'pre', 1), seq: 1, prev: null, hash: digest(0) })}\n`;
  /** @type {number[]} */ const ratios = [];
  /** @type {number[]} */ const bare = [];
  /** @type {number[]} */ const led = [];
  for (let r = 0; r < ROUNDS; r++) {
    const plain = join(dir, `bare-${r}.jsonl`);
    const fd = openSync(plain, 'a', 0o600);
    let t = process.hrtime.bigint();
    for (let i = 0; i < N; i++) {
      appendFileSync(fd, sample);
      fsyncSync(fd);
    }
    const bareNs = Number(process.hrtime.bigint() - t) / N;
    closeSync(fd);

    const ledger = Ledger.open(join(dir, `append-${r}.jsonl`));
    t = process.hrtime.bigint();
    for (let i = 0; i < N; i++) await ledger.append(snapshot('session-0001', `b-${i}`, 'pre', i));
    const ledgerNs = Number(process.hrtime.bigint() - t) / N;
    await ledger.close();
    bare.push(bareNs);
    led.push(ledgerNs);
    ratios.push(ledgerNs / bareNs);
  }
  const bareMs = median(bare) / 1e6;
  const ledMs = median(led) / 1e6;
  console.log(
    `append with fsync: ledger.append ${fmt(ledMs)} ms (${fmt(1000 / ledMs, 0)}/s) vs appendFileSync+fsyncSync ${fmt(bareMs)} ms (${fmt(1000 / bareMs, 0)}/s): ratio ${fmt(median(ratios))}×, +${fmt(ledMs - bareMs)} ms per append (record ${sample.length} bytes, ${N} appends × ${ROUNDS} rounds; the ratio falls as fsync gets slower)`,
  );
  // Batching amortizes the lock and the fsync: one appendBatch of 100 records.
  const ledger = Ledger.open(join(dir, 'batch.jsonl'));
  /** @type {number[]} */ const batchNs = [];
  for (let r = 0; r < ROUNDS; r++) {
    const records = Array.from({ length: 100 }, (_, i) => snapshot('session-0001', `b-${r}-${i}`, 'pre', i));
    const t = process.hrtime.bigint();
    await ledger.appendBatch(records);
    batchNs.push(Number(process.hrtime.bigint() - t) / 100);
  }
  await ledger.close();
  const batchMs = median(batchNs) / 1e6;
  console.log(
    `appendBatch of 100: ${fmt(batchMs, 3)} ms per record (${fmt(1000 / batchMs, 0)}/s): ${fmt(batchMs / bareMs)}× the bare append+fsync of one line`,
  );
}

// ── 2. status --session, 1 000 vs 100 000 records ────────────────────────────────────────────
/**
 * Builds a ledger of `total` records: the measured session's boundary (pre, boundary report,
 * approval, post) among the first records, then other sessions' snapshots and activity.
 * @param {number} total
 */
async function buildLedger(total) {
  const path = join(dir, `status-${total}.jsonl`);
  const ledger = Ledger.open(path);
  // The approval counts only signed by a key the ledger pins (docs/security.md): a key made for
  // the run, pinned first, signs it.
  const { privateKey } = generateKeyPairSync('ed25519');
  const certificate = certify(publicKeyHex(privateKey), at(0), null, privateKey);
  const approval = {
    decision: 'target',
    fromDigest: digest(2),
    toDigest: digest(99),
    approvalRef: 'PR-1',
    approvedBy: 'alice',
    approvedAt: at(3),
    boundaryId: 'b-measured',
    keyId: keyIdOf(privateKey),
  };
  const signature = signStatement(
    approvalStatement({ ...approval, sessionId: 'measured-session' }),
    privateKey,
  );
  /** @type {import('../dist/core.js').NewRecord[]} */
  let batch = [
    /** @type {import('../dist/core.js').NewRecord} */ ({ type: 'approver_key', ...certificate }),
    snapshot('measured-session', 'b-measured', 'pre', 1),
    {
      type: 'boundary',
      sessionId: 'measured-session',
      boundaryId: 'b-measured',
      trigger: 'auto',
      compactedAt: at(2),
    },
    { type: 'approval', sessionId: 'measured-session', ...approval, signature },
    {
      ...snapshot('measured-session', 'b-measured', 'post', 1),
      capturedAt: at(4),
      decisions: {
        scope: { digest: digest(1), revision: 1, observedAt: at(4) },
        target: { digest: digest(99), revision: 2, observedAt: at(4) },
        acceptance_test: { digest: digest(3), revision: 1, observedAt: at(4) },
      },
    },
  ];
  for (let i = batch.length; i < total; i++) {
    batch.push(filler(i));
    if (batch.length === 2000) {
      await ledger.appendBatch(batch);
      batch = [];
    }
  }
  if (batch.length > 0) await ledger.appendBatch(batch);
  await ledger.close();
  writePin(path, [certificate]);
  return path;
}

/**
 * The other sessions' record number `i` (i ≥ 4): snapshots and activity over 500 sessions.
 * @param {number} i @returns {import('../dist/core.js').NewRecord}
 */
function filler(i) {
  const s = `session-${i % 500}`;
  return i % 3 === 0
    ? { type: 'activity', sessionId: s, state: 'working', at: at(i % 3600) }
    : snapshot(s, `b-${Math.floor(i / 1000)}`, i % 3 === 1 ? 'pre' : 'post', i);
}

/**
 * Writes a ledger of `total` records straight from `sealRecord` (the lines `Ledger.append`
 * writes, without its per-record validation, so a million records take seconds, not minutes),
 * then opens it once so the index is built as a writer would.
 * @param {number} total
 */
function writeSealedLedger(total) {
  const path = join(dir, `sealed-${total}.jsonl`);
  const fd = openSync(path, 'w', 0o600);
  /** @type {string | null} */ let prev = null;
  /** @type {string[]} */ let lines = [];
  for (let seq = 1; seq <= total; seq++) {
    const { line, hash } = sealRecord({ v: 1, ...filler(seq + 3), seq, prev }, undefined);
    lines.push(line);
    prev = hash;
    if (lines.length === 10_000) {
      writeSync(fd, lines.join(''));
      lines = [];
    }
  }
  if (lines.length > 0) writeSync(fd, lines.join(''));
  closeSync(fd);
  return path;
}

/** @param {string[]} args */
function timeChild(args) {
  const t = process.hrtime.bigint();
  const r = spawnSync(process.execPath, args, {
    encoding: 'utf8',
    env: { ...process.env, CONTINUITY_LEDGER: '' },
  });
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return { ms: Number(process.hrtime.bigint() - t) / 1e6, stdout: r.stdout };
}

/** @param {() => unknown} fn @param {number} n */
function timeInProcess(fn, n) {
  fn();
  const t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) fn();
  return Number(process.hrtime.bigint() - t) / n / 1e6;
}

async function statusScaling() {
  let t = Date.now();
  const small = await buildLedger(1_000);
  const large = await buildLedger(100_000);
  console.log(
    `built ledgers of 1 000 and 100 000 records (${fmt(statSync(large).size / 1e6, 1)} MB) in ${fmt((Date.now() - t) / 1000, 1)} s`,
  );
  for (const p of [small, large]) {
    const out = JSON.parse(
      timeChild([cli, 'status', '--session', 'measured-session', '--json', '--ledger', p]).stdout,
    );
    if (out.sessions[0]?.state !== 'approved_change')
      throw new Error(`unexpected state ${JSON.stringify(out)}`);
  }
  /** @type {number[]} */ const smallMs = [];
  /** @type {number[]} */ const largeMs = [];
  /** @type {number[]} */ const ratios = [];
  for (let r = 0; r < 9; r++) {
    const a = timeChild([cli, 'status', '--session', 'measured-session', '--ledger', small]).ms;
    const b = timeChild([cli, 'status', '--session', 'measured-session', '--ledger', large]).ms;
    smallMs.push(a);
    largeMs.push(b);
    ratios.push(b / a);
  }
  console.log(
    `status --session (child process): 100 000 records ${fmt(median(largeMs), 0)} ms vs 1 000 records ${fmt(median(smallMs), 0)} ms: ratio ${fmt(median(ratios))}× (target ≤ 1.5×)`,
  );
  t = Date.now();
  const idxSmall = timeInProcess(() => readLatestBoundary(small, 'measured-session'), 500);
  const idxLarge = timeInProcess(() => readLatestBoundary(large, 'measured-session'), 500);
  const scanSmall = timeInProcess(
    () => readLatestBoundary(small, 'measured-session', { forceScan: true }),
    20,
  );
  const scanLarge = timeInProcess(
    () => readLatestBoundary(large, 'measured-session', { forceScan: true }),
    3,
  );
  console.log(
    `readLatestBoundary in process, index: 100 000 records ${fmt(idxLarge, 3)} ms vs 1 000 ${fmt(idxSmall, 3)} ms: ratio ${fmt(idxLarge / idxSmall)}×`,
  );
  console.log(
    `readLatestBoundary in process, full scan (no index): 100 000 records ${fmt(scanLarge, 1)} ms vs 1 000 ${fmt(scanSmall, 2)} ms: ratio ${fmt(scanLarge / scanSmall, 0)}×; the index is ${fmt(scanLarge / idxLarge, 0)}× faster at 100 000`,
  );
  return { large };
}

// ── 4. verify per record, against SHA-256 of the same bytes ──────────────────────────────────
/** @param {string} path */
function verifySpeed(path) {
  const records = verifyLedger(path);
  if (!records.ok) throw new Error(`bench ledger does not verify: ${records.message}`);
  const n = records.records;
  /** @type {number[]} */ const verifyUs = [];
  /** @type {number[]} */ const hashUs = [];
  /** @type {number[]} */ const ratios = [];
  for (let r = 0; r < ROUNDS; r++) {
    let t = process.hrtime.bigint();
    createHash('sha256').update(readFileSync(path)).digest('hex');
    const h = Number(process.hrtime.bigint() - t) / 1e3 / n;
    t = process.hrtime.bigint();
    verifyLedger(path);
    const v = Number(process.hrtime.bigint() - t) / 1e3 / n;
    hashUs.push(h);
    verifyUs.push(v);
    ratios.push(v / h);
  }
  console.log(
    `ledger verify: ${fmt(median(verifyUs))} µs per record vs read + node:crypto SHA-256 of the same bytes ${fmt(median(hashUs), 3)} µs per record: ratio ${fmt(median(ratios), 1)}× (${n} records, ${fmt(statSync(path).size / 1e6, 1)} MB, ${ROUNDS} rounds)`,
  );
}

// ── 5. plain status (every session), 1 000 vs 1 000 000 records ──────────────────────────────
async function plainStatusScaling() {
  const total = Number(process.env.LEDGER_BENCH_LARGE ?? 1_000_000);
  const t = Date.now();
  const small = writeSealedLedger(1_000);
  const large = writeSealedLedger(total);
  for (const p of [small, large]) await Ledger.open(p).close();
  console.log(
    `wrote and indexed a ledger of ${total} records (${fmt(statSync(large).size / 1e6, 0)} MB) in ${fmt((Date.now() - t) / 1000, 1)} s`,
  );
  const rows = (/** @type {string} */ p) =>
    JSON.parse(timeChild([cli, 'status', '--json', '--ledger', p]).stdout).sessions.length;
  const smallRows = rows(small);
  const largeRows = rows(large);
  /** @type {number[]} */ const smallMs = [];
  /** @type {number[]} */ const largeMs = [];
  /** @type {number[]} */ const ratios = [];
  for (let r = 0; r < ROUNDS; r++) {
    const a = timeChild([cli, 'status', '--ledger', small]).ms;
    const b = timeChild([cli, 'status', '--ledger', large]).ms;
    smallMs.push(a);
    largeMs.push(b);
    ratios.push(b / a);
  }
  console.log(
    `status, every session (child process): ${total} records ${fmt(median(largeMs), 0)} ms (${largeRows} sessions) vs 1 000 records ${fmt(median(smallMs), 0)} ms (${smallRows} sessions): ratio ${fmt(median(ratios))}×`,
  );
}

// ── 3. loading the lean reader ───────────────────────────────────────────────────────────────
function leanImport() {
  const latest = join(root, 'dist', 'ledger', 'latest.js');
  const full = join(root, 'dist', 'ledger', 'ledger.js');
  const load = (/** @type {string} */ p) => `import(${JSON.stringify(p)})`;
  /** @type {number[]} */ const bare = [];
  /** @type {number[]} */ const lean = [];
  /** @type {number[]} */ const heavy = [];
  for (let r = 0; r < 15; r++) {
    bare.push(timeChild(['-e', '0']).ms);
    lean.push(timeChild(['-e', load(latest)]).ms);
    heavy.push(timeChild(['-e', load(full)]).ms);
  }
  const b = median(bare);
  console.log(
    `start-up: node -e 0 ${fmt(b, 0)} ms; import dist/ledger/latest.js ${fmt(median(lean), 0)} ms (${fmt(median(lean) / b)}×); import dist/ledger/ledger.js (with zod) ${fmt(median(heavy), 0)} ms (${fmt(median(heavy) / b)}×)`,
  );
}

try {
  await appendThroughput();
  const { large } = await statusScaling();
  leanImport();
  verifySpeed(large);
  await plainStatusScaling();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
