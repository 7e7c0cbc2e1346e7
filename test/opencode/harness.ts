/**
 * The end-to-end harness for the real OpenCode (opencode-ai 1.18.33, pinned in
 * test/support/peers.ts): the native binary from the peer cache, our scripted chat-completions
 * server (test/support/openai-chat-server.ts), and a private world per scenario: HOME and the
 * XDG directories, a git project set up by the real `continuity init opencode` (the plugin as a
 * user gets it: a `file://` entry in the project's `opencode.json`), a task record, a state
 * directory and ledger, and the spans going straight to the shared OTLP receiver
 * (test/support/otlp-receiver.ts).
 *
 * Offline, as measured (/work/explore/opencode/FINDINGS.md): the `OPENCODE_DISABLE_*` variables,
 * `autoupdate: false`, and the config directory's `@opencode-ai/plugin` dependency seeded, since
 * OpenCode otherwise installs it from the npm registry as soon as any plugin is configured. The
 * provider lives in the user's global `opencode.json`, as it would; the project's holds only what
 * init wrote.
 *
 * Everything listens on 127.0.0.1 with a free port; every file lives under `os.tmpdir()`.
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, expect } from 'vitest';
import type { Voice } from '../../src/adapters/core/messages.js';
import { CONSEQUENTIAL_TOOLS } from '../../src/adapters/opencode/config.js';
import { compareCriticality } from '../../src/decision/names.js';
import { ATTR_SESSION_ID } from '../../src/otel/semconv.js';
import { atTerminal, withApproverKey } from '../support/human.js';
import {
  type ChatServer,
  type ChatServerOptions,
  type RecordedRequest,
  type ReplyStep,
  type Step,
  startChatServer,
  systemTexts,
  toolResults,
  type Usage,
} from '../support/openai-chat-server.js';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../support/otlp-receiver.js';
import { ensureNpmPeer, PEERS } from '../support/peers.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const BIN = join(ROOT, 'bin', 'continuity.js');
/** How the agent's shell starts continuity here: `continuity` is not on the PATH OpenCode gets. */
export const LAUNCHER = `node ${BIN}`;
/** The words the plugin uses with that launcher. */
export const VOICE: Voice = { launcher: LAUNCHER, consequentialTools: CONSEQUENTIAL_TOOLS };
/** The model as OpenCode names it: provider `mock`, model `mock-model`. */
export const MODEL = { providerID: 'mock', modelID: 'mock-model' } as const;
/** How long a peer install may take (two 177 MB binaries on a fresh machine). */
export const INSTALL_TIMEOUT_MS = 15 * 60_000;
/** A ceiling for one scenario (several processes of the binary on 2 shared cores); never a timing assertion. */
export const SCENARIO_TIMEOUT_MS = 600_000;
/** A ceiling for one OpenCode process. */
const RUN_TIMEOUT_MS = 300_000;

// ── The suite: binary and receiver ──────────────────────────────────────────────────────────────

/** What every scenario of a test file shares. */
export interface Suite {
  /** The OpenCode binary. */
  opencode: string;
  /** Where the plugin and the CLI export spans. */
  receiver: OtlpReceiver;
}

/** Registers the file's suite: the pinned binary installed when missing, the receiver started. */
export function useSuite(): () => Suite {
  let suite: Suite | undefined;
  beforeAll(async () => {
    const { bin } = await ensureNpmPeer(PEERS.opencode);
    suite = { opencode: bin, receiver: await startOtlpReceiver() };
  }, INSTALL_TIMEOUT_MS);
  afterAll(async () => {
    await suite?.receiver.close();
  });
  return () => {
    if (!suite) throw new Error('the OpenCode suite did not start (see the beforeAll error)');
    return suite;
  };
}

// Scenarios run concurrently; this bounds the processes of the binary at once (2 shared cores).
const MAX_BINARIES = Number(process.env.CONTINUITY_E2E_CONCURRENCY) || 3;
let running = 0;
const queue: Array<() => void> = [];

/** Waits for a free slot; returns its release (idempotent). */
async function acquireSlot(): Promise<() => void> {
  if (running >= MAX_BINARIES) await new Promise<void>((r) => queue.push(r));
  running++;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    running--;
    queue.shift()?.();
  };
}

