import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleSupport, run } from './tool-call-support.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS) || 3;
const READS = 10;
const WRITES = 5;
const COMMANDS = 5;
const CALLS = READS + WRITES + COMMANDS;
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(ROOT, 'bin', 'continuity.js');
const work = mkdtempSync(join(tmpdir(), 'tool-call-bench-'));

/** The tests' scripted server and peer installer, bundled to one ES module. */
async function support() {
  return bundleSupport(work, [
    "export { startAnthropicServer } from './test/support/anthropic-server.ts';",
    "export { ensureNpmPeer, PEERS } from './test/support/peers.ts';",
  ]);
}

/** A project with `settings` as .claude/settings.json (null: no file), a task record and files to read. */
function project(name, settings) {
  const dir = join(work, name);
  mkdirSync(join(dir, '.claude'), { recursive: true });
  mkdirSync(join(dir, '.continuity'), { recursive: true });
  for (let i = 0; i < READS; i++) writeFileSync(join(dir, `r${i}.txt`), `read ${i}\n`);
  if (settings) writeFileSync(join(dir, '.claude', 'settings.json'), JSON.stringify(settings, null, 2));
  return dir;
}

/** The no-op twin of init's settings: every hook command replaced by `true`, nothing else kept. */
function noOpTwin(settings) {
  const hooks = {};
  for (const [event, groups] of Object.entries(settings.hooks ?? {})) {
    hooks[event] = groups.map((g) => ({ ...g, hooks: g.hooks.map((h) => ({ ...h, command: 'true' })) }));
  }
  return { hooks };
}

/** The turn: reads, writes and commands interleaved, one tool call per request, then done. */
function steps(dir) {
  const out = [];
  let r = 0;
  let w = 0;
  let c = 0;
  for (let i = 0; i < CALLS; i++) {
    if (i % 2 === 0 && r < READS) out.push({ tool: 'Read', input: { file_path: join(dir, `r${r++}.txt`) } });
    else if (w <= c && w < WRITES)
      out.push({ tool: 'Write', input: { file_path: join(dir, `w${w++}.txt`), content: 'x\n' } });
    else if (c < COMMANDS)
      out.push({ tool: 'Bash', input: { command: `echo ${c++} > c${c}.txt`, description: 'c' } });
    else out.push({ tool: 'Read', input: { file_path: join(dir, `r${r++ % READS}.txt`) } });
  }
  out.push('Done.');
  return out;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const { startAnthropicServer, ensureNpmPeer, PEERS } = await support();
  const { bin: claude } = await ensureNpmPeer(PEERS.claudeCode);
  const state = join(work, 'state');
  const env = (home) => ({
    PATH: process.env.PATH,
    HOME: home,
    CLAUDE_CONFIG_DIR: join(home, 'config'),
    ANTHROPIC_API_KEY: 'test',
    DISABLE_TELEMETRY: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    TERM: 'dumb',
    CONTINUITY_STATE_DIR: state,
    CONTINUITY_LEDGER: join(state, 'ledger.jsonl'),
  });

  // (a): the real init in a project of its own, then its settings for the twin.
  const withInit = project('init', null);
  const init = await run(process.execPath, [BIN, 'init', 'claude-code', '--command', `node ${BIN}`], {
    env: env(join(work, 'home-init')),
    cwd: withInit,
  });
  if (init.code !== 0) throw new Error(`continuity init claude-code failed: ${init.stderr}`);
  writeFileSync(
    join(withInit, '.continuity', 'task.json'),
    JSON.stringify({
      decisions: { scope: { value: { paths: ['src'] } }, acceptance_test: { value: 'npm test' } },
    }),
  );
  const initSettings = JSON.parse(readFileSync(join(withInit, '.claude', 'settings.json'), 'utf8'));
  const configs = [
    { name: 'init', dir: withInit },
    { name: 'none', dir: project('none', null) },
    { name: 'noop', dir: project('noop', noOpTwin(initSettings)) },
  ];

  /** @type {Record<string, number[]>} */
  const times = { init: [], none: [], noop: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const c of configs) {
      const home = join(work, `home-${c.name}-${round}`);
      mkdirSync(join(home, 'config'), { recursive: true });
      const server = await startAnthropicServer({ steps: steps(c.dir) });
      const t0 = process.hrtime.bigint();
      const r = await run(
        claude,
        ['-p', 'go', '--output-format', 'json', '--allowedTools', 'Bash Edit Write Read'],
        { env: { ...env(home), ANTHROPIC_BASE_URL: server.url }, cwd: c.dir },
      );
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      const used = server.stepsUsed;
      await server.close();
      if (r.code !== 0 || used !== CALLS + 1 || server.problems.length > 0) {
        throw new Error(
          `${c.name}: claude exited ${r.code}, ${used}/${CALLS + 1} steps, ${server.problems.join('; ')}`,
        );
      }
      times[c.name].push(ms);
    }
  }
  const none = median(times.none);
  const added = (median(times.init) - none) / CALLS;
  const floor = (median(times.noop) - none) / CALLS;
  const fmt = (x) => x.toFixed(1).padStart(7);
  console.log(
    `Claude Code ${PEERS.claudeCode.id.split('@')[1]}, one turn of ${CALLS} tool calls (${READS} Read, ${WRITES} Write, ${COMMANDS} Bash), median of ${ROUNDS} interleaved runs`,
  );
  console.log(`  turn, no hooks                     ${fmt(none)} ms`);
  console.log(
    `  turn, no-op hooks (true)           ${fmt(median(times.noop))} ms   +${floor.toFixed(1)} ms per tool call (the floor)`,
  );
  console.log(
    `  turn, continuity init's hooks      ${fmt(median(times.init))} ms   +${added.toFixed(1)} ms per tool call`,
  );
  // On a loaded machine the floor (a shell and `true`) can be smaller than the run-to-run noise.
  if (floor >= 1)
    console.log(`  continuity / no-op floor, per tool call: ${(added / floor).toFixed(2)}x (goal <= 1.5x)`);
  else
    console.log(
      `  continuity / no-op floor, per tool call: not meaningful (the floor, ${floor.toFixed(1)} ms, is within this run's noise; goal <= 1.5x)`,
    );
}

main()
  .catch((e) => {
    console.error(`tool-call bench: ${e.message}`);
    process.exitCode = 1;
  })
  .finally(() => rmSync(work, { recursive: true, force: true }));
