/**
 * Test support: real child processes for the Prometheus integration test, `continuity serve` and
 * Prometheus, on 127.0.0.1 with free ports, each with its own folder, stopped by PID.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { requireTool } from './tools.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(REPO, 'bin', 'continuity.js');
const SERVE_BUILD = join(REPO, 'dist', 'cli', 'commands', 'serve.js');

/** A child process with its collected output (for failure messages). */
export interface Child {
  proc: ChildProcess;
  output: () => string;
}

function track(proc: ChildProcess): Child {
  let out = '';
  const keep = (d: Buffer) => {
    out += d.toString('utf8');
    if (out.length > 200_000) out = out.slice(-100_000);
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  return { proc, output: () => out };
}

/** Stops a child by its PID: SIGTERM, then SIGKILL if it has not exited after `graceMs`. */
export async function stopChild(child: Child | undefined, graceMs = 5_000): Promise<void> {
  if (!child || child.proc.exitCode !== null || child.proc.signalCode !== null) return;
  const pid = child.proc.pid!;
  const exited = new Promise<void>((resolve) => child.proc.once('exit', () => resolve()));
  process.kill(pid, 'SIGTERM');
  const timer = setTimeout(() => {
    if (child.proc.exitCode === null && child.proc.signalCode === null) process.kill(pid, 'SIGKILL');
  }, graceMs);
  await exited;
  clearTimeout(timer);
}

/** A port that was free a moment ago (for programs that cannot report the port they bound). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Polls `probe` until it returns a value (not undefined); throws `describe()` after `timeoutMs`. */
export async function waitFor<T>(
  probe: () => Promise<T | undefined>,
  describe: () => string,
  timeoutMs = 30_000,
  everyMs = 250,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (e) {
      lastError = e;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `gave up waiting: ${describe()}${lastError ? ` (last error: ${String(lastError)})` : ''}`,
      );
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** The addresses `continuity serve` prints on stdout when it is up. */
export interface ServeAddresses {
  otlp: string;
  metrics: string;
  health: string;
  ready: string;
  pid: number;
}

/** Where {@link startServe} runs the command: by default this repository's build, with this Node. */
export interface ServeCommand {
  /** The Node binary. Default: the one running the tests. */
  node?: string;
  /** The `continuity` bin file. Default: this repository's bin/continuity.js. */
  bin?: string;
  /** The working directory. Default: the repository. */
  cwd?: string;
  /** The environment. Default: this process's, without `OTEL_*`. */
  env?: NodeJS.ProcessEnv;
}

/** Starts `node bin/continuity.js serve --config <file>` and waits for its address line. */
export async function startServe(
  configFile: string,
  command: ServeCommand = {},
): Promise<{ child: Child; addresses: ServeAddresses }> {
  if (command.bin === undefined && !existsSync(SERVE_BUILD)) {
    throw new Error(`${SERVE_BUILD} is missing: build first (npx tsc -p tsconfig.build.json, or npm test)`);
  }
  // The configuration file alone decides: no OTEL_* override from the developer's shell.
  const env =
    command.env ?? Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('OTEL_')));
  const child = track(
    spawn(command.node ?? process.execPath, [command.bin ?? BIN, 'serve', '--config', configFile], {
      cwd: command.cwd ?? REPO,
      stdio: ['ignore', 'pipe', 'pipe'],
      env,
    }),
  );
  try {
    const addresses = await waitFor(
      async () => {
        if (child.proc.exitCode !== null) throw new Error(`continuity serve exited ${child.proc.exitCode}`);
        const line = child
          .output()
          .split('\n')
          .find((l) => l.startsWith('{"otlp"'));
        return line === undefined ? undefined : (JSON.parse(line) as ServeAddresses);
      },
      () => `continuity serve to print its addresses; output:\n${child.output()}`,
      20_000,
      100,
    );
    return { child, addresses };
  } catch (e) {
    await stopChild(child);
    throw e;
  }
}

/** A running Prometheus. */
export interface PrometheusProcess {
  child: Child;
  url: string;
}