async function withSlot<T>(fn: () => Promise<T>): Promise<T> {
  const release = await acquireSlot();
  try {
    return await fn();
  } finally {
    release();
  }
}

// ── Processes ───────────────────────────────────────────────────────────────────────────────────

/** What a child process did. */
export interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command without blocking the test's event loop (the servers live there). */
export function run(
  command: string,
  args: readonly string[],
  options: { env: NodeJS.ProcessEnv; cwd: string; input?: string; timeoutMs?: number },
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      timeout: options.timeoutMs ?? 60_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      stdout += c;
    });
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      stderr += c;
    });
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
    child.stdin.on('error', () => {});
    child.stdin.end(options.input ?? '');
  });
}

// ── A world per scenario ────────────────────────────────────────────────────────────────────────

/** A task decision of the record. */
export interface TaskDecision {
  value: unknown;
  sensitive?: boolean;
}

/** One scenario's private world. */
export interface World {
  root: string;
  project: string;
  /** The state root (CONTINUITY_STATE_DIR): the ledger, the adapter's state, the spool. */
  state: string;
  ledger: string;
  /** OpenCode's config directory (`$XDG_CONFIG_HOME/opencode`). */
  configDir: string;
  /** The environment OpenCode runs with (and so the plugin and the agent's bash tool). */
  env: NodeJS.ProcessEnv;
  /** The human's terminal: the same continuity settings, nothing of OpenCode. */
  shellEnv: NodeJS.ProcessEnv;
  server: ChatServer;
  /** The decision names, most critical first (as the plugin names them). */
  names: string[];
  dispose(): Promise<void>;
}

/** What a scenario sets up. */
export interface WorldOptions extends Omit<ChatServerOptions, 'summary'> {
  decisions: Record<string, TaskDecision>;
  /** The model's limits; automatic compaction starts at `context − output` tokens. Default 100 000 / 4 096. */
  limit?: { context: number; output: number };
}

/** The recorder plugin (test/support/opencode-recorder-plugin.ts), loaded by OpenCode's Bun as it is. */
const RECORDER_PLUGIN = join(ROOT, 'test', 'support', 'opencode-recorder-plugin.ts');

/** The summary the scripted summarizer writes. */
export const SUMMARY = '## Goal\nSCRIPTED-SUMMARY-7c1e\n';

function cleanEnv(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  // Nothing of the runner's environment beyond these: no OTEL_*, CONTINUITY_*, OPENCODE_*.
  for (const k of ['LANG', 'TZ']) if (process.env[k] !== undefined) env[k] = process.env[k];
  // node for the launcher, the usual system tools for bash; no `continuity` on it.
  env.PATH = `${dirname(process.execPath)}:/usr/bin:/bin`;
  return { ...env, ...extra };
}

function git(cwd: string, ...args: string[]): Promise<Run> {
  return run('git', ['-c', 'user.email=t@example.invalid', '-c', 'user.name=t', ...args], {
    env: cleanEnv({ HOME: cwd }),
    cwd,
  });
}

