/**
 * The end-to-end harness for the real Claude Code binary (issue 10): the pinned binary from the
 * peer cache, our scripted Anthropic Messages server (test/support/anthropic-server.ts), and a
 * private world per scenario: HOME, CLAUDE_CONFIG_DIR, a temporary project set up by the real
 * `continuity init claude-code --command "node <repo>/bin/continuity.js"`, a task record, a state
 * directory with the ledger, a digest key and a chain key, and `continuity` on the PATH of the
 * agent's Bash tool (as `npm link` would put it).
 *
 * Spans take the real pipeline: the hooks and `continuity observe` export to a `continuity serve`
 * (a child process on a free port, one per test file), which correlates them, writes the state on
 * the post spans and forwards everything to the shared OTLP receiver (test/support/otlp-receiver.ts).
 *
 * Everything listens on 127.0.0.1 with a free port; every file lives under `os.tmpdir()`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll } from 'vitest';
import { ATTR_SESSION_ID } from '../../src/otel/semconv.js';
import {
  type AnthropicServer,
  type MessagesBody,
  requestText,
  type Step,
  type ToolCall,
  type ToolResult,
  toolResult,
} from '../support/anthropic-server.js';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../support/otlp-receiver.js';
import { ensureNpmPeer, ensureSystemTools, PEERS, type SystemTool } from '../support/peers.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const BIN = join(ROOT, 'bin', 'continuity.js');
/** The launcher `init --command` writes into the hooks, as a user without `continuity` on PATH would. */
export const LAUNCHER = `node ${BIN}`;
/** How long a peer install may take (hundreds of MB on a fresh machine). */
export const INSTALL_TIMEOUT_MS = 15 * 60_000;
/** The tools allowed without a prompt (running as root rules out `--dangerously-skip-permissions`). */
export const ALLOWED_TOOLS = 'Bash Edit Write';
/** A ceiling for one scenario (several processes of the binary); never a timing assertion. */
export const SCENARIO_TIMEOUT_MS = 240_000;

// ── The suite: binary, receiver, processor service ──────────────────────────────────────────────

/** What every scenario of a test file shares. */
export interface Suite {
  /** The Claude Code binary. */
  claude: string;
  /** Where the hooks export: the `continuity serve` of this file. */
  otlpEndpoint: string;
  /** The receiver behind `continuity serve`. */
  receiver: OtlpReceiver;
  close(): Promise<void>;
}

function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  // Nothing of the runner's environment beyond these: no OTEL_*, CONTINUITY_*, CLAUDE_*, ANTHROPIC_*.
  for (const k of ['PATH', 'LANG', 'TZ']) if (process.env[k] !== undefined) env[k] = process.env[k];
  return { ...env, ...extra };
}

