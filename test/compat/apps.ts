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

/** `npm pack` of the built repository into `dir`; returns the tarball's path. */
export async function packRepository(dir: string): Promise<string> {
  const r = await run('npm', ['pack', '--json', '--pack-destination', dir], {
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

/** The fenced code block that follows `<!-- compat: NAME -->` in README.md. */
export function readmeBlock(name: string): string {
  const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
  const marker = `<!-- compat: ${name} -->`;
  const at = readme.indexOf(marker);
  if (at < 0) throw new Error(`README.md has no ${marker}`);
  const m = /^```js\n([\s\S]*?)\n```$/m.exec(readme.slice(at + marker.length));
  if (!m || readme.slice(at + marker.length, at + marker.length + m.index).trim() !== '') {
    throw new Error(`README.md: ${marker} is not followed by a js code block`);
  }
  return m[1]!;
}

/** How a scenario changes the README's set-up block: as written, or with its `metricReaders` line changed. */
export type MetricReadersVariant = 'as-written' | 'removed' | 'empty';

/** The README's set-up block with its `metricReaders` line (and the comment above it) as `variant` says. */
export function setupBlock(name: string, variant: MetricReadersVariant): string {
  const block = readmeBlock(name);
  if (variant === 'as-written') return block;
  const lines = block.split('\n');
  const at = lines.findIndex((l) => l.trimStart().startsWith('metricReaders:'));
  if (at < 0) throw new Error(`README.md ${name}: no metricReaders line`);
  const comment = lines[at - 1]?.trimStart().startsWith('//') ? 1 : 0;
  lines.splice(at - comment, 1 + comment, ...(variant === 'empty' ? ['  metricReaders: [],'] : []));
  return lines.join('\n');
}

/**
 * The app: a prelude that defines what the README's extension block refers to and records
 * `diag`, the README's set-up block, its extension block (with `COMPAT_COMPACT=0`, an ordinary span
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
const sessionId = ${JSON.stringify(COMPAT_SESSION)};
const scope = { repository: 'acme/payments', paths: ['services/ledger'] };
const branch = 'release/2.4';
const testCommand = 'npm test -- ledger';
const decisionsAsTheAgentNowStatesThem = {
  scope: { value: scope },
  target: { value: branch },
  acceptance_test: { value: testCommand },
};

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
  await continuity.capturePre(${JSON.stringify(COMPAT_PENDING_SESSION)}, decisionsAsTheAgentNowStatesThem, { trigger: 'auto' });
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

/** The session the README's extension block runs for (pre and post). */
export const COMPAT_SESSION = 'compat-session-1';
/** The session that only gets a pre (its boundary is drained at shutdown). */
export const COMPAT_PENDING_SESSION = 'compat-session-2';

/** What the app prints. */
export interface AppOutput {
  state: string | null;
  shutdownMs: number;
  diag: { warn: string[]; error: string[] };
}

/** Writes the app file and runs it with the app's Node; returns its parsed output. */
export async function runApp(
  app: App,
  file: string,
  source: string,
  env: Record<string, string>,
): Promise<{ output: AppOutput; run: Run }> {
  writeFileSync(join(app.dir, file), source);
  const r = await run(app.node, [file], { cwd: app.dir, env: app.env(env), timeoutMs: 120_000 });
  const line = r.stdout.trim().split('\n').at(-1) ?? '';
  if (r.status !== 0 || !line.startsWith('{')) {
    throw new Error(`${file} exited ${r.status ?? r.signal}:\n${r.stdout}\n${r.stderr}`);
  }
  return { output: JSON.parse(line) as AppOutput, run: r };
}
