/**
 * Test harness for the Claude Code adapter: real child processes of `node bin/continuity.js`
 * fed hook payloads shaped like Claude Code's documented ones, a temporary project with a task
 * record, a private state directory and ledger, and a real OTLP/HTTP receiver on 127.0.0.1.
 */

import { spawn } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { atTerminal, withApproverKey } from '../support/human.js';
import { type OtlpReceiver, startOtlpReceiver, TRACES_PATH } from '../support/otlp-receiver.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const BIN = join(ROOT, 'bin', 'continuity.js');

/** What a child process did. */
export interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `node bin/continuity.js ...args` without blocking the test's event loop (the receiver lives there). */
export function runCli(
  args: string[],
  options: { input?: string | Buffer; env: NodeJS.ProcessEnv; cwd: string },
): Promise<Run> {
  // An approval is the human's: signed with the approver key, its passphrase typed at a terminal.
  if (args[0] === 'approve') {
    return atTerminal(process.execPath, [BIN, ...args], {
      env: withApproverKey(options.env, dirname(options.cwd)),
      cwd: options.cwd,
    });
  }
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: options.cwd,
      env: options.env,
      timeout: 30_000,
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
    child.stdin.on('error', () => {}); // a child that exits early must not fail the test on EPIPE
    child.stdin.end(options.input ?? '');
  });
}

/** A running OTLP/HTTP receiver (the shared test receiver). */
export type Receiver = OtlpReceiver;

/**
 * Starts the shared OTLP/HTTP receiver on 127.0.0.1 with a free port, taking trace requests only
 * (the hooks and recording commands send no metrics; anything else is an error).
 */
export function startReceiver(): Promise<Receiver> {
  return startOtlpReceiver({ paths: [TRACES_PATH] });
}

/** A temporary world: project directory, state directory, ledger. */
export interface World {
  root: string;
  project: string;
  state: string;
  ledger: string;
  /** The environment of hook processes (as Claude Code would give them, plus CONTINUITY_*). */
  env: NodeJS.ProcessEnv;
  /** The environment of the agent's Bash tool and of the human's terminal (no CLAUDE_PROJECT_DIR). */
  shellEnv: NodeJS.ProcessEnv;
  dispose(): void;
}

/** Creates a world; `endpoint` is the OTLP receiver (or a closed port). */
export function makeWorld(endpoint: string, extraEnv: NodeJS.ProcessEnv = {}): World {
  const root = mkdtempSync(join(tmpdir(), 'cc-adapter-'));
  const project = join(root, 'project');
  const state = join(root, 'state');
  mkdirSync(project, { recursive: true });
  // `continuity` on PATH as `npm link` puts it: a link to this checkout's bin.
  const bin = join(root, 'bin');
  mkdirSync(bin);
  symlinkSync(BIN, join(bin, 'continuity'));
  const base: NodeJS.ProcessEnv = {};
  // Nothing from the developer's environment leaks into the children: no OTEL_*, no CONTINUITY_*.
  for (const k of ['PATH', 'LANG', 'TZ', 'SYSTEMROOT'])
    if (process.env[k] !== undefined) base[k] = process.env[k];
  base.PATH = `${bin}:${base.PATH ?? ''}`;
  const common = {
    ...base,
    HOME: join(root, 'home'),
    XDG_STATE_HOME: join(root, 'xdg'),
    CONTINUITY_STATE_DIR: state,
    CONTINUITY_LEDGER: join(state, 'ledger.jsonl'),
    CONTINUITY_OTLP_ENDPOINT: endpoint,
    CONTINUITY_OTLP_TIMEOUT_MS: '2000',
    ...extraEnv,
  };
  return {
    root,
    project,
    state,
    ledger: join(state, 'ledger.jsonl'),
    env: { ...common, CLAUDE_PROJECT_DIR: project },
    shellEnv: common,
    dispose: () => rmSync(root, { recursive: true, force: true }),
  };
}

/** Writes the task record with these decision values. */
export function writeTaskRecord(
  world: World,
  decisions: Record<string, { value: unknown; sensitive?: boolean }>,
): void {
  mkdirSync(join(world.project, '.continuity'), { recursive: true });
  writeFileSync(
    join(world.project, '.continuity', 'task.json'),
    JSON.stringify({ task: 'test-task', decisions }, null, 2),
  );
}

