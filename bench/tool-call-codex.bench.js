import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
const work = mkdtempSync(join(tmpdir(), 'tool-call-codex-bench-'));

/** The tests' scripted server, peer installer and Codex config, and the adapter's trust hash, bundled. */
async function support() {
  return bundleSupport(work, [
    "export { startResponsesServer } from './test/support/responses-server.ts';",
    "export { ensureNpmPeer, PEERS } from './test/support/peers.ts';",
    "export { trustKey, trustedHash } from './src/adapters/codex/trust.ts';",
  ]);
}

/** A project with a task record and files to read. */
function project(name) {
  const dir = join(work, name, 'project');
  mkdirSync(join(dir, '.continuity'), { recursive: true });
  for (let i = 0; i < READS; i++) writeFileSync(join(dir, `r${i}.txt`), `read ${i}\n`);
  writeFileSync(
    join(dir, '.continuity', 'task.json'),
    JSON.stringify({
      decisions: { scope: { value: { paths: ['src'] } }, acceptance_test: { value: 'npm test' } },
    }),
  );
  return dir;
}

/** The turn: reads, writes and commands interleaved, one tool call per response, then done. */
function steps(dir, round) {
  const out = [];
  let r = 0;
  let w = 0;
  let c = 0;
  for (let i = 0; i < CALLS; i++) {
    if (i % 2 === 0 && r < READS) out.push({ shell: `cat r${r++}.txt`, workdir: dir });
    else if (w <= c && w < WRITES)
      out.push({ writeFile: { path: join(dir, `w${round}-${w++}.txt`), content: 'x\n' } });
    else if (c < COMMANDS) out.push({ shell: `echo ${c} > c${round}-${c++}.txt`, workdir: dir });
    else out.push({ shell: `cat r${r++ % READS}.txt`, workdir: dir });
  }
  out.push('Done.');
  return out;
}

/** Codex's config.toml: the scripted provider, no network, no approvals (as test/codex-e2e writes it). */
function providerConfig(server) {
  return [
    'model = "gpt-5.5"',
    'model_provider = "scripted"',
    'approval_policy = "never"',
    'sandbox_mode = "danger-full-access"',
    '',
    '[model_providers.scripted]',
    'name = "scripted"',
    `base_url = "${server.baseUrl}"`,
    'wire_api = "responses"',
    'env_key = "OPENAI_API_KEY"',
    '',
    '[analytics]',
    'enabled = false',
    '',
    '[features]',
    'plugins = false',
    '',
  ].join('\n');
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const { startResponsesServer, ensureNpmPeer, PEERS, trustKey, trustedHash } = await support();
  const { bin: codex } = await ensureNpmPeer(PEERS.codex);
  const state = join(work, 'state');
  const env = (name) => ({
    PATH: process.env.PATH,
    HOME: join(work, name, 'home'),
    CODEX_HOME: join(work, name, 'codex-home'),
    OPENAI_API_KEY: 'sk-test',
    RUST_LOG: 'warn',
    CONTINUITY_STATE_DIR: state,
    CONTINUITY_LEDGER: join(state, 'ledger.jsonl'),
  });
  // One server for every run (its base URL goes into each config.toml once); it consumes its
  // steps in order, each of which takes the next reply of the current run's script.
  /** @type {unknown[]} */
  let script = [];
  const server = await startResponsesServer({
    steps: Array.from({ length: 10_000 }, () => () => script.shift() ?? 'Done.'),
  });
  const homes = {};
  for (const name of ['init', 'none', 'noop']) {
    mkdirSync(join(work, name, 'home'), { recursive: true });
    mkdirSync(join(work, name, 'codex-home'), { recursive: true });
    writeFileSync(join(work, name, 'codex-home', 'config.toml'), providerConfig(server));
    homes[name] = project(name);
  }
  // (a): the real init; (c): its hooks.json with every command `true`, trusted as Codex hashes it.
  const init = await run(process.execPath, [BIN, 'init', 'codex', '--command', `node ${BIN}`], {
    env: env('init'),
    cwd: homes.init,
  });
  if (init.code !== 0) throw new Error(`continuity init codex failed: ${init.stderr}`);
  const hooksDoc = JSON.parse(readFileSync(join(work, 'init', 'codex-home', 'hooks.json'), 'utf8'));
  const noopPath = join(work, 'noop', 'codex-home', 'hooks.json');
  const trust = [];
  const noopHooks = {};
  for (const [event, groups] of Object.entries(hooksDoc.hooks ?? {})) {
    noopHooks[event] = groups.map((g, gi) => ({
      ...g,
      hooks: g.hooks.map((h, hi) => {
        const handler = { ...h, command: 'true' };
        trust.push(
          `[hooks.state.${JSON.stringify(trustKey(noopPath, event, gi, hi))}]\ntrusted_hash = "${trustedHash(event, g.matcher, handler)}"\n`,
        );
        return handler;
      }),
    }));
  }
  writeFileSync(noopPath, JSON.stringify({ ...hooksDoc, hooks: noopHooks }, null, 2));
  appendFileSync(join(work, 'noop', 'codex-home', 'config.toml'), `\n${trust.join('\n')}`);

  /** @type {Record<string, number[]>} */
  const times = { init: [], none: [], noop: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of ['init', 'none', 'noop']) {
      script = steps(homes[name], round);
      const before = server.requestsOf('turn').length;
      const t0 = process.hrtime.bigint();
      const r = await run(codex, ['exec', '--skip-git-repo-check', '--json', 'go'], {
        env: env(name),
        cwd: homes[name],
      });
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      const turns = server.requestsOf('turn').length - before;
      const written = readFileSync(join(homes[name], `c${round}-${COMMANDS - 1}.txt`), 'utf8');
      if (
        r.code !== 0 ||
        script.length > 0 ||
        turns !== CALLS + 1 ||
        written.trim() !== String(COMMANDS - 1)
      ) {
        throw new Error(
          `${name}: codex exited ${r.code}, ${turns}/${CALLS + 1} turns, ${script.length} steps left: ${r.stderr.slice(0, 400)}`,
        );
      }
      times[name].push(ms);
    }
  }
  await server.close();
  const none = median(times.none);
  const added = (median(times.init) - none) / CALLS;
  const floor = (median(times.noop) - none) / CALLS;
  const fmt = (x) => x.toFixed(1).padStart(7);
  console.log(
    `Codex ${PEERS.codex.id.split('@')[1]}, one turn of ${CALLS} tool calls (${READS} shell reads, ${WRITES} apply_patch writes, ${COMMANDS} shell writes), median of ${ROUNDS} interleaved runs`,
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
    console.error(`tool-call-codex bench: ${e.message}`);
    process.exitCode = 1;
  })
  .finally(() => rmSync(work, { recursive: true, force: true }));
