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
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll } from 'vitest';
import { PROJECT_BIN } from '../../src/adapters/core/project.js';
import {
  type AnthropicServer,
  type MessagesBody,
  requestText,
  type Step,
  type ToolCall,
  type ToolResult,
  toolResult,
} from '../support/anthropic-server.js';
import { receivedBytes, sessionSpans } from '../support/evidence.js';
import { suiteApproverPublicKey } from '../support/human.js';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../support/otlp-receiver.js';
import { claudeCodePeer, ensureNpmPeer, ensureSystemTools, type SystemTool } from '../support/peers.js';
import { cleanEnv, type Run, run, slots } from '../support/processes.js';
import { marker, type TaskDecision } from '../support/task.js';
import {
  BIN,
  continuityCli,
  evidenceDirs,
  linkPackageInto,
  type WorldFiles,
  worldFiles,
} from '../support/world.js';

export { BIN, marker, run, type TaskDecision };

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
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
      // The human's approver key (../support/human.ts): their approvals count here.
      'correlation:',
      `  approverKeys: [${JSON.stringify(suiteApproverPublicKey())}]`,
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
 * Installs the binary when missing (the pinned line, or the one `CONTINUITY_CLAUDE_CODE` names:
 * test/support/peers.ts `claudeCodePeer`) (and bubblewrap when init configures the sandbox),
 * starts the receiver and `continuity serve`.
 */
export async function startSuite(): Promise<Suite> {
  const { bin } = await ensureNpmPeer(claudeCodePeer());
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
const withSlot = slots(Number(process.env.CONTINUITY_E2E_CONCURRENCY) || 3);

// ── A world per scenario ────────────────────────────────────────────────────────────────────────

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
export type CliRun = Run;

/** One scenario's world. */
export interface World extends WorldFiles {
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
}

/** Options of {@link makeWorld}. */
export interface WorldOptions {
  decisions: Record<string, TaskDecision>;
  /** A CLAUDE.md for the project (so InstructionsLoaded fires). */
  claudeMd?: string;
  /** A world to share the project and state with (two sessions in one project). */
  sharedWith?: World;
  /**
   * The project as a teammate gets it: `continuity init claude-code` run (without `--command`) in
   * another checkout that has the package in its `node_modules` and not on PATH, its committed
   * files cloned with git, and the package installed in the clone as `npm install` puts it. The
   * hooks then run `"$CLAUDE_PROJECT_DIR"/node_modules/.bin/continuity`; `continuity` is not on
   * the binary's PATH.
   */
  clonedWithProjectInstall?: boolean;
}

/** Commits what `init` wrote in a checkout with the package installed, and clones it to `project` with the package installed again. */
async function initInCheckoutAndClone(
  root: string,
  project: string,
  env: NodeJS.ProcessEnv,
): Promise<string> {
  const origin = join(root, 'origin');
  mkdirSync(origin, { recursive: true });
  writeFileSync(join(origin, '.gitignore'), 'node_modules/\n');
  linkPackageInto(origin);
  const init = await run(join(origin, PROJECT_BIN), ['init', 'claude-code'], { env, cwd: origin });
  if (init.status !== 0) throw new Error(`continuity init claude-code failed: ${init.stderr}`);
  const git = async (args: string[], cwd: string) => {
    const r = await run('git', ['-c', 'user.name=e2e', '-c', 'user.email=e2e@localhost', ...args], {
      env,
      cwd,
    });
    if (r.status !== 0) throw new Error(`git ${args.join(' ')} failed: ${r.stderr}`);
  };
  await git(['init', '-q'], origin);
  await git(['add', '-A'], origin);
  await git(['commit', '-qm', 'continuity init claude-code'], origin);
  rmSync(project, { recursive: true, force: true });
  await git(['clone', '-q', origin, project], root);
  linkPackageInto(project);
  mkdirSync(join(project, '.continuity'), { mode: 0o700 });
  return init.stdout;
}

/** Creates a world: directories, keys, `continuity init claude-code`, the task record. */
export async function makeWorld(suite: Suite, options: WorldOptions): Promise<World> {
  const shared = options.sharedWith;
  const root = mkdtempSync(join(tmpdir(), 'cc-e2e-'));
  const project = shared?.project ?? join(root, 'project');
  for (const d of [project, join(root, 'home'), join(root, 'config')])
    mkdirSync(d, { recursive: true, mode: 0o700 });
  const { state, ledger, keys, binDir, continuityEnv } = evidenceDirs(root, suite.otlpEndpoint, shared);
  const cloned = options.clonedWithProjectInstall === true && !shared;
  const env = cleanEnv({
    PATH: cloned ? (process.env.PATH ?? '') : `${binDir}:${process.env.PATH ?? ''}`,
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

  const cli = continuityCli(project, humanEnv);

  let initOutput = shared?.initOutput ?? '';
  if (cloned) initOutput = await initInCheckoutAndClone(root, project, env);
  else if (!shared) {
    // The real init, as a user runs it in the project (with the environment the hooks will have).
    const init = await cli(['init', 'claude-code', '--command', LAUNCHER], undefined, env);
    if (init.status !== 0) throw new Error(`continuity init claude-code failed: ${init.stderr}`);
    initOutput = init.stdout;
  }
  if (!shared) {
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
    ...worldFiles(root, project, { state, ledger }),
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

/** The restatement tool as the model sees it (Claude Code's name for our MCP server's tool). */
export const RESTATE_TOOL = 'mcp__continuity__restate';

/**
 * The agent restating through the MCP tool: the session the compaction context named for the
 * tool (found in the request, so the step fails when the context did not offer the tool) and
 * `values` as the decisions. Fails too when the request does not list the tool among the
 * model's tools (the server was not started, or not approved).
 */
export function restateByTool(id: string, values: Record<string, unknown>): Step {
  return ({ request }) => {
    const m = new RegExp(`${RESTATE_TOOL} with \\{"session": "([^"]+)"`).exec(requestText(request.body));
    if (!m)
      throw new Error('no restate tool call in the request: the compaction context did not offer the tool');
    if (!(request.body?.tools ?? []).some((t) => t.name === RESTATE_TOOL))
      throw new Error(`the request does not list ${RESTATE_TOOL} among the tools`);
    return { tool: RESTATE_TOOL, id, input: { session: m[1]!, decisions: values } };
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

/**
 * Waits until the receiver holds spans of `sessionId` satisfying `done`, or gives up after a
 * generous bound (15 s: delivery goes through `continuity serve`), returning what arrived either way.
 */
export function spansOf(
  suite: Suite,
  sessionId: string,
  done: (spans: ReceivedSpan[]) => boolean,
): Promise<ReceivedSpan[]> {
  return sessionSpans(suite.receiver, sessionId, done, 150);
}

/** Every byte the receiver accepted, for the leak scans. */
export function wireBytes(suite: Suite): string {
  return receivedBytes(suite.receiver);
}