/** Builds a hook payload with the documented common fields. */
export function payload(
  world: World,
  sessionId: string,
  event: string,
  extra: Record<string, unknown> = {},
): string {
  return JSON.stringify({
    session_id: sessionId,
    transcript_path: join(world.root, 'home', '.claude', 'projects', 'p', `${sessionId}.jsonl`),
    cwd: world.project,
    permission_mode: 'default',
    hook_event_name: event,
    ...extra,
  });
}

/** Runs one hook event through `continuity hook claude-code`. */
export function hook(
  world: World,
  sessionId: string,
  event: string,
  extra: Record<string, unknown> = {},
): Promise<Run> {
  return runCli(['hook', 'claude-code'], {
    input: payload(world, sessionId, event, extra),
    env: world.env,
    cwd: world.project,
  });
}

/**
 * One compaction in the order Claude Code 2.1.328 really sends it: PreCompact →
 * SessionStart(compact) → PostCompact. Returns the three runs.
 */
export async function compact(
  world: World,
  sessionId: string,
  trigger: 'manual' | 'auto' = 'auto',
  extra: Record<string, unknown> = {},
): Promise<{ pre: Run; start: Run; post: Run }> {
  const pre = await hook(world, sessionId, 'PreCompact', { trigger, custom_instructions: null, ...extra });
  const start = await hook(world, sessionId, 'SessionStart', {
    source: 'compact',
    model: 'claude-opus-5-5',
    ...extra,
  });
  const post = await hook(world, sessionId, 'PostCompact', { trigger, compact_summary: 'S', ...extra });
  return { pre, start, post };
}

/** The gate's answer to a PreToolUse call: `allow` (no output), `deny` or `ask`, and the reason. */
export async function gate(
  world: World,
  sessionId: string,
  tool: string,
  input: Record<string, unknown>,
): Promise<{ decision: 'allow' | 'deny' | 'ask'; reason: string; run: Run }> {
  const run = await hook(world, sessionId, 'PreToolUse', {
    tool_name: tool,
    tool_input: input,
    tool_use_id: 'toolu_01',
  });
  if (run.stdout.trim() === '') return { decision: 'allow', reason: '', run };
  const out = JSON.parse(run.stdout) as {
    hookSpecificOutput: { permissionDecision: 'deny' | 'ask'; permissionDecisionReason: string };
  };
  return {
    decision: out.hookSpecificOutput.permissionDecision,
    reason: out.hookSpecificOutput.permissionDecisionReason,
    run,
  };
}

/** Every byte the adapter wrote to disk under the state directory (ledger, caches, spool). */
export function stateBytes(world: World): Buffer {
  const out: Buffer[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(readFileSync(p));
    }
  };
  walk(world.state);
  return Buffer.concat(out);
}

/** Files and directories under `dir` whose mode lets anyone but the owner in. */
export function widePermissions(dir: string): string[] {
  const bad: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      const st = statSync(p);
      if ((st.mode & 0o077) !== 0) bad.push(p);
      if (st.isDirectory()) walk(p);
    }
  };
  if ((statSync(dir).mode & 0o077) !== 0) bad.push(dir);
  walk(dir);
  return bad;
}

/** The ledger's records. */
export function ledgerRecords(world: World): Array<Record<string, unknown>> {
  return readFileSync(world.ledger, 'utf8')
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** The task record most scenarios use: the article's three decisions, as the task record holds them. */
export const PAYMENTS_DECISIONS = {
  scope: { value: { repository: 'acme/payments', paths: ['services/ledger'] } },
  approval_boundary: { value: { requires_human: ['deploy', 'schema_migration'] } },
  acceptance_test: { value: { command: 'npm test -- ledger', must_pass: true } },
};

/** {@link PAYMENTS_DECISIONS} as a faithful restatement: name → value. */
export const PAYMENTS_VALUES: Record<string, unknown> = Object.fromEntries(
  Object.entries(PAYMENTS_DECISIONS).map(([n, d]) => [n, d.value]),
);
