// @ts-check
// The Claude Code hooks' latency per invocation, as ratios against a bare `node -e 0` process
// spawned the same way in the same run (every hook is a fresh process, so process start-up is
// the floor). Goals: the gate's fast path at most 1.25x that floor, PreCompact at most 4x. The
// hooks run from the bundled CommonJS entry (dist/hook.cjs and the bundles it requires, built by
// `npm run build`); an empty CommonJS file is printed beside the baseline as the true floor.
//
// 1. gate, fast path: PreToolUse(Write) in a session whose cached state says nothing blocks
//    (the case for nearly every tool call): stdin, config, one small cache file, no output.
// 2. gate, blocking path: the cache says the boundary is unresolved, so the gate re-reads the
//    ledger (lean reader) and the classifier before it denies (rare: right after compaction).
// 3. PreCompact: read and digest the task record (approvals from the ledger's lean reader), keep
//    the pending capture in the session's cache (lock, atomic write), print the summarizer line.
// 4. SessionStart(compact), the confirmation: append the pre snapshot and the boundary record
//    (lock, fsync), export the pre span (here to a closed port: the request is spooled, a 0600
//    file with fsync), print the restatement request.
//
// Run: npm run bench (builds first), or node bench/run.js gate after `npm run build`.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROUNDS = 9;
const PER_ROUND = 8;
const BIN = fileURLToPath(new URL('../bin/continuity.js', import.meta.url));

const root = mkdtempSync(join(tmpdir(), 'gate-bench-'));
const project = join(root, 'project');
mkdirSync(join(project, '.continuity'), { recursive: true });
writeFileSync(
  join(project, '.continuity', 'task.json'),
  JSON.stringify({
    decisions: {
      scope: { value: { repository: 'acme/payments', paths: ['services/ledger'] } },
      approval_boundary: { value: { requires_human: ['deploy', 'schema_migration'] } },
      acceptance_test: { value: { command: 'npm test -- ledger', must_pass: true } },
    },
  }),
);
/** @type {NodeJS.ProcessEnv} */
const env = {
  PATH: process.env.PATH,
  HOME: join(root, 'home'),
  CLAUDE_PROJECT_DIR: project,
  CONTINUITY_STATE_DIR: join(root, 'state'),
  CONTINUITY_LEDGER: join(root, 'state', 'ledger.jsonl'),
  CONTINUITY_OTLP_ENDPOINT: 'http://127.0.0.1:9', // closed: exports go to the spool
  CONTINUITY_OTLP_TIMEOUT_MS: '500',
};

/** @param {string} session @param {string} event @param {Record<string, unknown>} extra */
function payload(session, event, extra = {}) {
  return JSON.stringify({
    session_id: session,
    transcript_path: '/home/u/.claude/projects/p/t.jsonl',
    cwd: project,
    hook_event_name: event,
    ...extra,
  });
}

/** @param {string[]} args @param {string} input */
function timeSpawn(args, input) {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(process.execPath, args, { input, env, cwd: project });
  const ns = Number(process.hrtime.bigint() - t0);
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return { ns, stdout: String(r.stdout) };
}

const write = {
  tool_name: 'Write',
  tool_input: { file_path: 'src/a.ts', content: 'x'.repeat(2000) },
  tool_use_id: 't',
};
const hook = [BIN, 'hook', 'claude-code'];

// Sessions: one that never compacted (cached), one that compacted and was not re-observed.
timeSpawn(hook, payload('bench-fast', 'SessionStart', { source: 'startup' }));
timeSpawn(hook, payload('bench-blocked', 'PreCompact', { trigger: 'auto' }));
timeSpawn(hook, payload('bench-blocked', 'SessionStart', { source: 'compact' }));
const check = timeSpawn(hook, payload('bench-blocked', 'PreToolUse', write));
if (!check.stdout.includes('"deny"')) throw new Error('bench setup: the blocked session was not denied');
if (timeSpawn(hook, payload('bench-fast', 'PreToolUse', write)).stdout !== '')
  throw new Error('bench setup: fast path denied');

const empty = join(root, 'empty.cjs');
writeFileSync(empty, '');

let preCount = 0;
let confirmCount = 0;
/** @type {Array<[string, () => number]>} */
const variants = [
  ['node -e 0 (baseline)', () => timeSpawn(['-e', '0'], payload('x', 'PreToolUse', write)).ns],
  ['an empty CommonJS file', () => timeSpawn([empty], payload('x', 'PreToolUse', write)).ns],
  ['gate, fast path (allow)', () => timeSpawn(hook, payload('bench-fast', 'PreToolUse', write)).ns],
  ['gate, blocking path (deny)', () => timeSpawn(hook, payload('bench-blocked', 'PreToolUse', write)).ns],
  [
    'PreCompact (digests + pending capture)',
    () => timeSpawn(hook, payload(`bench-pre-${preCount++}`, 'PreCompact', { trigger: 'auto' })).ns,
  ],
  [
    'SessionStart(compact) (ledger + spool)',
    () => {
      const session = `bench-confirm-${confirmCount++}`;
      timeSpawn(hook, payload(session, 'PreCompact', { trigger: 'auto' }));
      return timeSpawn(hook, payload(session, 'SessionStart', { source: 'compact' })).ns;
    },
  ],
];

/** @param {number[]} xs */
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] ?? 0) : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
};

for (const [, fn] of variants) fn(); // warm the file cache
/** @type {number[][]} per variant, per round: the median ns of the round */
const perRound = variants.map(() => []);
for (let r = 0; r < ROUNDS; r++) {
  /** @type {number[][]} */
  const samples = variants.map(() => []);
  // Interleaved, so a burst of load from another process hits every variant alike.
  for (let i = 0; i < PER_ROUND; i++) for (const [v, [, fn]] of variants.entries()) samples[v]?.push(fn());
  for (const [v, s] of samples.entries()) perRound[v]?.push(median(s));
}
const base = perRound[0] ?? [];
console.log(
  `Claude Code hook latency per invocation (${ROUNDS} rounds x ${PER_ROUND}, medians; ratio per round, then median)`,
);
for (const [v, [name]] of variants.entries()) {
  const ms = median(perRound[v] ?? []) / 1e6;
  const ratio = median((perRound[v] ?? []).map((x, r) => x / (base[r] ?? x)));
  const goal = name.startsWith('gate, fast')
    ? '  (goal <= 1.25x)'
    : name.startsWith('PreCompact')
      ? '  (goal <= 4x)'
      : '';
  console.log(`  ${name.padEnd(40)} ${ms.toFixed(1).padStart(7)} ms   ${ratio.toFixed(2)}x${goal}`);
}
rmSync(root, { recursive: true, force: true });
