#!/usr/bin/env node
// The `continuity` command. CommonJS (bin/package.json), so that `continuity hook <runtime>`, the
// write gate among the hooks, loads two CommonJS files (this one and the bundled dist/hook.cjs)
// and never starts the ES module loader; every other command loads the CLI (an ES module).
'use strict';
const argv = process.argv.slice(2);

function cli() {
  import('../dist/cli/main.js').then(
    async ({ runCli }) => {
      process.exitCode = await runCli(argv);
    },
    (e) => {
      process.stderr.write(`continuity: ${e.message}; run npm run build in the checkout\n`);
      process.exitCode = 3;
    },
  );
}

/** The environment variable that sets the floor `serve` starts with, in MiB (0: none). */
const HEAP_FLOOR_ENV = 'CONTINUITY_SERVE_HEAP_FLOOR_MB';
const HEAP_FLOOR_DEFAULT_MB = 128;

/**
 * `continuity serve` replaces itself (same pid, same command) with a floor under V8's
 * old-generation limit, `node --initial-old-space-size=128`: under sustained load the requests
 * queued for the downstream otherwise set off a full mark-compact every 50-100 requests
 * (docs/service.md, "Run it"). V8 reads the flag only from the node command line, so the process
 * is re-executed in place with process.execve (Node 22.15 and later; not on Windows); being the
 * same process, it is still the one a supervisor's kill -9 reaches. Where there is no execve
 * (Node 20), under an IPC channel (a fork's channel would not survive it), or when the exec fails,
 * `serve` applies the floor from inside the process instead (src/service/heap-floor.ts). Nothing
 * happens when the command line already sets the size, or when CONTINUITY_SERVE_HEAP_FLOOR_MB is 0.
 * Returns only when it does not re-execute.
 */
function serveWithHeapFloor() {
  const raw = process.env[HEAP_FLOOR_ENV];
  const mb = raw === undefined || raw.trim() === '' ? HEAP_FLOOR_DEFAULT_MB : Number(raw);
  if (!Number.isInteger(mb) || mb < 0 || mb > 1048576) {
    process.stderr.write(
      `continuity: ${HEAP_FLOOR_ENV}: expected a whole number of MiB from 0 (no floor) to 1048576, e.g. ${HEAP_FLOOR_DEFAULT_MB}\n`,
    );
    process.exit(2);
  }
  if (mb === 0 || typeof process.execve !== 'function' || process.channel) return;
  if (process.execArgv.some((a) => /^--initial-(old-space|heap)-size(=|$)/.test(a))) return;
  const args = [...process.execArgv, `--initial-old-space-size=${mb}`, __filename, ...argv];
  try {
    process.execve(process.execPath, [process.execPath, ...args], process.env);
  } catch {
    // The exec itself failed (the process is unchanged): serve without the floor.
  }
}

/**
 * dist/hook.cjs, compiled from V8's code cache that the build made beside it (dist/hook.cjs.cache,
 * scripts/hook-code-cache.cjs) when this Node's V8 accepts it: every tool call starts a hook
 * process, and compiling the bundle is much of what the write gate adds to a bare node. A cache
 * older than the bundle is not used (V8 itself checks only the source's length); one V8 rejects
 * (another Node, other flags) costs only its read. Without one, a plain require.
 */
function loadHook() {
  const fs = require('node:fs');
  const path = require('node:path');
  const file = path.join(__dirname, '..', 'dist', 'hook.cjs');
  let cachedData;
  try {
    if (fs.statSync(`${file}.cache`).mtimeMs < fs.statSync(file).mtimeMs) return require(file);
    cachedData = fs.readFileSync(`${file}.cache`);
  } catch {
    return require(file);
  }
  // The module class itself: require('node:module') would start the ES module loader.
  const Module = module.constructor;
  const vm = require('node:vm');
  const script = new vm.Script(Module.wrap(fs.readFileSync(file, 'utf8')), { filename: file, cachedData });
  const mod = { exports: {}, filename: file };
  script.runInThisContext()(mod.exports, Module.createRequire(file), mod, file, path.dirname(file));
  return mod.exports;
}

if (argv[0] === 'serve') serveWithHeapFloor();

if (argv.length === 2 && argv[0] === 'hook') {
  // Hooks run once per event: exit as soon as the answer is written, so nothing left in the event
  // loop can hold the agent up. An unknown runtime goes to the CLI, which says what it expects.
  loadHook()
    .runHook(argv[1])
    .then((code) => (code === undefined ? cli() : process.exit(code)));
} else {
  cli();
}
