// @ts-check
// The Agent SDK adapter's callbacks, in the application's process (no process per event), as
// ratios against baselines measured in the same run:
//
// 1. gate, fast path: PreToolUse(Write) in a session whose cached state says nothing blocks (nearly
//    every tool call), against reading and parsing that one cache file by hand (the least any gate
//    keeping its state in a file does), and against spawning `node -e 0` (the floor of a hook that
//    is a process, as Claude Code's are).
// 2. PreCompact (task record digested, pending capture kept under the session lock) and
//    SessionStart(compact) (pre snapshot + boundary appended with fsync, the pre span handed to a
//    registered tracer provider), against one `appendFileSync` + `fsyncSync` of a ledger-sized line.
//
// Run: npm run bench (builds first), or node bench/run.js agent-sdk after `npm run build`.
import { spawnSync } from 'node:child_process';
import {
  closeSync,
  fsyncSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { trace } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { createAgentSdkContinuity } from '../dist/adapters/claude-agent-sdk/index.js';

const ROUNDS = 7;
const root = mkdtempSync(join(tmpdir(), 'asdk-bench-'));
const project = join(root, 'project');
const state = join(root, 'state');
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
const exporter = new InMemorySpanExporter();
trace.setGlobalTracerProvider(
  new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
);
const c = createAgentSdkContinuity({
  projectDir: project,
  env: {
    PATH: process.env.PATH,
    HOME: root,
    CONTINUITY_STATE_DIR: state,
    CONTINUITY_LEDGER: join(state, 'ledger.jsonl'),
  },
  onWarning: () => {},
});
const signal = { signal: new AbortController().signal };
/** @param {string} sid @param {string} event @param {Record<string, unknown>} extra */
const input = (sid, event, extra = {}) => ({
  session_id: sid,
  transcript_path: '/t',
  cwd: project,
  hook_event_name: event,
  ...extra,
});
const gate = c.hooks.PreToolUse[0].hooks[0];
const preCompact = c.hooks.PreCompact[0].hooks[0];
const sessionStart = c.hooks.SessionStart[0].hooks[0];

/** Median of per-call microseconds over ROUNDS rounds of `n` calls. @param {() => unknown} fn @param {number} n */
async function measure(fn, n) {
  const rounds = [];
  for (let r = 0; r < ROUNDS; r++) {
    const t = process.hrtime.bigint();
    for (let i = 0; i < n; i++) await fn();
    rounds.push(Number(process.hrtime.bigint() - t) / 1e3 / n);
  }
  rounds.sort((a, b) => a - b);
  return rounds[Math.floor(rounds.length / 2)];
}

// A session with a preserved boundary is the common case; a fresh one (no compaction) is the same path.
const sid = '4f0ccb8f-b87e-412a-a189-d460d6d6b1a2';
const write = input(sid, 'PreToolUse', {
  tool_name: 'Write',
  tool_input: { file_path: join(project, 'a.txt') },
  tool_use_id: 't',
});
await gate(write, 't', signal);
const cacheFile = spawnSync(
  'sh',
  ['-c', `ls ${state}/claude-agent-sdk/sessions/*/gate.json 2>/dev/null | head -1`],
  { encoding: 'utf8' },
).stdout.trim();
if (!cacheFile) writeFileSync(join(root, 'gate.json'), '{"v":2,"sessionId":"x","boundary":null}');
const cache = cacheFile || join(root, 'gate.json');

const gateUs = await measure(() => gate(write, 't', signal), 400);
const readUs = await measure(() => JSON.parse(readFileSync(cache, 'utf8')), 400);
const spawnUs = await measure(() => spawnSync(process.execPath, ['-e', '0']), 5);
console.log(`gate fast path (PreToolUse, in process): ${gateUs.toFixed(1)} µs per call`);
console.log(
  `  vs reading + parsing the cache file:   ${(gateUs / readUs).toFixed(2)}x (${readUs.toFixed(1)} µs)`,
);
console.log(
  `  vs spawning node -e 0 (a hook process): ${(gateUs / spawnUs).toFixed(4)}x (${(spawnUs / 1000).toFixed(1)} ms)`,
);

let n = 0;
const preUs = await measure(
  () => preCompact(input(`s-${n++}`, 'PreCompact', { trigger: 'auto' }), undefined, signal),
  40,
);
let m = 0;
const confirmUs = await measure(async () => {
  const s = `b-${m++}`;
  await preCompact(input(s, 'PreCompact', { trigger: 'auto' }), undefined, signal);
  await sessionStart(input(s, 'SessionStart', { source: 'compact' }), undefined, signal);
}, 20);
const line = `${'x'.repeat(400)}\n`;
const fd = openSync(join(root, 'append.jsonl'), 'a');
const appendUs = await measure(() => {
  writeSync(fd, line);
  fsyncSync(fd);
}, 40);
closeSync(fd);
console.log(
  `PreCompact (pending capture): ${preUs.toFixed(0)} µs; vs append + fsync: ${(preUs / appendUs).toFixed(2)}x (${appendUs.toFixed(0)} µs)`,
);
console.log(
  `PreCompact + SessionStart(compact) (confirmation, ledger + span): ${confirmUs.toFixed(0)} µs; vs append + fsync: ${(confirmUs / appendUs).toFixed(2)}x`,
);
console.log(`spans handed to the registered provider: ${exporter.getFinishedSpans().length}`);
rmSync(root, { recursive: true, force: true });