async function startServe(dir: string, downstream: string): Promise<{ child: ChildProcess; base: string }> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const config = join(dir, 'serve.yaml');
  writeFileSync(
    config,
    [
      'server:',
      '  port: 0',
      'state:',
      `  dir: ${join(dir, 'state')}`,
      'downstream:',
      `  endpoint: ${downstream}/v1/traces`,
      '  protocol: http/json',
      '',
    ].join('\n'),
  );
  const child = spawn(process.execPath, [BIN, 'serve', '--config', config], {
    env: cleanEnv({ HOME: dir }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stderr!.resume();
  const base = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (c: string) => {
      out += c;
      const m = /"otlp":"(http:\/\/127\.0\.0\.1:\d+)\/v1\/traces"/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.on('exit', (code) => reject(new Error(`continuity serve exited ${code} before listening`)));
  });
  return { child, base };
}

/** What Claude Code's Bash sandbox needs on Linux; without them its settings do nothing, silently. */
export const SANDBOX_TOOLS: readonly SystemTool[] = [
  { command: 'bwrap', debianPackage: 'bubblewrap' },
  { command: 'socat', debianPackage: 'socat' },
];

/**
 * Whether `continuity init claude-code` turns on Claude Code's Bash sandbox: then the suite needs
 * bubblewrap and socat, or the sandbox would silently not exist and the scenarios prove nothing.
 */
async function initWritesSandbox(): Promise<boolean> {
  const dir = mkdtempSync(join(tmpdir(), 'cc-e2e-init-'));
  try {
    const env = cleanEnv({ HOME: dir, CONTINUITY_STATE_DIR: join(dir, 'state') });
    const r = await run(process.execPath, [BIN, 'init', 'claude-code', '--command', LAUNCHER], {
      env,
      cwd: dir,
    });
    if (r.status !== 0) throw new Error(`continuity init claude-code failed: ${r.stderr}`);
    const settings = JSON.parse(readFileSync(join(dir, '.claude', 'settings.json'), 'utf8')) as {
      sandbox?: { enabled?: boolean };
    };
    return settings.sandbox?.enabled === true;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Installs the pinned binary when missing (and bubblewrap when init configures the sandbox),
 * starts the receiver and `continuity serve`.
 */
export async function startSuite(): Promise<Suite> {
  const { bin } = await ensureNpmPeer(PEERS.claudeCode);
  if (await initWritesSandbox()) await ensureSystemTools(SANDBOX_TOOLS);
  const receiver = await startOtlpReceiver();
  const dir = mkdtempSync(join(tmpdir(), 'cc-e2e-serve-'));
  const serve = await startServe(dir, receiver.endpoint);
  return {
    claude: bin,
    otlpEndpoint: serve.base,
    receiver,
    close: async () => {
      if (serve.child.pid !== undefined && serve.child.exitCode === null) {
        const exited = new Promise((r) => serve.child.once('exit', r));
        process.kill(serve.child.pid, 'SIGTERM');
        await exited;
      }
      await receiver.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Registers the file's suite: started in `beforeAll` (with the long timeout a first install
 * needs, and `extra` set-up after it), closed in `afterAll`. Returns its getter.
 */
export function useSuite(extra?: () => Promise<void>): () => Suite {
  let suite: Suite | undefined;
  beforeAll(async () => {
    suite = await startSuite();
    await extra?.();
  }, INSTALL_TIMEOUT_MS);
  afterAll(async () => {
    await suite?.close();
  });
  return () => {
    if (!suite) throw new Error('the end-to-end suite did not start (see the beforeAll error)');
    return suite;
  };
}

// ── Concurrency ─────────────────────────────────────────────────────────────────────────────────

// Scenarios run concurrently; this bounds the processes of the binary at once (2 shared cores),
// so no hook runs into its timeout because the machine is saturated.
const MAX_BINARIES = Number(process.env.CONTINUITY_E2E_CONCURRENCY) || 3;
let running = 0;
const queue: Array<() => void> = [];

async function withSlot<T>(fn: () => Promise<T>): Promise<T> {
  if (running >= MAX_BINARIES) await new Promise<void>((r) => queue.push(r));
  running++;
  try {
    return await fn();
  } finally {
    running--;
    queue.shift()?.();
  }
}

// ── A world per scenario ────────────────────────────────────────────────────────────────────────

/** A decision of the task record. */
export interface TaskDecision {
  value: unknown;
  sensitive?: boolean;
}

/** What one run of the binary did. */
export interface ClaudeRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The `--output-format json` result (undefined when stdout was not JSON). */
  result: ClaudeResult | undefined;
}

/** The parts of Claude Code's JSON result the tests read. */
export interface ClaudeResult {
  type: string;
  subtype: string;
  is_error: boolean;
  result: string;
  session_id: string;
  permission_denials: Array<{ tool_name: string; tool_use_id: string; tool_input: Record<string, unknown> }>;
}

/** A continuity CLI run. */
export interface CliRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** One scenario's world. */
export interface World {
  root: string;
  project: string;
  state: string;
  ledger: string;
  keys: { digest: string; chain: string };
  /** The environment of the binary (and so of its hooks and Bash tool). */
  env: NodeJS.ProcessEnv;
  /** A human's terminal: the same state and keys, no Claude Code variables. */
  humanEnv: NodeJS.ProcessEnv;
  /** What `init` printed. */
  initOutput: string;
  /**
   * Runs the binary in the project against `server`, with `--output-format json` and
   * `--allowedTools` (default {@link ALLOWED_TOOLS}).
   */
  claude(
    server: AnthropicServer,
    args: string[],
    options?: { env?: NodeJS.ProcessEnv; allowedTools?: string },
  ): Promise<ClaudeRun>;
  /** Runs `continuity …` in the project as the human would. */
  continuity(args: string[], input?: string, env?: NodeJS.ProcessEnv): Promise<CliRun>;
  /** The ledger's records, in order. */
  ledgerRecords(): Array<Record<string, unknown>>;
  /** Every byte the adapter and the ledger wrote under the state directory. */
  stateBytes(): Buffer;
  /** The path of a project file. */
  file(rel: string): string;
  dispose(): void;
}

/** Options of {@link makeWorld}. */
export interface WorldOptions {
  decisions: Record<string, TaskDecision>;
  /** A CLAUDE.md for the project (so InstructionsLoaded fires). */
  claudeMd?: string;
  /** A world to share the project and state with (two sessions in one project). */
  sharedWith?: World;
}

function writeKey(path: string): void {
  writeFileSync(path, randomBytes(32).toString('hex'), { mode: 0o600 });
}

/** Runs a child process without blocking the event loop (the servers of the test live there). */
export function run(
  command: string,
  args: string[],
  options: { env: NodeJS.ProcessEnv; cwd: string; input?: string; timeoutMs?: number },
): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      stdout += c;
    });
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      stderr += c;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
    child.stdin.on('error', () => {});
    child.stdin.end(options.input ?? '');
  });
}

