/**
 * Test support for the compatibility suite: fresh apps in temporary folders, each on one
 * OpenTelemetry JS line (pinned in test/support/peers.ts), that install the packed package as a
 * user would and run the README's own lines (the fenced blocks marked `<!-- compat: NAME -->`).
 *
 * Installs go through npm's own cache (`--prefer-offline`): slow the first time on a machine,
 * a few seconds after. Node 22 runs with the system npm, its bin folder first on PATH.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NpmPeer } from '../support/peers.js';

export const REPO = fileURLToPath(new URL('../../', import.meta.url));

/** The result of a finished child process. */
export interface Run {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * The environment of an app's processes: this test run's environment without what would change
 * them (`npm test` sets `npm_*`; a developer's shell may set `OTEL_*` or `NODE_OPTIONS`), with the
 * chosen Node first on PATH.
 */
export function appEnv(nodeBin: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^(npm_|OTEL_|NODE_OPTIONS$|VITEST|NODE_ENV$)/i.test(k)) continue;
    env[k] = v;
  }
  env.PATH = `${dirname(nodeBin)}:${process.env.PATH ?? ''}`;
  return { ...env, ...extra };
}

/** Runs a command to completion (no shell); never throws for a non-zero exit. */
export function run(
  command: string,
  args: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 10 * 60_000);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, stdout, stderr });
    });
  });
}

/**
 * `npm pack` of the built repository into `dir`; returns the tarball's path. `--ignore-scripts`:
 * `npm test` has built already, and `prepare` (the build, which empties dist/ first) must not run
 * under the test files that read dist/ in parallel.
 */
export async function packRepository(dir: string): Promise<string> {
  const r = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], {
    cwd: REPO,
    env: appEnv(process.execPath),
  });
  if (r.status !== 0) throw new Error(`npm pack failed: ${r.stderr.trim().split('\n').at(-1)}`);
  const [packed] = JSON.parse(r.stdout) as Array<{ filename: string }>;
  return join(dir, packed!.filename);
}

/** One installed OpenTelemetry package: where npm put it, and its version. */
export interface InstalledPackage {
  /** Path relative to the app, e.g. `node_modules/@opentelemetry/core`. */
  path: string;
  name: string;
  version: string;
}

/** An app folder with its Node. */
export interface App {
  dir: string;
  node: string;
  env(extra?: Record<string, string>): NodeJS.ProcessEnv;
}

/** `npm` in the app with its Node first on PATH. */
export function npm(app: App, args: readonly string[]): Promise<Run> {
  return run('npm', ['--no-audit', '--no-fund', '--no-update-notifier', ...args], {
    cwd: app.dir,
    env: app.env(),
  });
}

/**
 * Every OpenTelemetry package in the app (`npm ls --all --parseable --long`), by path: installed,
 * or with `lockOnly` as its package-lock.json places them (the same listing, without the files).
 */
export async function otelPackages(
  app: App,
  { lockOnly = false }: { lockOnly?: boolean } = {},
): Promise<{ packages: InstalledPackage[]; lsStatus: number | null }> {
  const r = await npm(app, [
    'ls',
    '--all',
    '--parseable',
    '--long',
    ...(lockOnly ? ['--package-lock-only'] : []),
  ]);
  const packages = r.stdout
    .split('\n')
    .map((line) => /^(.*?):(@opentelemetry\/[^@:]+)@([^:]+)/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ path: m[1]!.slice(app.dir.length + 1), name: m[2]!, version: m[3]! }));
  const unique = new Map(packages.map((p) => [p.path, p]));
  return {
    packages: [...unique.values()].sort((a, b) => a.path.localeCompare(b.path)),
    lsStatus: r.status,
  };
}

/** The package names that are installed more than once, with their versions. */
export function duplicates(packages: readonly InstalledPackage[]): Record<string, string[]> {
  const byName = new Map<string, string[]>();
  for (const p of packages) byName.set(p.name, [...(byName.get(p.name) ?? []), p.version]);
  return Object.fromEntries([...byName].filter(([, v]) => v.length > 1).map(([k, v]) => [k, v.sort()]));
}

/**
 * Creates the app folder with the line's exact dependencies and resolves them into its
 * package-lock.json (the app before continuity; {@link installTarball} then installs everything
 * in one go, keeping the app's resolutions as an app with a lock file does).
 */
