#!/usr/bin/env node
// Bundles the hook entry (src/adapters/hook.ts) into CommonJS files with esbuild, after `tsc`
// (`npm run build` runs both). A hook is a fresh process per event, so what it loads is its
// latency: one small CommonJS file for the write gate's fast path, `dist/hook.cjs`, and, required
// only by the recording hooks, one bundle per runtime with the ledger, digests and exporter.
//
// LAZY maps a module the hook entry imports dynamically to the bundle that holds it: inside
// `dist/hook.cjs` the import becomes `require('./<bundle>')`, and the module is the entry of that
// bundle. A runtime adapter whose hook entry has recording handlers adds its line here.
//
// `dist/hook.meta.json` is esbuild's metafile: test/claude-code/fast-path-imports.test.ts reads
// which source files each bundle holds.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const LAZY = {
  // Claude Code's recording hooks and the gate's slow path: digests, the ledger's lean reader, locks.
  'src/adapters/claude-code/handlers.ts': 'hook-claude-code.cjs',
  // Codex CLI's, the same.
  'src/adapters/codex/handlers.ts': 'hook-codex.cjs',
  // Shared by every runtime: the ledger writer (zod schemas, leak guard, chain), loaded by an append;
  'src/ledger/ledger.ts': 'hook-ledger.cjs',
  // the span exporter and its spool, loaded by a hook that exports;
  'src/adapters/core/export.ts': 'hook-export.cjs',
  // the configuration's seal (node:crypto), loaded only when a configuration relaxes the gate;
  'src/adapters/core/config-seal.ts': 'hook-config-seal.cjs',
  // protobuf encoding, loaded only when http/protobuf is configured.
  'src/otlp/codec.ts': 'hook-otlp-protobuf.cjs',
};

/** @type {import('esbuild').BuildOptions} */
const common = {
  absWorkingDir: root,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  // import() of a bundled or lazy module becomes require(): an import() would start the ES module loader.
  supported: { 'dynamic-import': false },
  metafile: true,
  logLevel: 'warning',
  legalComments: 'none',
  minifyWhitespace: true,
  minifySyntax: true,
  minifyIdentifiers: true,
};

/**
 * src/authority/builtins.ts loads node:crypto and node:fs on first use through node:module, whose
 * require() starts the ES module loader; in a CommonJS bundle a plain require() on first use is
 * just as lazy and starts nothing (test/claude-code/fast-path-imports.test.ts).
 */
const plainBuiltins = {
  name: 'plain-builtins',
  /** @param {import('esbuild').PluginBuild} b */
  setup(b) {
    b.onLoad({ filter: /[\\/]src[\\/]authority[\\/]builtins\.ts$/ }, () => ({
      contents:
        "export const nodeCrypto = () => require('node:crypto');\nexport const nodeFs = () => require('node:fs');\n",
      loader: 'js',
    }));
  },
};

/** Marks the lazy modules external, rewritten to their bundle, in every bundle but their own. */
function lazyChunks(self) {
  return {
    name: 'lazy-chunks',
    /** @param {import('esbuild').PluginBuild} b */
    setup(b) {
      b.onResolve({ filter: /\.js$/ }, (args) => {
        if (args.kind !== 'dynamic-import' && args.kind !== 'import-statement') return undefined;
        const source = relative(root, join(args.resolveDir, args.path.replace(/\.js$/, '.ts')));
        const chunk = LAZY[source];
        if (!chunk || source === self) return undefined;
        if (args.kind !== 'dynamic-import') {
          throw new Error(`${args.importer}: ${source} is a lazy bundle; import it with import()`);
        }
        return { path: `./${chunk}`, external: true };
      });
    },
  };
}

const bundles = [
  { entry: 'src/adapters/hook.ts', out: 'hook.cjs' },
  ...Object.entries(LAZY).map(([entry, out]) => ({ entry, out })),
];
const meta = {};
for (const { entry, out } of bundles) {
  const r = await build({
    ...common,
    entryPoints: [entry],
    outfile: join('dist', out),
    plugins: [plainBuiltins, lazyChunks(entry)],
  });
  const output = r.metafile.outputs[`dist/${out}`];
  meta[out] = { bytes: output?.bytes ?? 0, inputs: Object.keys(output?.inputs ?? {}).sort() };
}
writeFileSync(join(root, 'dist', 'hook.meta.json'), `${JSON.stringify(meta, null, 2)}\n`);

/**
 * dist/hook.cjs.cache (scripts/hook-code-cache.cjs): V8's code cache of the gate's bundle, warmed
 * by one fast-path call in a scratch project. A build that cannot make it still succeeds: the bin
 * then compiles the bundle as usual.
 */
function codeCache() {
  const scratch = mkdtempSync(join(tmpdir(), 'hook-code-cache-'));
  try {
    const project = join(scratch, 'project');
    mkdirSync(join(project, '.continuity'), { recursive: true });
    writeFileSync(join(project, '.continuity', 'task.json'), '{"decisions":{"scope":{"value":"x"}}}');
    const env = {
      PATH: process.env.PATH,
      HOME: join(scratch, 'home'),
      CLAUDE_PROJECT_DIR: project,
      CONTINUITY_STATE_DIR: join(scratch, 'state'),
      CONTINUITY_LEDGER: join(scratch, 'state', 'ledger.jsonl'),
      CONTINUITY_EXPORT: 'off',
    };
    const payload = (event, extra) =>
      JSON.stringify({
        session_id: 'code-cache',
        transcript_path: join(scratch, 'none.jsonl'),
        cwd: project,
        hook_event_name: event,
        ...extra,
      });
    rmSync(join(root, 'dist', 'hook.cjs.cache'), { force: true });
    const start = spawnSync(process.execPath, [join(root, 'bin', 'continuity.js'), 'hook', 'claude-code'], {
      input: payload('SessionStart', { source: 'startup' }),
      env,
      cwd: project,
    });
    const warm = spawnSync(
      process.execPath,
      [join(root, 'scripts', 'hook-code-cache.cjs'), join(root, 'dist', 'hook.cjs')],
      {
        input: payload('PreToolUse', {
          tool_name: 'Write',
          tool_input: { file_path: 'a.ts', content: 'x' },
          tool_use_id: 't',
        }),
        env,
        cwd: project,
      },
    );
    if (start.status !== 0 || warm.status !== 0)
      console.warn(
        `build-hook: no code cache for dist/hook.cjs (${String(warm.stderr || start.stderr).trim()})`,
      );
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
codeCache();