/** Creates a world: directories, keys, `continuity init claude-code`, the task record. */
export async function makeWorld(suite: Suite, options: WorldOptions): Promise<World> {
  const shared = options.sharedWith;
  const root = mkdtempSync(join(tmpdir(), 'cc-e2e-'));
  const project = shared?.project ?? join(root, 'project');
  const state = shared?.state ?? join(root, 'state');
  const ledger = join(state, 'ledger.jsonl');
  const keysDir = join(root, 'keys');
  const binDir = join(root, 'bin');
  for (const d of [project, state, keysDir, binDir, join(root, 'home'), join(root, 'config')])
    mkdirSync(d, { recursive: true, mode: 0o700 });
  const keys = shared?.keys ?? { digest: join(keysDir, 'digest.key'), chain: join(keysDir, 'chain.key') };
  if (!shared) {
    writeKey(keys.digest);
    writeKey(keys.chain);
  }
  // `continuity` on the agent's PATH, as `npm link` puts it there.
  writeFileSync(join(binDir, 'continuity'), `#!/bin/sh\nexec ${process.execPath} ${BIN} "$@"\n`, {
    mode: 0o755,
  });

  const continuityEnv = {
    CONTINUITY_STATE_DIR: state,
    CONTINUITY_LEDGER: ledger,
    CONTINUITY_DIGEST_KEY_FILE: keys.digest,
    CONTINUITY_CHAIN_KEY_FILE: keys.chain,
    CONTINUITY_OTLP_ENDPOINT: suite.otlpEndpoint,
    CONTINUITY_OTLP_TIMEOUT_MS: '3000',
  };
  const env = cleanEnv({
    PATH: `${binDir}:${process.env.PATH ?? ''}`,
    HOME: join(root, 'home'),
    CLAUDE_CONFIG_DIR: join(root, 'config'),
    ANTHROPIC_API_KEY: 'test',
    DISABLE_TELEMETRY: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    TERM: 'dumb',
    ...continuityEnv,
  });
  const humanEnv = cleanEnv({ PATH: env.PATH, HOME: join(root, 'human'), ...continuityEnv });

  const cli = (args: string[], input?: string, e: NodeJS.ProcessEnv = humanEnv) =>
    run(process.execPath, [BIN, ...args], {
      env: e,
      cwd: project,
      ...(input !== undefined ? { input } : {}),
    });

  let initOutput = shared?.initOutput ?? '';
  if (!shared) {
    // The real init, as a user runs it in the project (with the environment the hooks will have).
    const init = await cli(['init', 'claude-code', '--command', LAUNCHER], undefined, env);
    if (init.status !== 0) throw new Error(`continuity init claude-code failed: ${init.stderr}`);
    initOutput = init.stdout;
    writeFileSync(
      join(project, '.continuity', 'task.json'),
      `${JSON.stringify({ task: 'e2e-task', decisions: options.decisions }, null, 2)}\n`,
      { mode: 0o600 },
    );
    if (options.claudeMd !== undefined) writeFileSync(join(project, 'CLAUDE.md'), options.claudeMd);
  }

  let runs = 0;
  return {
    root,
    project,
    state,
    ledger,
    keys,
    env,
    humanEnv,
    initOutput,
    claude: (server, args, { env: extraEnv = {}, allowedTools = ALLOWED_TOOLS } = {}) =>
      withSlot(async () => {
        runs++;
        const full = [
          ...args,
          '--output-format',
          'json',
          '--allowedTools',
          allowedTools,
          '--debug-file',
          join(root, `debug-${runs}.log`),
        ];
        const r = await run(suite.claude, full, {
          env: { ...env, ANTHROPIC_BASE_URL: server.url, ...extraEnv },
          cwd: project,
          timeoutMs: 180_000,
        });
        let result: ClaudeResult | undefined;
        try {
          result = JSON.parse(r.stdout) as ClaudeResult;
        } catch {
          result = undefined;
        }
        return { code: r.status, stdout: r.stdout, stderr: r.stderr, result };
      }),
    continuity: cli,
    ledgerRecords: () =>
      existsSync(ledger)
        ? readFileSync(ledger, 'utf8')
            .split('\n')
            .filter((l) => l.length > 0)
            .map((l) => JSON.parse(l) as Record<string, unknown>)
        : [],
    stateBytes: () => {
      const out: Buffer[] = [];
      const walk = (dir: string) => {
        for (const name of readdirSync(dir)) {
          const p = join(dir, name);
          if (statSync(p).isDirectory()) walk(p);
          else out.push(readFileSync(p));
        }
      };
      walk(state);
      return Buffer.concat(out);
    },
    file: (rel) => join(project, rel),
    dispose: () => {
      if (process.env.CONTINUITY_E2E_KEEP !== '1') rmSync(root, { recursive: true, force: true });
    },
  };
}