export async function createApp(dir: string, line: NpmPeer, node: string): Promise<App> {
  mkdirSync(dir, { recursive: true });
  const dependencies = Object.fromEntries(
    line.packages.map((spec) => {
      const at = spec.lastIndexOf('@');
      return [spec.slice(0, at), spec.slice(at + 1)];
    }),
  );
  writeFileSync(
    join(dir, 'package.json'),
    `${JSON.stringify({ name: `compat-${line.id}`, private: true, type: 'module', dependencies }, null, 2)}\n`,
  );
  const app: App = { dir, node, env: (extra = {}) => appEnv(node, extra) };
  const r = await npm(app, ['install', '--package-lock-only', '--prefer-offline', '--loglevel=error']);
  if (r.status !== 0) {
    throw new Error(
      `could not install the app's ${line.packages.join(' ')} (${r.stderr.trim().split('\n').at(-1)}); try: cd ${dir} && npm install`,
    );
  }
  return app;
}

/** `npm install <tarball>` in the app, as the README says; returns npm's output. */
export async function installTarball(app: App, tarball: string): Promise<Run> {
  const r = await npm(app, ['install', '--prefer-offline', tarball]);
  if (r.status !== 0) throw new Error(`npm install ${tarball} failed: ${r.stderr.trim()}`);
  return r;
}

/** Where a tested block lives: the README, or the docs page the README's by-hand set-up moved to. */
export type BlockFile = 'README.md' | 'docs/processor.md';

/** The fenced code block that follows `<!-- compat: NAME -->` in README.md (or `file`). */
export function readmeBlock(name: string, file: BlockFile = 'README.md'): string {
  const readme = readFileSync(join(REPO, file), 'utf8');
  const marker = `<!-- compat: ${name} -->`;
  const at = readme.indexOf(marker);
  if (at < 0) throw new Error(`${file} has no ${marker}`);
  const m = /^```js\n([\s\S]*?)\n```$/m.exec(readme.slice(at + marker.length));
  if (!m || readme.slice(at + marker.length, at + marker.length + m.index).trim() !== '') {
    throw new Error(`${file}: ${marker} is not followed by a js code block`);
  }
  return m[1]!;
}

/** Every `<!-- compat: NAME -->` marker of a file, in order. */
export function blockNames(file: BlockFile = 'README.md'): string[] {
  const text = readFileSync(join(REPO, file), 'utf8');
  return [...text.matchAll(/<!-- compat: ([a-z0-9.-]+) -->/g)].map((m) => m[1]!);
}

/** How a scenario changes the README's set-up block: as written, or with its `metricReaders` line changed. */
export type MetricReadersVariant = 'as-written' | 'removed' | 'empty';

/** The README's set-up block with its `metricReaders` line (and the comment above it) as `variant` says. */
export function setupBlock(
  name: string,
  variant: MetricReadersVariant,
  file: BlockFile = 'README.md',
): string {
  const block = readmeBlock(name, file);
  if (variant === 'as-written') return block;
  const lines = block.split('\n');
  const at = lines.findIndex((l) => l.trimStart().startsWith('metricReaders:'));
  if (at < 0) throw new Error(`${file} ${name}: no metricReaders line`);
  const comment = lines[at - 1]?.trimStart().startsWith('//') ? 1 : 0;
  lines.splice(at - comment, 1 + comment, ...(variant === 'empty' ? ['  metricReaders: [],'] : []));
  return lines.join('\n');
}

/**
 * The app: a prelude that records `diag`, the README's set-up block, its extension block as written
 * (complete: it defines its session and decisions; with `COMPAT_COMPACT=0`, an ordinary span
 * instead), a second boundary whose post never comes, then `sdk.shutdown()`. Prints one JSON line.
 */
export function appSource(setup: string): string {
  return `// Assembled by test/compat/apps.ts from README.md: the prelude, the README's lines, the epilogue.
import { DiagLogLevel, diag, trace } from '@opentelemetry/api';

const diagnostics = { warn: [], error: [] };
const ignore = () => {};
diag.setLogger(
  {
    error: (...args) => diagnostics.error.push(args.map(String).join(' ')),
    warn: (...args) => diagnostics.warn.push(args.map(String).join(' ')),
    info: ignore,
    debug: ignore,
    verbose: ignore,
  },
  DiagLogLevel.WARN,
);

// ---- README.md: set-up ----
${setup}
// ---- end of README.md ----

const out = { state: null };
if (process.env.COMPAT_COMPACT !== '0') {
  // ---- README.md: the extension ----
${readmeBlock('extension')}
  // ---- end of README.md ----
  out.state = state;
  // A second session whose post never comes: resolved at shutdown, on a continuity.check span.
  await continuity.capturePre(${JSON.stringify(COMPAT_PENDING_SESSION)}, restated, { trigger: 'auto' });
} else {
  trace.getTracer('compat-app').startSpan('agent.turn').end();
}
const started = performance.now();
await sdk.shutdown();
out.shutdownMs = Math.round(performance.now() - started);
out.diag = diagnostics;
process.stdout.write(JSON.stringify(out) + '\\n');
`;
}

