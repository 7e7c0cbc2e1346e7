/**
 * What each hook process loads. Every file a real `continuity hook claude-code` process requires
 * is recorded by a preload script (`node --require`) that wraps the CommonJS loader, and whether
 * the ES module loader was started at all is read from `process.moduleLoadList` at exit. The
 * bundles' contents come from esbuild's metafile (`dist/hook.meta.json`, written by
 * `npm run build`). A new import on the gate's path (the exporter, OpenTelemetry, zod,
 * commander, `node:http`) fails here instead of showing up later as a slower tool call in
 * `npm run bench`.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, hook, makeWorld, payload, ROOT, type World, writeTaskRecord } from './harness.js';

let world: World;
let tracer = '';

/** What a traced hook process loaded. */
interface Trace {
  /** Files required, repo-relative (or absolute outside the repository). */
  files: string[];
  /** Built-in modules required, as `node:<name>`. */
  builtins: string[];
  /** True when the ES module loader was started. */
  esmLoader: boolean;
  /** True when dist/hook.cjs was compiled from the code cache the build made (V8 accepted it). */
  codeCache: boolean;
}

beforeAll(() => {
  world = makeWorld('http://127.0.0.1:9');
  writeTaskRecord(world, {
    scope: { value: { paths: ['a'] } },
    target: { value: 'main' },
    acceptance_test: { value: 'npm test' },
  });
  tracer = join(world.root, 'trace.cjs');
  writeFileSync(
    tracer,
    [
      "'use strict';",
      // Not require('node:module'): loading it starts the ES module loader, which is what is measured.
      'const Module = module.constructor;',
      'const builtin = new Set(Module.builtinModules);',
      "const { writeFileSync } = require('node:fs');",
      'const files = new Set();',
      'const builtins = new Set();',
      // The bin compiles dist/hook.cjs itself from its code cache (vm.Script), not through require.
      "const vm = require('node:vm');",
      'const Script = vm.Script;',
      'let codeCache = false;',
      'vm.Script = function (source, options) {',
      '  const s = new Script(source, options);',
      '  if (options && options.filename) files.add(options.filename);',
      '  if (options && options.cachedData && !s.cachedDataRejected) codeCache = true;',
      '  return s;',
      '};',
      'const load = Module._load;',
      'Module._load = function (request, parent, isMain) {',
      "  const bare = request.replace(/^node:/, '');",
      "  if (builtin.has(bare)) builtins.add('node:' + bare);",
      '  else {',
      '    try { files.add(Module._resolveFilename(request, parent, isMain)); } catch {}',
      '  }',
      '  return load.apply(this, arguments);',
      '};',
      "process.on('exit', () => {",
      '  writeFileSync(process.env.LOAD_TRACE_FILE, JSON.stringify({',
      '    files: [...files], builtins: [...builtins], codeCache,',
      "    esmLoader: process.moduleLoadList.includes('NativeModule internal/modules/esm/loader'),",
      '  }));',
      '});',
    ].join('\n'),
  );
});

afterAll(() => world.dispose());

/** Runs one hook event with the tracer and returns what it loaded. */
function tracedHook(
  sessionId: string,
  event: string,
  extra: Record<string, unknown>,
  name: string,
): Promise<Trace> {
  const file = join(world.root, `${name}.trace.json`);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--require', tracer, BIN, 'hook', 'claude-code'], {
      cwd: world.project,
      env: { ...world.env, LOAD_TRACE_FILE: file },
    });
    child.stdout.resume();
    child.stderr.resume();
    child.on('error', reject);
    child.on('close', (status) => {
      if (status !== 0) return reject(new Error(`hook exited ${status}`));
      const t = JSON.parse(readFileSync(file, 'utf8')) as Trace;
      const root = ROOT.endsWith('/') ? ROOT : `${ROOT}/`;
      resolve({
        ...t,
        files: t.files.map((f) => (f.startsWith(root) ? f.slice(root.length) : f)).sort(),
        builtins: t.builtins.sort(),
      });
    });
    child.stdin.end(payload(world, sessionId, event, extra));
  });
}

/** The source files esbuild put into one bundle. */
function bundleInputs(bundle: string): string[] {
  const meta = JSON.parse(readFileSync(join(ROOT, 'dist', 'hook.meta.json'), 'utf8')) as Record<
    string,
    { inputs: string[] }
  >;
  const inputs = meta[bundle]?.inputs;
  if (!inputs) throw new Error(`dist/hook.meta.json has no ${bundle}; run npm run build`);
  return inputs;
}

const WRITE = { tool_name: 'Write', tool_input: { file_path: 'a.ts', content: 'x' }, tool_use_id: 't1' };

