/**
 * The end-to-end harness for the real Qwen Code binary: the pinned `@qwen-code/qwen-code` from the
 * peer cache run by Node 22 (Qwen needs ≥ 22; also from the peer cache), our scripted OpenAI
 * chat-completions server (test/support/openai-chat-server.ts) as its provider, and a private world
 * per scenario: HOME (with Qwen's user settings: the provider, a context window that compaction can
 * be driven against), a project set up by the real `continuity init qwen-code --command "node
 * <repo>/bin/continuity.js"`, a task record, a state directory with the ledger and keys, and
 * `continuity` on the agent's PATH.
 *
 * Qwen Code runs headless (`-p`) with `--yolo`: every tool runs without a prompt, so what stops a
 * write is the continuity gate's answer to the PreToolUse hook and nothing else.
 *
 * The world's runtime-neutral part, and what the scenarios read of the evidence, are in
 * test/support/agent-e2e.ts. Everything listens on 127.0.0.1 with a free port; every file lives under `os.tmpdir()`.
 */
import { dirname } from 'node:path';
import { type AgentWorld, agentWorld, type ResumedTurn, resumedTurnOf } from '../support/agent-e2e.js';
import {
  type ChatServer,
  messageText,
  type RecordedRequest,
  type ReplyStep,
  type Step,
  startChatServer,
} from '../support/openai-chat-server.js';
import { type OtlpReceiver, startOtlpReceiver } from '../support/otlp-receiver.js';
import { ensureNpmPeer, PEERS } from '../support/peers.js';
import { type Run, run, slots } from '../support/processes.js';

/** How long the peer installs may take on a fresh machine. */
export const INSTALL_TIMEOUT_MS = 15 * 60_000;
/** A ceiling for one scenario (several runs of the binary); never a timing assertion. */
export const SCENARIO_TIMEOUT_MS = 300_000;
/**
 * The context window the user settings give the model, and the usage that crosses Qwen's
 * automatic threshold (`context.autoCompactThreshold` 0.5 of 200 000 tokens).
 */
export const CONTEXT_WINDOW = 200_000;
export const OVER_THRESHOLD = { prompt_tokens: 150_000, completion_tokens: 10 };

/** The binaries every scenario of a file shares, and the receiver of the spans. */
export interface Suite {
  node22: string;
  qwen: string;
  receiver: OtlpReceiver;
}

/** Installs Qwen Code and Node 22 when missing and starts the OTLP receiver. */
export async function startSuite(): Promise<Suite> {
  const [node, qwen] = await Promise.all([ensureNpmPeer(PEERS.node22), ensureNpmPeer(PEERS.qwenCode)]);
  return { node22: node.bin, qwen: qwen.bin, receiver: await startOtlpReceiver() };
}

// Runs of the binary at once (2 shared cores): a saturated machine would time hooks out.
const withSlot = slots(Number(process.env.CONTINUITY_E2E_CONCURRENCY) || 2);

/** One scenario's world. */
export interface World extends AgentWorld {
  /** Runs `qwen -p PROMPT --yolo` in the project against `server` (`--continue` resumes the last session). */
  qwen(server: ChatServer, prompt: string, options?: { resume?: boolean }): Promise<Run>;
}

/**
 * Creates a world: directories, keys, Qwen's user settings, `continuity init qwen-code`, the task
 * record. `projectInstall`: agent-continuity installed in the project (a copy, as npm installs it)
 * and not on PATH, init run from it without `--command`: the hooks run
 * `"$QWEN_PROJECT_DIR"/node_modules/.bin/continuity`.
 */
export async function makeWorld(suite: Suite, projectInstall = false): Promise<World> {
  const w = await agentWorld({
    name: 'qwen-e2e',
    otlpEndpoint: suite.receiver.endpoint,
    inits: ['qwen-code'],
    // The model's context window and the automatic threshold.
    settings: {
      path: '.qwen/settings.json',
      json: {
        context: { autoCompactThreshold: 0.5 },
        model: { generationConfig: { contextWindowSize: CONTEXT_WINDOW } },
      },
    },
    path: [dirname(suite.node22)],
    env: { OPENAI_API_KEY: 'test', OPENAI_MODEL: 'scripted-model', QWEN_CODE_SUPPRESS_YOLO_WARNING: '1' },
    ...(projectInstall && { launcher: 'project' as const }),
  });
  return {
    ...w,
    qwen: (server, prompt, { resume = false } = {}) =>
      withSlot(() =>
        run(
          suite.node22,
          [suite.qwen, ...(resume ? ['--continue'] : []), '-p', prompt, '--yolo', '--auth-type', 'openai'],
          { env: { ...w.env, OPENAI_BASE_URL: server.url }, cwd: w.project, timeoutMs: 180_000 },
        ),
      ),
  };
}

/** A resumed run on scripted calls, then a final answer (`--continue`). */
export const resumedTurn: ResumedTurn<World> = resumedTurnOf<World, ChatServer, Step>({
  start: (steps) => startChatServer({ steps }),
  resume: (w, server, prompt) => w.qwen(server, prompt, { resume: true }),
  resultOf,
  shell,
  writeFile,
  restate,
  done: { text: 'Done.' },
});

// ── Script steps ────────────────────────────────────────────────────────────────────────────────

/** A request's whole text: every message, as the model reads it. */
export function requestText(request: RecordedRequest): string {
  return (request.body?.messages ?? []).map(messageText).join('\n');
}

/** A shell command (Qwen's `run_shell_command`). */
export function shell(id: string, command: string, usage?: ReplyStep['usage']): ReplyStep {
  return {
    toolCalls: [{ name: 'run_shell_command', id, args: { command, description: id } }],
    ...(usage ? { usage } : {}),
  };
}

/** Qwen's `write_file` (absolute path). */
export function writeFile(id: string, path: string, content: string): ReplyStep {
  return { toolCalls: [{ name: 'write_file', id, args: { file_path: path, content } }] };
}

/** Qwen's `read_file`: a tool the gate does not check, to take the session one request further. */
export function readFile(id: string, path: string): ReplyStep {
  return { toolCalls: [{ name: 'read_file', id, args: { file_path: path } }] };
}

/**
 * The agent restating its decisions: a shell call running the command the context added after
 * compaction printed (found in the request, so the step fails when that context did not reach
 * the model), one `--decision 'NAME=JSON'` per value of `values`. Qwen's form has no
 * here-document: Qwen rewrites `<` and `>` in added context.
 */
export function restate(id: string, values: Record<string, unknown>): Step {
  return (request) => {
    const m = /^(.*\bobserve --session \S+) --decision '/m.exec(requestText(request));
    if (!m)
      throw new Error(
        'no restatement command in the request: the compaction context did not reach the model',
      );
    const flags = Object.entries(values).map(([k, v]) => `--decision '${k}=${JSON.stringify(v)}'`);
    return shell(id, `${m[1]} ${flags.join(' ')}`);
  };
}

/** What the model was told as the result of tool call `id` (the first request that carries it). */
export function resultOf(server: ChatServer, id: string): string | undefined {
  for (const r of server.requests) {
    for (const m of r.body?.messages ?? []) {
      if (m.role === 'tool' && m.tool_call_id === id) return messageText(m);
    }
  }
  return undefined;
}

export { type ChatServer, startChatServer };