/** The session the README's extension block runs for (pre and post): the id the block itself sets. */
export const COMPAT_SESSION = 'session-0001';
/** The session that only gets a pre (its boundary is drained at shutdown). */
export const COMPAT_PENDING_SESSION = 'compat-session-2';

/** What the app prints. */
export interface AppOutput {
  state: string | null;
  shutdownMs: number;
  diag: { warn: string[]; error: string[] };
}

/** Writes the app file and runs it with the app's Node (after `nodeArgs`); returns its parsed output. */
export async function runApp(
  app: App,
  file: string,
  source: string,
  env: Record<string, string>,
  nodeArgs: readonly string[] = [],
): Promise<{ output: AppOutput; run: Run }> {
  writeFileSync(join(app.dir, file), source);
  const r = await run(app.node, [...nodeArgs, file], { cwd: app.dir, env: app.env(env), timeoutMs: 120_000 });
  const line = r.stdout.trim().split('\n').at(-1) ?? '';
  if (r.status !== 0 || !line.startsWith('{')) {
    throw new Error(`${file} exited ${r.status ?? r.signal}:\n${r.stdout}\n${r.stderr}`);
  }
  return { output: JSON.parse(line) as AppOutput, run: r };
}

/** The `diag` recorder every app starts with (prints nothing; the app prints what it recorded). */
const DIAG_PRELUDE = `const diagnostics = { warn: [], error: [] };
const ignore = () => {};
diag.setLogger(
  {
    error: (...args) => diagnostics.error.push(args.map(String).join(' ')),
    warn: (...args) => diagnostics.warn.push(args.map(String).join(' ')),
    info: ignore,
    debug: ignore,
    verbose: ignore,
  },
  DiagLogLevel.WARN,
);`;

/** How an app that used NodeSDK's `traceExporter` registers continuity. */
export type TraceExporterVariant = 'before' | 'processor-alone';

/**
 * An app that passes NodeSDK `traceExporter` and ends one ordinary span: `before` is the app before
 * continuity; `processor-alone` adds `spanProcessors: [new ContinuityProcessor()]` and keeps
 * `traceExporter` (NodeSDK then ignores it). Metrics off by `OTEL_METRICS_EXPORTER=none`.
 */
export function traceExporterSource(variant: TraceExporterVariant): string {
  return `// Assembled by test/compat/apps.ts: an app that exports with NodeSDK's traceExporter.
import { DiagLogLevel, diag, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { ContinuityProcessor } from 'agent-continuity';

${DIAG_PRELUDE}
const sdk = new NodeSDK({
  serviceName: 'my-agent',
  traceExporter: new OTLPTraceExporter(),
${variant === 'processor-alone' ? '  spanProcessors: [new ContinuityProcessor()],\n' : ''}});
sdk.start();
trace.getTracer('compat-app').startSpan('agent.turn').end();
const started = performance.now();
await sdk.shutdown();
process.stdout.write(JSON.stringify({ state: null, shutdownMs: Math.round(performance.now() - started), diag: diagnostics, processors: typeof ContinuityProcessor }) + '\\n');
`;
}

/** The session of the CommonJS app. */
export const CJS_SESSION = 'session-cjs-0001';

/**
 * An app for `node --require ./tracing.cjs app.cjs` (tracing.cjs is the README's block): loads the
 * package (`require`, or with `esm` an ES module app that `import`s it, so the processor and the
 * extension come from the two builds), captures and observes one boundary, prints one JSON line;
 * the README's `beforeExit` hook shuts the SDK down and exports.
 */
export function cjsAppSource(sessionId: string = CJS_SESSION, esm = false): string {
  const loads = esm
    ? "import { DiagLogLevel, diag } from '@opentelemetry/api';\nimport { createContinuity } from 'agent-continuity';"
    : "'use strict';\nconst { DiagLogLevel, diag } = require('@opentelemetry/api');\nconst { createContinuity } = require('agent-continuity');";
  return `// Assembled by test/compat/apps.ts: an app run under the README's CommonJS tracing.js.
${loads}

${DIAG_PRELUDE}
(async () => {
  const continuity = createContinuity({ runtime: 'my-agent' });
  const decisions = {
    scope: { value: { repository: 'acme/payments' } },
    target: { value: 'release/2.4' },
    acceptance_test: { value: 'npm test -- ledger' },
  };
  await continuity.capturePre(${JSON.stringify(sessionId)}, decisions, { trigger: 'auto' });
  const { state } = await continuity.observePost(${JSON.stringify(sessionId)}, decisions);
  process.stdout.write(JSON.stringify({ state, shutdownMs: 0, diag: diagnostics }) + '\\n');
})();
`;
}
