/**
 * The published package: what `npm publish --dry-run` says and would upload (run on this build),
 * the manifest's shape, the declarations the root entry emits, and which OpenTelemetry packages
 * each entry point really loads (a module loader hook records every URL a child process loads).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVICE_PEERS, servicePeersInstallCommand } from '../../src/cli/commands/serve.js';
import { appEnv, REPO } from '../compat/apps.js';
import { PEERS } from '../support/peers.js';

const manifest = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
  version: string;
  license: string;
  repository?: { type: string; url: string };
  bin: Record<string, string>;
  exports: Record<
    string,
    string | { import: { types: string; default: string }; require: { types: string; default: string } }
  >;
  scripts: Record<string, string>;
  files: string[];
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
  devDependencies: Record<string, string>;
};

interface DryRun {
  status: number | null;
  stderr: string;
  files: Array<{ path: string; mode: number }>;
}

let scratch: string;
let publish: DryRun;

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'continuity-package-'));
  // --ignore-scripts: built already by `npm test`; prepare (the build) would empty dist/ under the
  // test files that read it in parallel.
  const r = spawnSync('npm', ['publish', '--dry-run', '--ignore-scripts', '--json'], {
    cwd: REPO,
    env: appEnv(process.execPath),
    encoding: 'utf8',
    timeout: 120_000,
  });
  const parsed = r.status === 0 ? (JSON.parse(r.stdout) as Record<string, { files: DryRun['files'] }>) : {};
  publish = { status: r.status, stderr: r.stderr, files: parsed['agent-continuity']?.files ?? [] };
}, 120_000);

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Files under `dir` (repository-relative), recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(join(REPO, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(REPO, join(e.parentPath, e.name)));
}

describe('npm publish --dry-run', () => {
  it('succeeds with no warning but the one about not being logged in', () => {
    expect(publish.status, publish.stderr).toBe(0);
    const warnings = publish.stderr.split('\n').filter((l) => /^npm warn/.test(l));
    expect(warnings).toEqual([
      expect.stringMatching(/^npm warn publish This command requires you to be logged in/),
    ]);
  });

  it('uploads the build, the bin, the docs, the configs, the examples, README and LICENSE, and nothing else', () => {
    const paths = publish.files.map((f) => f.path).sort();
    const fromSrc = filesUnder('src')
      .filter((f) => f.endsWith('.ts') && !f.startsWith('src/demo/'))
      .flatMap((f) => [
        f.replace(/^src\//, 'dist/').replace(/\.ts$/, '.js'),
        f.replace(/^src\//, 'dist/').replace(/\.ts$/, '.d.ts'),
        // The CommonJS build (scripts/build-cjs.mjs): every module but the page's browser script.
        ...(f.startsWith('src/ui/client/')
          ? []
          : [
              f.replace(/^src\//, 'dist/cjs/').replace(/\.ts$/, '.js'),
              f.replace(/^src\//, 'dist/cjs/').replace(/\.ts$/, '.d.ts'),
            ]),
      ]);
    const expected = [
      'LICENSE',
      'README.md',
      'package.json',
      'bin/continuity.js',
      'bin/package.json', // "type": "commonjs": the bin is CommonJS, the rest of the package ESM
      'dist/cjs/package.json', // "type": "commonjs": the CommonJS build
      ...fromSrc,
      // The hooks' bundled CommonJS entries (scripts/build-hook.mjs); its metafile stays home.
      ...[
        'hook',
        'hook-claude-code',
        'hook-codex',
        'hook-config-seal',
        'hook-ledger',
        'hook-export',
        'hook-otlp-protobuf',
      ].map((b) => `dist/${b}.cjs`),
      // V8's code cache of the gate's bundle (scripts/hook-code-cache.cjs), used by the same Node.
      'dist/hook.cjs.cache',
      ...filesUnder('docs'),
      ...filesUnder('collector-config'),
      ...filesUnder('examples'),
    ].sort();
    expect(paths).toEqual(expected);
    // No source maps pointing at sources that are not shipped, no demo, no tests.
    expect(paths.filter((p) => p.endsWith('.map') || p.includes('demo') || p.startsWith('test/'))).toEqual(
      [],
    );
    expect(publish.files.find((f) => f.path === 'bin/continuity.js')?.mode).toBe(0o755);
  });

  it('uploads what every export names: the ES module and the CommonJS module, each with its declarations', () => {
    const paths = new Set(publish.files.map((f) => f.path));
    const named = Object.entries(manifest.exports).flatMap(([key, target]) =>
      typeof target === 'string'
        ? [[key, target]]
        : [
            [key, target.import.default],
            [key, target.import.types],
            [key, target.require.default],
            [key, target.require.types],
          ],
    );
    for (const [key, target] of Object.entries(manifest.exports)) {
      if (typeof target === 'string') continue;
      // Types first inside each condition, the CommonJS twin under dist/cjs/.
      expect(Object.keys(target.import), key).toEqual(['types', 'default']);
      expect(Object.keys(target.require), key).toEqual(['types', 'default']);
      expect(target.require.default, key).toBe(target.import.default.replace('./dist/', './dist/cjs/'));
    }
    expect(Object.keys(manifest.exports)).toEqual(
      expect.arrayContaining([
        '.',
        './core',
        './service',
        './claude-code',
        './codex',
        './claude-agent-sdk',
        './langchain',
        './openai-agents',
        './mastra',
        './ai-sdk',
        './semconv',
      ]),
    );
    for (const [key, file] of named)
      expect(paths.has(file!.replace(/^\.\//, '')), `${key}: ${file}`).toBe(true);
  });

  it('ships the Apache-2.0 text the manifest names', () => {
    expect(manifest.license).toBe('Apache-2.0');
    const license = readFileSync(join(REPO, 'LICENSE'), 'utf8');
    expect(license).toContain('Apache License\n                           Version 2.0, January 2004');
    expect(license).toContain('END OF TERMS AND CONDITIONS');
  });
});

describe('package.json', () => {
  it('builds nothing on a registry install (prepare builds a git install), names its repository, homepage, bugs and a bin npm does not have to correct', () => {
    for (const script of ['preinstall', 'install', 'postinstall']) {
      expect(manifest.scripts[script], script).toBeUndefined();
    }
    // npm runs prepare for a git dependency (with its devDependencies) and before npm pack.
    expect(manifest.scripts.prepare).toBe('node scripts/build-if-stale.mjs');
    const m = manifest as unknown as { keywords: string[]; homepage: string; bugs: { url: string } };
    expect(m.keywords).toEqual(expect.arrayContaining(['opentelemetry', 'span-processor']));
    expect(m.homepage).toMatch(/^https:\/\//);
    expect(m.bugs.url).toMatch(/^https:\/\/.+\/issues$/);
    expect(manifest.repository).toEqual({
      type: 'git',
      url: expect.stringMatching(/^git\+https:\/\/.+\.git$/),
    });
    expect(manifest.bin).toEqual({ continuity: 'bin/continuity.js' });
    expect(manifest.files).toContain('!dist/demo');
  });

  it('takes @opentelemetry/api as its one required peer, over the range the compatibility suite proves', () => {
    expect(Object.keys(manifest.dependencies).filter((d) => d.startsWith('@opentelemetry/'))).toEqual([]);
    const required = Object.keys(manifest.peerDependencies).filter(
      (p) => !manifest.peerDependenciesMeta[p]?.optional,
    );
    expect(required).toEqual(['@opentelemetry/api']);
    // A caret range as OpenTelemetry's own packages use: the next api minor is accepted.
    expect(manifest.peerDependencies['@opentelemetry/api']).toBe('^1.9.0');
    // The api versions the suite installs: the 2.x lines' and the 3.x line's.
    const apis = Object.values(PEERS)
      .flatMap((p) => p.packages)
      .filter((s) => s.startsWith('@opentelemetry/api@'))
      .map((s) => s.slice('@opentelemetry/api@'.length));
    expect(new Set(apis)).toEqual(new Set(['1.9.1', '1.10.0']));
  });

  it('lists the service packages as optional peers, with ranges over the 2.x and 3.x lines (grpc-js over 1.x)', () => {
    const optional = Object.keys(manifest.peerDependenciesMeta).filter(
      (p) => manifest.peerDependenciesMeta[p]?.optional,
    );
    expect(optional.sort()).toEqual([...SERVICE_PEERS].sort());
    for (const p of SERVICE_PEERS) {
      const range = manifest.peerDependencies[p]!;
      expect(range, p).not.toMatch(/^\d/); // never an exact pin
      expect(range, p).toMatch(
        p === '@grpc/grpc-js'
          ? /^\^1\.14\.\d+$/
          : p.includes('exporter-')
            ? />=0\.200\.0 <0\.400\.0/
            : /\^2\.0\.0 \|\| \^3\.0\.0/,
      );
      expect(manifest.dependencies[p], `${p} is not also a dependency`).toBeUndefined();
    }
    // The version this repository develops and tests with is inside the peer range.
    expect(manifest.devDependencies['@grpc/grpc-js']).toMatch(/^1\.14\.\d+$/);
    expect(servicePeersInstallCommand('20.20.2')).toBe(
      'npm install @opentelemetry/resources@^2.12.0 @opentelemetry/sdk-metrics@^2.12.0 @opentelemetry/exporter-prometheus@^0.223.0 @opentelemetry/exporter-metrics-otlp-http@^0.223.0 @opentelemetry/exporter-metrics-otlp-proto@^0.223.0 @grpc/grpc-js@^1.14.7',
    );
    expect(servicePeersInstallCommand('22.15.0')).toContain('@opentelemetry/sdk-metrics@^3.1.0');
    expect(servicePeersInstallCommand('22.14.0')).toContain('@opentelemetry/sdk-metrics@^2.12.0');
  });

  it('pins the 2.x line of the compatibility suite to the versions this repository develops with', () => {
    for (const spec of PEERS.otel2Pinned.packages) {
      const at = spec.lastIndexOf('@');
      expect(manifest.devDependencies[spec.slice(0, at)], spec).toBe(spec.slice(at + 1));
    }
  });
});

describe('the declarations of the root entry', () => {
  it('import no OpenTelemetry package but @opentelemetry/api', () => {
    // Every .d.ts reachable from dist/index.d.ts through relative imports.
    const seen = new Set<string>();
    const packages = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g)) {
        const spec = m[1]!;
        if (spec.startsWith('.')) visit(join(dirname(file), spec.replace(/\.js$/, '.d.ts')));
        else packages.add(spec);
      }
    };
    visit(join(REPO, 'dist', 'index.d.ts'));
    expect(seen.size).toBeGreaterThan(10);
    expect([...packages].filter((p) => p.startsWith('@opentelemetry/'))).toEqual(['@opentelemetry/api']);
  });
});

describe('what each entry point loads', () => {
  let register: string;
  beforeAll(() => {
    const hooks = join(scratch, 'trace-hooks.mjs');
    writeFileSync(
      hooks,
      [
        "import { appendFileSync } from 'node:fs';",
        'export async function load(url, context, next) {',
        "  appendFileSync(process.env.LOAD_TRACE_FILE, url + '\\n');",
        '  return next(url, context);',
        '}',
      ].join('\n'),
    );
    register = join(scratch, 'trace-register.mjs');
    writeFileSync(
      register,
      `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`,
    );
  });

  /** The OpenTelemetry, gRPC, zstd and snappy packages a child process loads. */
  function otelLoaded(args: string[]): string[] {
    const trace = join(scratch, `load-${Math.random().toString(36).slice(2)}.txt`);
    writeFileSync(trace, '');
    const r = spawnSync(process.execPath, ['--import', register, ...args], {
      cwd: REPO,
      env: appEnv(process.execPath, { LOAD_TRACE_FILE: trace }),
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.status, r.stderr).toBe(0);
    const names = readFileSync(trace, 'utf8').matchAll(
      /node_modules\/((?:@opentelemetry|@grpc)\/[^/]+|fzstd|hysnappy)\//g,
    );
    return [...new Set([...names].map((m) => m[1]!))].sort();
  }

  it('the root entry (processor, extension, metrics): @opentelemetry/api and nothing else (no gRPC, no zstd, no snappy)', () => {
    expect(existsSync(join(REPO, 'dist', 'index.js'))).toBe(true);
    const script = `await import(${JSON.stringify(pathToFileURL(join(REPO, 'dist', 'index.js')).href)});`;
    expect(otelLoaded(['--input-type=module', '-e', script])).toEqual(['@opentelemetry/api']);
  });

  it('the root entry loads no package but @opentelemetry/api (and canonicalize, for approval signatures), as an ES module and as CommonJS (zod, protobufjs load when used)', () => {
    const trace = join(scratch, 'load-root.txt');
    writeFileSync(trace, '');
    const esm = spawnSync(
      process.execPath,
      ['--import', register, '--input-type=module', '-e', "await import('agent-continuity');"],
      {
        cwd: REPO,
        env: appEnv(process.execPath, { LOAD_TRACE_FILE: trace }),
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
    expect(esm.status, esm.stderr).toBe(0);
    const packagesIn = (paths: string[]) =>
      [
        ...new Set(
          paths.flatMap((p) => [...(/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(p) ?? [])].slice(1)),
        ),
      ].sort();
    // The processor's correlator verifies human approval signatures as it classifies (issue 26):
    // the signed statement is canonical JSON (RFC 8785), so canonicalize (one small file) loads
    // with it. zod and protobufjs still load only when used. (The CommonJS build inlines it.)
    expect(packagesIn(readFileSync(trace, 'utf8').split('\n'))).toEqual([
      '@opentelemetry/api',
      'canonicalize',
    ]);
    const loaded = readFileSync(trace, 'utf8')
      .split('\n')
      .filter((u) => u.includes('/dist/'))
      .map((u) => u.slice(u.indexOf('/dist/') + 1));
    expect(loaded).toContain('dist/otel/processor.js');
    expect(
      loaded.filter((f) => /digest\/(digest|normalize)|ledger|otlp|decision\/model|persist\.js/.test(f)),
    ).toEqual([]);
    const cjs = spawnSync(
      process.execPath,
      ['-e', "require('agent-continuity'); console.log(JSON.stringify(Object.keys(require.cache)))"],
      { cwd: REPO, env: appEnv(process.execPath), encoding: 'utf8', timeout: 60_000 },
    );
    expect(cjs.status, cjs.stderr).toBe(0);
    const required = JSON.parse(cjs.stdout) as string[];
    expect(packagesIn(required)).toEqual(['@opentelemetry/api']);
    expect(required.some((f) => f.endsWith('/dist/cjs/otel/processor.js'))).toBe(true);
    expect(required.filter((f) => /dist\/cjs\/(digest\/(digest|normalize)|ledger\/|otlp\/)/.test(f))).toEqual(
      [],
    );
  });

  it('the root entry does not initialise node:crypto at import, as an ES module or as CommonJS (it loads on the first boundary id, trace id or signature)', () => {
    const crypto = "process.moduleLoadList.includes('NativeModule crypto')";
    const probe = (file: string, source: string) => {
      const path = join(scratch, file);
      writeFileSync(path, source);
      const r = spawnSync(process.execPath, [path], {
        cwd: REPO,
        env: appEnv(process.execPath),
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(r.status, r.stderr).toBe(0);
      return JSON.parse(r.stdout) as boolean[];
    };
    const esm = pathToFileURL(join(REPO, 'dist', 'index.js')).href;
    const cjs = join(REPO, 'dist', 'cjs', 'index.js');
    // Before the import, after it, and after a capture (the control: it does load then).
    const capture =
      "await c.capturePre('s-1', { scope: { value: 1 }, target: { value: 2 }, acceptance_test: { value: 3 } });";
    expect(
      probe(
        'crypto-probe.mjs',
        `const a = ${crypto}; const m = await import(${JSON.stringify(esm)}); const b = ${crypto}; const c = m.createContinuity(); ${capture} console.log(JSON.stringify([a, b, ${crypto}]));`,
      ),
    ).toEqual([false, false, true]);
    expect(
      probe(
        'crypto-probe.cjs',
        `(async () => { const a = ${crypto}; const m = require(${JSON.stringify(cjs)}); const b = ${crypto}; const c = m.createContinuity(); ${capture} console.log(JSON.stringify([a, b, ${crypto}])); })();`,
      ),
    ).toEqual([false, false, true]);
  });

  it('the service entry: the metrics SDK and @grpc/grpc-js (what the root entry never loads)', () => {
    const script = `await import(${JSON.stringify(pathToFileURL(join(REPO, 'dist', 'service', 'index.js')).href)});`;
    const loaded = otelLoaded(['--input-type=module', '-e', script]);
    expect(loaded).toContain('@grpc/grpc-js');
    expect(loaded).toContain('@opentelemetry/sdk-metrics');
    expect(loaded).toContain('fzstd');
    expect(loaded).toContain('hysnappy');
  });

  it('agent-continuity/claude-agent-sdk: no OpenTelemetry package until the adapter makes a span', () => {
    const script = `await import('agent-continuity/claude-agent-sdk');`;
    expect(otelLoaded(['--input-type=module', '-e', script])).toEqual([]);
  });

  it.each(['langchain', 'openai-agents', 'mastra', 'ai-sdk'])(
    'agent-continuity/%s: no OpenTelemetry package until the integration makes a span',
    (name) => {
      const script = `await import('agent-continuity/${name}');`;
      expect(otelLoaded(['--input-type=module', '-e', script])).toEqual([]);
    },
  );

  it.each(['--version', 'classify --help', 'serve --print-config'])(
    'continuity %s: no OpenTelemetry or gRPC package (the service is loaded only when serve runs)',
    (args) => {
      expect(otelLoaded([join(REPO, 'bin', 'continuity.js'), ...args.split(' ')])).toEqual([]);
    },
  );
});
