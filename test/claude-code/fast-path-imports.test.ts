/**
 * What the write gate's fast path loads: every module a real `continuity hook claude-code`
 * process loads is recorded by a module loader hook (`node --import`), so a new import on the
 * gate's path (the exporter, OpenTelemetry, zod, commander, `node:http`) fails here instead of
 * showing up later as a slower tool call in `npm run bench`.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, hook, makeWorld, payload, ROOT, type World, writeTaskRecord } from './harness.js';

let world: World;
let register = '';

beforeAll(() => {
  world = makeWorld('http://127.0.0.1:9');
  writeTaskRecord(world, {
    scope: { value: { paths: ['a'] } },
    target: { value: 'main' },
    acceptance_test: { value: 'npm test' },
  });
  // The loader hook runs on its own thread; it appends each URL it loads to the file named by
  // LOAD_TRACE_FILE, synchronously, so the list is complete when the process exits.
  const hooks = join(world.root, 'trace-hooks.mjs');
  writeFileSync(
    hooks,
    [
      "import { appendFileSync } from 'node:fs';",
      'export async function load(url, context, next) {',
      "  if (process.env.LOAD_TRACE_FILE) appendFileSync(process.env.LOAD_TRACE_FILE, url + '\\n');",
      '  return next(url, context);',
      '}',
    ].join('\n'),
  );
  register = join(world.root, 'trace-register.mjs');
  writeFileSync(
    register,
    `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`,
  );
});

afterAll(() => world.dispose());

/** Runs one hook event with the loader hook and returns the modules it loaded (repo-relative or `node:` names). */
function tracedHook(
  sessionId: string,
  event: string,
  extra: Record<string, unknown>,
  name: string,
): Promise<string[]> {
  const trace = join(world.root, `${name}.trace`);
  writeFileSync(trace, '');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', register, BIN, 'hook', 'claude-code'], {
      cwd: world.project,
      env: { ...world.env, LOAD_TRACE_FILE: trace },
    });
    child.stdout.resume();
    child.stderr.resume();
    child.on('error', reject);
    child.on('close', (status) => {
      if (status !== 0) reject(new Error(`hook exited ${status}`));
      const root = pathToFileURL(ROOT).href;
      resolve(
        readFileSync(trace, 'utf8')
          .split('\n')
          .filter((l) => l.length > 0)
          .map((u) => (u.startsWith(root) ? u.slice(root.length).replace(/^\//, '') : u)),
      );
    });
    child.stdin.end(payload(world, sessionId, event, extra));
  });
}

describe('the write gate fast path', () => {
  it('loads only the lean adapter modules: no exporter, OpenTelemetry, zod, commander or node:http', async () => {
    // A session with a cached "no boundary" state: the gate answers from the cache.
    expect((await hook(world, 'fast-1', 'SessionStart', { source: 'startup' })).status).toBe(0);
    const loaded = await tracedHook(
      'fast-1',
      'PreToolUse',
      { tool_name: 'Write', tool_input: { file_path: 'a.ts', content: 'x' }, tool_use_id: 't1' },
      'gate',
    );
    expect(loaded).toContain('dist/adapters/core/gate.js');
    const repoModules = loaded.filter((m) => !m.startsWith('node:') && !m.startsWith('file:'));
    expect(repoModules.filter((m) => m.startsWith('dist/export/'))).toEqual([]);
    expect(repoModules.filter((m) => m.includes('node_modules/'))).toEqual([]);
    expect(loaded).not.toContain('dist/adapters/core/export.js');
    expect(loaded).not.toContain('node:http');
    expect(loaded).not.toContain('node:https');
    // The whole list, so any addition is a deliberate change of this test.
    expect(repoModules.sort()).toEqual(
      [
        'bin/continuity.js',
        'dist/adapters/claude-code/config.js',
        'dist/adapters/claude-code/hook.js',
        'dist/adapters/core/config.js',
        'dist/adapters/core/gate.js',
        'dist/adapters/core/process.js',
        'dist/adapters/core/state.js',
        'dist/classify/states.js',
      ].sort(),
    );
  });

  it('while a recording hook (PreCompact) does load the exporter: the trace sees what is loaded', async () => {
    const loaded = await tracedHook('fast-2', 'PreCompact', { trigger: 'auto' }, 'precompact');
    expect(loaded).toContain('dist/export/exporter.js');
    expect(loaded).toContain('dist/adapters/core/export.js');
  });
});