/** What the generated prometheus.yml contains. */
export interface PrometheusSetup {
  dir: string;
  ruleFiles: string[];
  /** job name → `host:port` targets. */
  jobs: Record<string, string[]>;
  /** Scrape and rule evaluation interval. Default 1s. */
  interval?: string;
}

/**
 * Writes `<dir>/prometheus.yml` and starts Prometheus on a free 127.0.0.1 port with its data in
 * `<dir>/data`; waits until `/-/ready` answers. Retries with another port if the one picked was
 * taken in between.
 */
export async function startPrometheus(setup: PrometheusSetup): Promise<PrometheusProcess> {
  requireTool('prometheus');
  const interval = setup.interval ?? '1s';
  const configFile = join(setup.dir, 'prometheus.yml');
  writeFileSync(
    configFile,
    stringify({
      global: { scrape_interval: interval, scrape_timeout: interval, evaluation_interval: interval },
      rule_files: setup.ruleFiles,
      scrape_configs: Object.entries(setup.jobs).map(([job, targets]) => ({
        job_name: job,
        static_configs: [{ targets }],
      })),
    }),
  );
  let lastFailure = '';
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const child = track(
      spawn(
        'prometheus',
        [
          `--config.file=${configFile}`,
          `--storage.tsdb.path=${join(setup.dir, 'data')}`,
          `--web.listen-address=127.0.0.1:${port}`,
          '--log.level=warn',
        ],
        { cwd: setup.dir, stdio: ['ignore', 'pipe', 'pipe'] },
      ),
    );
    try {
      await waitFor(
        async () => {
          if (child.proc.exitCode !== null) throw new Error(`prometheus exited ${child.proc.exitCode}`);
          const r = await fetch(`${url}/-/ready`);
          return r.ok ? true : undefined;
        },
        () => `prometheus to be ready on ${url}; output:\n${child.output()}`,
        20_000,
        100,
      );
      return { child, url };
    } catch (e) {
      lastFailure = String(e);
      await stopChild(child);
      if (!/address already in use/.test(child.output())) throw e;
    }
  }
  throw new Error(`prometheus could not get a free port: ${lastFailure}`);
}

/** One sample of an instant vector. */
export interface Sample {
  metric: Record<string, string>;
  value: [number, string];
}

/** Runs an instant query; throws with Prometheus's error text when it is rejected. */
export async function instantQuery(
  prom: PrometheusProcess,
  query: string,
  /** The evaluation time, in seconds since the epoch. Default: now, as Prometheus sees it. */
  at?: number,
): Promise<Sample[]> {
  const time = at !== undefined ? `&time=${at}` : '';
  const r = await fetch(`${prom.url}/api/v1/query?query=${encodeURIComponent(query)}${time}`);
  const body = (await r.json()) as {
    status: string;
    error?: string;
    data?: { resultType: string; result: Sample[] };
  };
  if (body.status !== 'success') throw new Error(`query rejected: ${query}: ${body.error}`);
  if (body.data!.resultType !== 'vector')
    throw new Error(`expected a vector from ${query}, got ${body.data!.resultType}`);
  return body.data!.result;
}

/** An alerting rule's state as `/api/v1/rules` reports it. */
export interface AlertRuleState {
  name: string;
  state: 'inactive' | 'pending' | 'firing';
  alerts: { labels: Record<string, string>; annotations: Record<string, string>; state: string }[];
  lastEvaluation: string;
}

/** Every alerting rule and its state. */
export async function alertRules(prom: PrometheusProcess): Promise<Map<string, AlertRuleState>> {
  const r = await fetch(`${prom.url}/api/v1/rules?type=alert`);
  const body = (await r.json()) as { data: { groups: { rules: AlertRuleState[] }[] } };
  return new Map(body.data.groups.flatMap((g) => g.rules).map((rule) => [rule.name, rule]));
}

/** Values of `label` on series of `metric`, as Grafana's label_values() variable asks for them. */
export async function labelValues(prom: PrometheusProcess, metric: string, label: string): Promise<string[]> {
  const r = await fetch(`${prom.url}/api/v1/label/${label}/values?match[]=${encodeURIComponent(metric)}`);
  const body = (await r.json()) as { status: string; data: string[] };
  return body.data;
}