describe('the write gate fast path', () => {
  it('loads two CommonJS files (the bin and dist/hook.cjs), three built-ins, and never starts the ES module loader', async () => {
    // A session with a cached "no boundary" state: the gate answers from the cache.
    expect((await hook(world, 'fast-1', 'SessionStart', { source: 'startup' })).status).toBe(0);
    const t = await tracedHook('fast-1', 'PreToolUse', WRITE, 'gate');
    expect(t.files).toEqual(['bin/continuity.js', 'dist/hook.cjs']);
    // node:vm compiles the bundle from V8's code cache, which this Node accepts (same build).
    expect(t.builtins).toEqual(['node:fs', 'node:os', 'node:path', 'node:vm']);
    expect(t.codeCache).toBe(true);
    expect(t.esmLoader).toBe(false);
  });

  it('is one bundle of the lean adapter modules: no exporter, ledger writer, OpenTelemetry, zod or commander', () => {
    expect(bundleInputs('hook.cjs')).toEqual(
      [
        'src/adapters/claude-code/config.ts',
        // Payload → core event: the translation tables (pure).
        'src/adapters/claude-code/events.ts',
        'src/adapters/claude-code/hook.ts',
        'src/adapters/claude-code/payload.ts',
        // Codex CLI's hook entry, in the same bundle (its recording handlers are a bundle of their own).
        'src/adapters/codex/config.ts',
        'src/adapters/codex/events.ts',
        'src/adapters/codex/hook.ts',
        'src/adapters/codex/patch.ts',
        'src/adapters/codex/payload.ts',
        'src/adapters/core/config.ts',
        // Which settings of a configuration file relax the gate: pure comparison, no crypto (the
        // seal is verified by its own bundle, dist/hook-config-seal.cjs, only when one must be).
        'src/adapters/core/config-relax.ts',
        'src/adapters/core/gate.ts',
        'src/adapters/core/mcp-names.ts',
        'src/adapters/core/messages.ts',
        // The one hook pipeline every command hook runs (payload → core event → gate | record → answer).
        'src/adapters/core/pipeline.ts',
        'src/adapters/core/process.ts',
        // PostToolUse: did the tool read the task record (the next restatement's provenance)?
        'src/adapters/core/provenance.ts',
        // The gate's reading of a shell command (pure, no I/O).
        'src/adapters/core/shell.ts',
        'src/adapters/core/state.ts',
        // A runtime's own record file, read from its tail (node built-ins only).
        'src/adapters/core/tail.ts',
        'src/adapters/hook.ts',
        // Copilot CLI's hook entry: its dialect table and its event-log reader (node built-ins only).
        'src/adapters/copilot/config.ts',
        'src/adapters/copilot/hook.ts',
        // Copilot running the Claude Code hooks: recognised from its hook environment and payload.
        'src/adapters/copilot/inside.ts',
        'src/adapters/copilot/log.ts',
        // Gemini CLI's hook entry: its dialect table and its conversation-file reader (node built-ins only).
        'src/adapters/gemini/config.ts',
        'src/adapters/gemini/hook.ts',
        'src/adapters/gemini/transcript.ts',
        // Qwen Code's hook entry: its dialect table over Claude Code's hook path.
        'src/adapters/qwen-code/config.ts',
        'src/adapters/qwen-code/hook.ts',
        // The key-id shapes and CONTINUITY_APPROVER_KEYS's parsing (no dependency, no crypto).
        'src/authority/patterns.ts',
        'src/classify/states.ts',
        // The id rules and the secret shapes: a session id shaped like a secret is refused before
        // any state is read or written for it (no dependency).
        'src/decision/rules.ts',
        // Whole-file writes of the state (node built-ins only), shared with the exporter's spool.
        'src/ledger/atomic-file.ts',
        // The index's file names and `covered` format (pure): whether the session has new evidence.
        'src/ledger/index-names.ts',
        // The default state directory (node built-ins only).
        'src/ledger/state-home.ts',
      ].sort(),
    );
  });
});

describe('the recording hooks', () => {
  it('PreCompact loads the Claude Code bundle only: no zod, no ledger writer, no exporter, no ES modules', async () => {
    const t = await tracedHook('fast-2', 'PreCompact', { trigger: 'auto' }, 'precompact');
    expect(t.files).toEqual(['bin/continuity.js', 'dist/hook-claude-code.cjs', 'dist/hook.cjs']);
    expect(t.builtins).not.toContain('node:http');
    expect(t.esmLoader).toBe(false);
    const inputs = bundleInputs('hook-claude-code.cjs');
    expect(inputs.filter((i) => i.startsWith('node_modules/'))).toEqual([
      'node_modules/canonicalize/lib/canonicalize.js',
    ]);
    expect(inputs).toContain('src/adapters/core/task-record.ts');
    expect(inputs).not.toContain('src/ledger/ledger.ts');
    expect(inputs).not.toContain('src/decision/model.ts');
    expect(inputs.filter((i) => i.startsWith('src/export/'))).toEqual(['src/export/spans.ts']);
  });

  it('the confirmation (SessionStart(compact)) loads the ledger writer and the exporter: the trace sees what is loaded', async () => {
    const t = await tracedHook('fast-2', 'SessionStart', { source: 'compact' }, 'confirm');
    expect(t.files).toEqual(
      [
        'bin/continuity.js',
        'dist/hook-claude-code.cjs',
        'dist/hook-export.cjs',
        'dist/hook-ledger.cjs',
        'dist/hook.cjs',
      ].sort(),
    );
    expect(t.builtins).toContain('node:http');
    expect(bundleInputs('hook-ledger.cjs').some((i) => i.startsWith('node_modules/zod/'))).toBe(true);
  });
});
