/**
 * The end-to-end harness for the real Codex CLI binary (issue 13): the pinned binary from the peer
 * cache, our scripted Responses API server (test/support/responses-server.ts), a shared OTLP
 * receiver (test/support/otlp-receiver.ts) the hooks export to, and a private world per scenario:
 * HOME, CODEX_HOME with a config.toml pointing at the server, the hooks and their trust written by
 * the real `continuity init codex --command "node <repo>/bin/continuity.js"`, a project with a
 * task record, a state directory with the ledger, a digest key and a chain key, and `continuity`
 * on the PATH of the agent's shell (as `npm link` would put it).
 *
 * Everything listens on 127.0.0.1 with a free port; every file lives under `os.tmpdir()`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll } from 'vitest';
import { receivedBytes, sessionSpans } from '../support/evidence.js';
import {
  type OtlpReceiver,
  type ReceivedSpan,
  startOtlpReceiver,
  TRACES_PATH,
} from '../support/otlp-receiver.js';
import { ensureNpmPeer, PEERS } from '../support/peers.js';
import { cleanEnv, type Run, run, slots } from '../support/processes.js';
import type { ResponsesServer } from '../support/responses-server.js';
import { marker, type TaskDecision } from '../support/task.js';
import { BIN, continuityCli, evidenceDirs, type WorldFiles, worldFiles } from '../support/world.js';

export { BIN, marker, type Run, run, type TaskDecision };

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The launcher `init --command` writes into the hooks, as a user without `continuity` on PATH would. */
export const LAUNCHER = `node ${BIN}`;
/** How long a peer install may take (hundreds of MB on a fresh machine). */
export const INSTALL_TIMEOUT_MS = 15 * 60_000;
/** A ceiling for one scenario (several processes of the binary); never a timing assertion. */
export const SCENARIO_TIMEOUT_MS = 240_000;
/** The model Codex is told to use: in its bundled catalog, so it offers the apply_patch tool. */
export const MODEL = 'gpt-5.5';
/**
 * The automatic-compaction limit of every world: a response reporting more tokens compacts. Above
 * what Codex estimates for a freshly compacted context (about 6 900 tokens of its own instructions
 * on 0.171.0), or a resumed session would compact again before its first turn.
 */
export const AUTO_COMPACT_LIMIT = 20_000;
/** Tokens a response reports to trigger an automatic compaction. */
export const BIG_USAGE = { total_tokens: 30_100, input_tokens: 30_000, output_tokens: 100 } as const;

// ── The suite ───────────────────────────────────────────────────────────────────────────────────

/** What every scenario of a test file shares. */
export interface Suite {
  codex: string;
  receiver: OtlpReceiver;
  close(): Promise<void>;
}

/** Registers the file's suite (binary installed when missing, receiver started); returns its getter. */
export function useSuite(): () => Suite {
  let suite: Suite | undefined;
  beforeAll(async () => {
    const { bin } = await ensureNpmPeer(PEERS.codex);
    const receiver = await startOtlpReceiver({ paths: [TRACES_PATH] });
    suite = { codex: bin, receiver, close: () => receiver.close() };
  }, INSTALL_TIMEOUT_MS);
  afterAll(async () => {
    await suite?.close();
  });
  return () => {
    if (!suite) throw new Error('the Codex end-to-end suite did not start (see the beforeAll error)');
    return suite;
  };
}

// Scenarios run concurrently; this bounds the processes of the binary at once (2 shared cores).
const withSlot = slots();

// ── Processes ───────────────────────────────────────────────────────────────────────────────────

// ── A world per scenario ────────────────────────────────────────────────────────────────────────

/** What one `codex exec` run did. */
export interface CodexRun extends Run {
  /** The session (thread) id from the `--json` stream's `thread.started`. */
  threadId: string | undefined;
  /** The `--json` events. */
  events: Array<Record<string, unknown>>;
}