/** Creates a world: the model server, a git project with `continuity init opencode` run in it, the task record. */
export async function makeWorld(suite: Suite, options: WorldOptions): Promise<World> {
  const root = mkdtempSync(join(tmpdir(), 'oc-e2e-'));
  const home = join(root, 'home');
  const project = join(root, 'project');
  const state = join(root, 'state');
  const configDir = join(home, '.config', 'opencode');
  mkdirSync(project, { recursive: true });
  mkdirSync(configDir, { recursive: true });
  writeFileSync(join(project, 'README.md'), '# scenario project\n');
  await git(project, 'init', '-q');
  await git(project, 'add', '.');
  await git(project, 'commit', '-q', '-m', 'init');

  const continuity = {
    CONTINUITY_STATE_DIR: state,
    CONTINUITY_LEDGER: join(state, 'ledger.jsonl'),
    CONTINUITY_OTLP_ENDPOINT: suite.receiver.endpoint,
    CONTINUITY_OTLP_TIMEOUT_MS: '3000',
  };
  const shellEnv = cleanEnv({ HOME: join(root, 'human'), ...continuity });
  const init = await run(process.execPath, [BIN, 'init', 'opencode'], { env: shellEnv, cwd: project });
  expect(init.status, init.stderr).toBe(0);
  writeFileSync(
    join(project, '.continuity', 'task.json'),
    `${JSON.stringify({ task: 'oc-e2e', decisions: options.decisions }, null, 2)}\n`,
  );

  // OpenCode installs @opencode-ai/plugin into a config directory with plugins unless it is there.
  mkdirSync(join(configDir, 'node_modules'));
  const dep = { '@opencode-ai/plugin': '1.18.33' };
  writeFileSync(join(configDir, 'package.json'), `${JSON.stringify({ dependencies: dep })}\n`);
  writeFileSync(
    join(configDir, 'package-lock.json'),
    `${JSON.stringify({ lockfileVersion: 3, packages: { '': { dependencies: dep } } })}\n`,
  );
  const server = await startChatServer({ ...options, summary: SUMMARY });
  const model = `${MODEL.providerID}/${MODEL.modelID}`;
  writeFileSync(
    join(configDir, 'opencode.json'),
    `${JSON.stringify(
      {
        $schema: 'https://opencode.ai/config.json',
        model,
        small_model: model,
        autoupdate: false,
        share: 'disabled',
        // The recorder next to ours (OpenCode concatenates the global and the project's lists).
        plugin: [pathToFileURL(RECORDER_PLUGIN).href],
        provider: {
          [MODEL.providerID]: {
            npm: '@ai-sdk/openai-compatible',
            name: 'Scripted',
            options: { baseURL: server.url, apiKey: 'test-key' },
            models: {
              [MODEL.modelID]: {
                name: 'Scripted model',
                tool_call: true,
                limit: options.limit ?? { context: 100_000, output: 4096 },
              },
            },
          },
        },
      },
      null,
      2,
    )}\n`,
  );
  const env = cleanEnv({
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_STATE_HOME: join(home, '.local', 'state'),
    TERM: 'dumb',
    OPENCODE_DISABLE_MODELS_FETCH: '1',
    OPENCODE_DISABLE_AUTOUPDATE: '1',
    OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
    OPENCODE_DISABLE_SHARE: '1',
    RECORDER_LOG: join(root, 'recorder.jsonl'),
    ...continuity,
  });
  return {
    root,
    project,
    state,
    ledger: continuity.CONTINUITY_LEDGER,
    configDir,
    env,
    shellEnv,
    server,
    names: Object.keys(options.decisions).sort(compareCriticality),
    dispose: async () => {
      await server.close();
      // CONTINUITY_E2E_KEEP=1 keeps the world (and the model's requests) to look at after a failure.
      if (process.env.CONTINUITY_E2E_KEEP) {
        writeFileSync(join(root, 'requests.json'), JSON.stringify(server.requests, null, 2));
        process.stderr.write(`kept ${root}\n`);
      } else rmSync(root, { recursive: true, force: true });
    },
  };
}

/** One `--format json` event of `opencode run`. */
export interface RunEvent {
  type: string;
  sessionID?: string;
  part?: { tool?: string; callID?: string; state?: { status?: string; error?: string } };
}

/** An `opencode run` and what it printed. */
export interface OpencodeRun extends Run {
  events: RunEvent[];
  /** The session the run worked on. */
  sessionId: string | undefined;
}

/**
 * `opencode run --format json --print-logs <words…>` in the world's project. The words go as
 * separate arguments: `run` quotes an argument that contains a space.
 */
export function opencodeRun(
  suite: Suite,
  world: World,
  words: string[],
  flags: string[] = [],
): Promise<OpencodeRun> {
  return withSlot(async () => {
    const r = await run(
      suite.opencode,
      ['run', '--format', 'json', '--print-logs', '--log-level', 'WARN', ...flags, ...words],
      { env: world.env, cwd: world.project, timeoutMs: RUN_TIMEOUT_MS },
    );
    const events = r.stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as RunEvent);
    return { ...r, events, sessionId: events.find((e) => e.sessionID)?.sessionID };
  });
}

/** A running `opencode serve` on 127.0.0.1. */
export interface Served {
  url: string;
  /** Everything it wrote on stderr so far. */
  stderr(): string;
  /** POST a JSON body to `path`; the parsed answer. */
  post(path: string, body: unknown): Promise<{ status: number; json: unknown }>;
  stop(): Promise<void>;
}