// ── Script steps ────────────────────────────────────────────────────────────────────────────────

/** A Bash tool call with a known id. */
export function bash(id: string, command: string): ToolCall {
  return { tool: 'Bash', id, input: { command, description: id } };
}

/** A Write tool call with a known id (absolute path, as the tool requires). */
export function write(id: string, path: string, content: string): ToolCall {
  return { tool: 'Write', id, input: { file_path: path, content } };
}

/** An Edit tool call with a known id (the file must be known to the binary: written or read first). */
export function edit(id: string, path: string, oldString: string, newString: string): ToolCall {
  return { tool: 'Edit', id, input: { file_path: path, old_string: oldString, new_string: newString } };
}

/** The restatement command the context added after compaction asks for: its first line and session. */
export function restatementCommand(
  body: MessagesBody | undefined,
): { head: string; sessionId: string } | undefined {
  const m = /^(.*\bobserve --session (\S+) --decisions - <<'EOF')$/m.exec(requestText(body));
  return m ? { head: m[1]!, sessionId: m[2]! } : undefined;
}

/**
 * The agent restating its decisions: a Bash call running exactly the command that the context
 * injected after compaction printed (found in the request, so the step fails when the context did
 * not reach the model), with `values` as the here-document.
 */
export function restate(id: string, values: Record<string, unknown>): Step {
  return ({ request }) => {
    const cmd = restatementCommand(request.body);
    if (!cmd)
      throw new Error(
        'no restatement command in the request: the compaction context did not reach the model',
      );
    return bash(id, `${cmd.head}\n${JSON.stringify(values)}\nEOF`);
  };
}

/** The result of tool call `id`, from the first request that carries it. */
export function resultOf(server: AnthropicServer, id: string): ToolResult | undefined {
  for (const r of server.requests) {
    const t = toolResult(r.body, id);
    if (t) return t;
  }
  return undefined;
}

/** The tool calls Claude Code reports as denied in a run's result. */
export function deniedIds(r: ClaudeRun): string[] {
  return (r.result?.permission_denials ?? []).map((d) => d.tool_use_id);
}

// ── Spans ───────────────────────────────────────────────────────────────────────────────────────

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Waits until the receiver holds spans of `sessionId` satisfying `done`, or gives up after a
 * generous bound (delivery goes through `continuity serve`), returning what arrived either way.
 */
export async function spansOf(
  suite: Suite,
  sessionId: string,
  done: (spans: ReceivedSpan[]) => boolean,
): Promise<ReceivedSpan[]> {
  const mine = () => suite.receiver.spans.filter((s) => s.attributes[ATTR_SESSION_ID] === sessionId);
  for (let i = 0; i < 150 && !done(mine()); i++) await sleep(100);
  return mine();
}

/** Every byte the receiver accepted, for the leak scans. */
export function wireBytes(suite: Suite): string {
  return Buffer.concat(suite.receiver.requests.map((r) => r.body)).toString('latin1');
}

/** A unique marker, for values the leak scans look for. */
export function marker(label: string): string {
  return `${label}-${randomBytes(6).toString('hex')}`;
}