/** One scenario's world. */
export interface World extends WorldFiles {
  root: string;
  project: string;
  codexHome: string;
  state: string;
  ledger: string;
  keys: { digest: string; chain: string };
  /** The environment of the binary (and so of its hooks and the agent's shell). */
  env: NodeJS.ProcessEnv;
  /** A human's terminal: the same state and keys, no Codex around it. */
  humanEnv: NodeJS.ProcessEnv;
  /** What `init` printed. */
  initOutput: string;
  /** `codex exec --skip-git-repo-check --json [resume ID] PROMPT` in the project. */
  exec(prompt: string, options?: { resume?: string }): Promise<CodexRun>;
  /** `continuity …` in the project, as the human would run it. */
  continuity(args: string[], input?: string, env?: NodeJS.ProcessEnv): Promise<Run>;
}

/** Codex's config.toml before init adds the trust entries: the scripted provider, automatic compaction. */
export function providerConfig(server: Pick<ResponsesServer, 'baseUrl'>): string {
  return [
    '# written by test/codex-e2e/harness.ts',
    `model = "${MODEL}"`,
    'model_provider = "scripted"',
    'approval_policy = "never"',
    'sandbox_mode = "danger-full-access"',
    // Top level, before any table: written after a header it would silently belong to that table.
    `model_auto_compact_token_limit = ${AUTO_COMPACT_LIMIT}`,
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
    // Otherwise Codex fetches curated plugins from the network at start-up.
    'plugins = false',
    '',
    // The agent's shell gets every variable, the CONTINUITY_*_KEY_FILE ones too (Codex drops
    // names with KEY, SECRET or TOKEN by default; docs/codex.md).
    '[shell_environment_policy]',
    'ignore_default_excludes = true',
    '',
  ].join('\n');
}

/** Creates a world: directories, keys, config.toml, `continuity init codex`, the task record. */
export async function makeWorld(
  suite: Suite,
  server: Pick<ResponsesServer, 'baseUrl'>,
  decisions: Record<string, TaskDecision>,
): Promise<World> {
  const root = mkdtempSync(join(tmpdir(), 'codex-e2e-'));
  const project = join(root, 'project');
  const codexHome = join(root, 'codex-home');
  for (const d of [project, codexHome, join(root, 'home'), join(root, 'human')])
    mkdirSync(d, { recursive: true, mode: 0o700 });
  const { state, ledger, keys, binDir, continuityEnv } = evidenceDirs(root, suite.receiver.endpoint);
  writeFileSync(join(codexHome, 'config.toml'), providerConfig(server));

  const env = cleanEnv({
    PATH: `${binDir}:${process.env.PATH ?? ''}`,
    HOME: join(root, 'home'),
    CODEX_HOME: codexHome,
    OPENAI_API_KEY: 'sk-test',
    RUST_LOG: 'warn',
    ...continuityEnv,
  });
  const humanEnv = cleanEnv({ PATH: env.PATH, HOME: join(root, 'human'), ...continuityEnv });

  const cli = continuityCli(project, humanEnv);

  // The real init, as a user runs it in the project with Codex's environment.
  const init = await cli(['init', 'codex', '--command', LAUNCHER], undefined, env);
  if (init.status !== 0) throw new Error(`continuity init codex failed: ${init.stderr}`);
  writeFileSync(
    join(project, '.continuity', 'task.json'),
    `${JSON.stringify({ task: 'e2e-task', decisions }, null, 2)}\n`,
    { mode: 0o600 },
  );
  return {
    root,
    project,
    codexHome,
    state,
    ledger,
    keys,
    env,
    humanEnv,
    initOutput: init.stdout,
    exec: (prompt, options = {}) =>
      withSlot(async () => {
        const args = ['exec', '--skip-git-repo-check', '--json'];
        if (options.resume) args.push('resume', options.resume);
        args.push(prompt);
        const r = await run(suite.codex, args, { env, cwd: project, timeoutMs: 180_000 });
        const events: Array<Record<string, unknown>> = [];
        for (const line of r.stdout.split('\n')) {
          try {
            events.push(JSON.parse(line) as Record<string, unknown>);
          } catch {
            // not a JSON line
          }
        }
        const started = events.find((e) => e.type === 'thread.started');
        return { ...r, events, threadId: started?.thread_id as string | undefined };
      }),
    continuity: cli,
    ...worldFiles(root, project, { state, ledger }),
  };
}