/** `opencode serve --port 0 --hostname 127.0.0.1 --print-logs` in the world's project. */
export async function opencodeServe(suite: Suite, world: World): Promise<Served> {
  const release = await acquireSlot();
  const child: ChildProcess = spawn(
    suite.opencode,
    ['serve', '--port', '0', '--hostname', '127.0.0.1', '--print-logs', '--log-level', 'WARN'],
    { cwd: world.project, env: world.env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  child.stderr!.setEncoding('utf8').on('data', (c: string) => {
    err += c;
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`opencode serve did not start: ${err.slice(-500)}`)),
      RUN_TIMEOUT_MS,
    );
    child.stdout!.setEncoding('utf8').on('data', (c: string) => {
      out += c;
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      release();
      reject(new Error(`opencode serve exited ${code}: ${err.slice(-500)}`));
    });
  });
  return {
    url,
    stderr: () => err,
    post: async (path, body) => {
      const res = await fetch(`${url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(RUN_TIMEOUT_MS),
      });
      const text = await res.text();
      return { status: res.status, json: text ? (JSON.parse(text) as unknown) : undefined };
    },
    stop: async () => {
      if (child.exitCode === null && child.pid !== undefined) {
        const exited = new Promise((r) => child.once('exit', r));
        process.kill(child.pid, 'SIGTERM');
        await exited;
      }
      release();
    },
  };
}

/** `continuity …` in the human's terminal (another process, the same state and ledger). */
export function human(world: World, args: string[], input?: string): Promise<Run> {
  // An approval is signed with the approver key, its passphrase typed at a terminal.
  if (args[0] === 'approve') {
    return atTerminal(process.execPath, [BIN, ...args], {
      env: withApproverKey(world.shellEnv, world.root),
      cwd: world.project,
    });
  }
  return run(process.execPath, [BIN, ...args], {
    env: world.shellEnv,
    cwd: world.project,
    ...(input !== undefined ? { input } : {}),
  });
}

// ── The scripted agent ──────────────────────────────────────────────────────────────────────────

/** A step running one bash command (with its own call id), optionally reporting `usage`. */
export function bash(id: string, command: string, usage?: Usage): ReplyStep {
  return {
    toolCalls: [{ id, name: 'bash', args: { command, description: id } }],
    ...(usage ? { usage } : {}),
  };
}

/** A step writing `content` to `path` in the project. */
export function write(world: World, id: string, path: string, content: string, usage?: Usage): ReplyStep {
  return {
    toolCalls: [{ id, name: 'write', args: { filePath: join(world.project, path), content } }],
    ...(usage ? { usage } : {}),
  };
}

/**
 * The restatement command exactly as the plugin's system message printed it, with the
 * here-document's body replaced by `values` as JSON; `undefined` when the request carries none.
 */
export function restatementCommand(
  request: RecordedRequest,
  values: Record<string, unknown>,
): string | undefined {
  for (const text of systemTexts(request)) {
    const m = /^(.* observe --session \S+ --decisions - <<'EOF')\n.*\nEOF$/m.exec(text);
    if (m) return `${m[1]}\n${JSON.stringify(values)}\nEOF`;
  }
  return undefined;
}

/** A step that restates `values` with the printed command (or says it found none, which the assertions catch). */
export function restate(id: string, values: Record<string, unknown>): Step {
  return (request) => {
    const command = restatementCommand(request, values);
    return command ? bash(id, command) : { text: 'NO-RESTATEMENT-REQUEST-SEEN' };
  };
}

/** What the model read as the result of tool call `id` (the first request that carries it). */
export function resultOf(server: ChatServer, id: string): string | undefined {
  for (const r of server.requests) {
    const result = toolResults(r).get(id);
    if (result !== undefined) return result;
  }
  return undefined;
}

/** The request in which the model made step `n`'s reply. */
export function stepRequest(server: ChatServer, n: number): RecordedRequest {
  const r = server.requests.find((q) => q.kind === 'step' && q.step === n);
  if (!r)
    throw new Error(
      `step ${n} was never requested (requests: ${server.requests.map((q) => `${q.kind}${q.step ?? ''}`).join(' ')})`,
    );
  return r;
}

// ── Evidence ────────────────────────────────────────────────────────────────────────────────────

/** The ledger's records. */
export function ledgerRecords(world: World): Array<Record<string, unknown>> {
  return readFileSync(world.ledger, 'utf8')
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** The ledger as `type[:phase][:state]` strings, for one session. */
export function ledgerShape(world: World, sessionId: string): string[] {
  return ledgerRecords(world)
    .filter((r) => r.sessionId === sessionId)
    .map((r) => [r.type, r.phase, r.state].filter((x) => typeof x === 'string').join(':'));
}

/** One line of the recorder plugin's log. */
export interface Recorded {
  /** Milliseconds since the first line (sanitized) or the epoch (live). */
  t: number;
  /** The OpenCode process (sanitized: 1, 2, … in order of appearance). */
  pid: number;
  hook: string;
  input?: Record<string, unknown>;
  event?: { type: string; properties?: Record<string, unknown> };
}

/** What the recorder plugin saw in this world, in order (every OpenCode process of it). */
export function recording(world: World): Recorded[] {
  const file = join(world.root, 'recorder.jsonl');
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as Recorded);
}

/**
 * A recording as a committed fixture: ids replaced by stable placeholders (`<ses_1>`, `<msg_2>`),
 * times made relative to the first line (message creation times too, so the order the
 * translation compares survives). Only hook names, event types, roles, flags and token counts
 * remain.
 */
export function sanitizeRecording(lines: readonly Recorded[]): Recorded[] {
  const t0 = lines[0]?.t ?? 0;
  const ids = new Map<string, string>();
  const counts = new Map<string, number>();
  const id = (v: string) => {
    const m = /^(ses|msg|prt|call)_/.exec(v);
    if (!m) return v;
    let out = ids.get(v);
    if (!out) {
      const n = (counts.get(m[1]!) ?? 0) + 1;
      counts.set(m[1]!, n);
      out = `<${m[1]}_${n}>`;
      ids.set(v, out);
    }
    return out;
  };
  const walk = (v: unknown, key?: string): unknown => {
    if (typeof v === 'string') return /ID$|^id$/.test(key ?? '') ? id(v) : v;
    if (typeof v === 'number' && (key === 'created' || key === 'completed')) return v - t0;
    if (Array.isArray(v)) return v.map((x) => walk(x));
    if (v && typeof v === 'object')
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, k)]));
    return v;
  };
  const pids = new Map<number, number>();
  for (const l of lines) if (!pids.has(l.pid)) pids.set(l.pid, pids.size + 1);
  return lines.map((l) => ({ ...(walk(l) as Recorded), t: l.t - t0, pid: pids.get(l.pid)! }));
}

/**
 * With CONTINUITY_E2E_RECORD=1, writes the world's recording, sanitized, as the fixture `name`
 * (test/fixtures/opencode-1.18.33/<name>.json). Returns the sanitized recording either way.
 */
export function keepRecording(world: World, name: string): Recorded[] {
  const sanitized = sanitizeRecording(recording(world));
  if (process.env.CONTINUITY_E2E_RECORD) {
    writeFileSync(
      join(ROOT, 'test', 'fixtures', 'opencode-1.18.33', `${name}.json`),
      `${JSON.stringify(sanitized, null, 1)}\n`,
    );
  }
  return sanitized;
}

/** Every file under `dir`, its bytes (the ledger, the adapter's state, the spool). */
export function filesUnder(dir: string): Array<{ path: string; bytes: Buffer; mode: number }> {
  const out: Array<{ path: string; bytes: Buffer; mode: number }> = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      const st = statSync(p);
      if (st.isDirectory()) walk(p);
      else out.push({ path: p, bytes: readFileSync(p), mode: st.mode & 0o777 });
    }
  };
  walk(dir);
  return out;
}

/** The spans the receiver got for `sessionId`. */
export function spansOf(suite: Suite, sessionId: string): ReceivedSpan[] {
  return suite.receiver.spans.filter((s) => s.attributes[ATTR_SESSION_ID] === sessionId);
}

/** Every byte the receiver got, as text (for leak scans). */
export function wireText(suite: Suite): string {
  return Buffer.concat(suite.receiver.requests.map((r) => r.body)).toString('latin1');
}

/** The continuity lines OpenCode logged (the plugin's warnings), from a run's stderr. */
export function continuityLog(stderr: string): string[] {
  return stderr.split('\n').filter((l) => l.includes('continuity:'));
}