// ── codex app-server (JSON-RPC over stdio) ──────────────────────────────────────────────────────

/** A minimal client of `codex app-server`: one JSON object per line, requests with ids, notifications. */
export class AppServer {
  private readonly _child: ChildProcess;
  private _nextId = 1;
  private readonly _pending = new Map<
    number,
    { resolve: (v: unknown) => void; reject: (e: Error) => void }
  >();
  readonly notifications: Array<{ method: string; params: Record<string, unknown> }> = [];
  private _waiters: Array<() => void> = [];

  constructor(codex: string, world: World) {
    this._child = spawn(codex, ['app-server'], {
      cwd: world.project,
      env: world.env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this._child.stderr!.resume();
    createInterface({ input: this._child.stdout! }).on('line', (line) => {
      let msg: Record<string, unknown>;
      try {
        msg = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return;
      }
      if (msg.id !== undefined && msg.method === undefined) {
        const p = this._pending.get(msg.id as number);
        this._pending.delete(msg.id as number);
        if (msg.error) p?.reject(new Error(JSON.stringify(msg.error)));
        else p?.resolve(msg.result);
      } else if (msg.id !== undefined && typeof msg.method === 'string') {
        this._send({ id: msg.id, result: {} }); // a request of the server's: nothing to approve here
      } else if (typeof msg.method === 'string') {
        this.notifications.push({
          method: msg.method,
          params: (msg.params ?? {}) as Record<string, unknown>,
        });
        for (const w of this._waiters.splice(0)) w();
      }
    });
  }

  private _send(obj: unknown): void {
    this._child.stdin!.write(`${JSON.stringify(obj)}\n`);
  }

  /** Sends a request and waits for its result. */
  request(method: string, params: unknown = {}, timeoutMs = 60_000): Promise<unknown> {
    const id = this._nextId++;
    this._send({ id, method, params });
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`app-server: no answer to ${method}`)), timeoutMs);
      this._pending.set(id, {
        resolve: (v) => {
          clearTimeout(t);
          resolve(v);
        },
        reject: (e) => {
          clearTimeout(t);
          reject(e);
        },
      });
    });
  }

  /** `initialize` and the `initialized` notification. */
  async init(): Promise<void> {
    await this.request('initialize', { clientInfo: { name: 'continuity-e2e', version: '0.0.0' } });
    this._send({ method: 'initialized' });
  }

  /** Waits for a notification (already received or still to come). */
  async waitFor(
    pred: (n: { method: string; params: Record<string, unknown> }) => boolean,
    timeoutMs = 60_000,
  ) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.notifications.find(pred);
      if (found) return found;
      if (Date.now() > deadline) throw new Error('app-server: notification did not come');
      await new Promise<void>((r) => {
        this._waiters.push(r);
        setTimeout(r, 500);
      });
    }
  }

  /** Ends the process (stdin closed, then SIGTERM by its pid if it lingers). */
  close(): Promise<void> {
    return new Promise((resolve) => {
      if (this._child.exitCode !== null) return resolve();
      this._child.once('close', () => resolve());
      this._child.stdin!.end();
      setTimeout(() => {
        if (this._child.exitCode === null && this._child.pid !== undefined)
          process.kill(this._child.pid, 'SIGTERM');
      }, 3000).unref();
    });
  }
}

// ── Spans ───────────────────────────────────────────────────────────────────────────────────────

/** Waits until the receiver holds spans of `sessionId` satisfying `done` (10 s at most), returning what arrived. */
export function spansOf(
  s: Suite,
  sessionId: string,
  done: (spans: ReceivedSpan[]) => boolean,
): Promise<ReceivedSpan[]> {
  return sessionSpans(s.receiver, sessionId, done, 100);
}

/** Every byte the receiver accepted, for the leak scans. */
export function wireBytes(s: Suite): string {
  return receivedBytes(s.receiver);
}
