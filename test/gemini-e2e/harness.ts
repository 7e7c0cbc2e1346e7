/**
 * The end-to-end harness for the real Gemini CLI: the pinned `@google/gemini-cli` bundle from the
 * peer cache run by this process's Node (it needs ≥ 20), our scripted Gemini API server
 * (test/support/gemini-server.ts) as its endpoint (`GOOGLE_GEMINI_BASE_URL`, an API key), and a
 * private world per scenario: HOME (with Gemini's user settings: API-key auth and the compression
 * threshold `model.compressionThreshold`), a project set up by the real `continuity init gemini
 * --command "node <repo>/bin/continuity.js"`, a task record, a state directory with the ledger and
 * keys, and `continuity` on the agent's PATH.
 *
 * Gemini runs headless (`-p`) with `--yolo`: every tool runs without a prompt, so what stops a
 * write is the continuity gate's answer to the BeforeTool hook and nothing else.
 *
 * The world's runtime-neutral part, and what the scenarios read of the evidence, are in
 * test/support/agent-e2e.ts. Everything listens on 127.0.0.1 with a free port; every file lives under `os.tmpdir()`.
 */
import { type AgentWorld, agentWorld, type ResumedTurn, resumedTurnOf } from '../support/agent-e2e.js';
import {
  type GeminiServer,
  type RecordedRequest,
  type ReplyStep,
  requestText,
  type Step,
  startGeminiServer,
} from '../support/gemini-server.js';
import { type OtlpReceiver, startOtlpReceiver } from '../support/otlp-receiver.js';
import { ensureNpmPeer, PEERS } from '../support/peers.js';
import { type Run, run, slots } from '../support/processes.js';

/** How long the peer install may take on a fresh machine. */
export const INSTALL_TIMEOUT_MS = 15 * 60_000;
/** A ceiling for one scenario (several runs of the binary); never a timing assertion. */
export const SCENARIO_TIMEOUT_MS = 300_000;
/** The model the runs name (its token limit is 1 048 576 in Gemini CLI 0.61). */
export const MODEL = 'gemini-2.5-flash';
/** A prompt size over `model.compressionThreshold` 0.5 of the model's limit. */
export const OVER_THRESHOLD = 800_000;

/** The binary every scenario of a file shares, and the receiver of the spans. */
export interface Suite {
  gemini: string;
  receiver: OtlpReceiver;
}

/** Installs Gemini CLI when missing and starts the OTLP receiver. */
export async function startSuite(): Promise<Suite> {
  const gemini = await ensureNpmPeer(PEERS.geminiCli);
  return { gemini: gemini.bin, receiver: await startOtlpReceiver() };
}

// Runs of the binary at once (2 shared cores): a saturated machine would time hooks out.
const withSlot = slots(Number(process.env.CONTINUITY_E2E_CONCURRENCY) || 2);

/** One scenario's world. */
export interface World extends AgentWorld {
  /** Runs `gemini -p PROMPT --yolo` in the project against `server` (`--resume latest` resumes the last session). */
  gemini(server: GeminiServer, prompt: string, options?: { resume?: boolean }): Promise<Run>;
}

/**
 * Creates a world: directories, keys, Gemini's user settings, `continuity init gemini`, the task
 * record. `projectInstall`: agent-continuity installed in the project (a copy, as npm installs it)
 * and not on PATH, init run from it without `--command`: the hooks run
 * `$GEMINI_PROJECT_DIR/node_modules/.bin/continuity`.
 */
export async function makeWorld(suite: Suite, projectInstall = false): Promise<World> {
  const w = await agentWorld({
    name: 'gemini-e2e',
    otlpEndpoint: suite.receiver.endpoint,
    inits: ['gemini'],
    // API-key auth and the compression threshold.
    settings: {
      path: '.gemini/settings.json',
      json: {
        model: { compressionThreshold: 0.5 },
        security: { auth: { selectedType: 'gemini-api-key' } },
      },
    },
    env: {
      GEMINI_API_KEY: 'test',
      // A headless run in a folder the user has not marked trusted.
      GEMINI_CLI_TRUST_WORKSPACE: 'true',
    },
    ...(projectInstall && { launcher: 'project' as const }),
  });
  return {
    ...w,
    gemini: (server, prompt, { resume = false } = {}) =>
      withSlot(() =>
        run(
          process.execPath,
          [suite.gemini, ...(resume ? ['--resume', 'latest'] : []), '-p', prompt, '--yolo', '-m', MODEL],
          { env: { ...w.env, GOOGLE_GEMINI_BASE_URL: server.url }, cwd: w.project, timeoutMs: 180_000 },
        ),
      ),
  };
}

/** A resumed run on scripted calls, then a final answer (`--resume latest`). */
export const resumedTurn: ResumedTurn<World> = resumedTurnOf<World, GeminiServer, Step>({
  start: (steps) => startGeminiServer({ steps }),
  resume: (w, server, prompt) => w.gemini(server, prompt, { resume: true }),
  resultOf,
  shell,
  writeFile,
  restate,
  done: { text: 'Done.' },
});

// ── Script steps ────────────────────────────────────────────────────────────────────────────────

/** A shell command (Gemini's `run_shell_command`). */
export function shell(id: string, command: string, promptTokens?: number): ReplyStep {
  return {
    calls: [{ name: 'run_shell_command', id, args: { command, description: id } }],
    ...(promptTokens ? { promptTokens } : {}),
  };
}

/** Gemini's `write_file` (absolute path). */
export function writeFile(id: string, path: string, content: string): ReplyStep {
  return { calls: [{ name: 'write_file', id, args: { file_path: path, content } }] };
}

/** Gemini's `read_file`: a tool the gate does not check, to take the session one request further. */
export function readFile(id: string, path: string, promptTokens?: number): ReplyStep {
  return {
    calls: [{ name: 'read_file', id, args: { file_path: path } }],
    ...(promptTokens ? { promptTokens } : {}),
  };
}

/**
 * The agent restating its decisions: a shell call running the command the restatement request
 * (or the gate's answer) printed, found in the request, so the step fails when neither reached
 * the model; one `--decision 'NAME=JSON'` per value of `values`.
 */
export function restate(id: string, values: Record<string, unknown>): Step {
  return (request) => {
    const m =
      /((?:node \S+\/continuity(?:\.js)?|continuity) observe --session [A-Za-z0-9-]+) --decision '/.exec(
        requestText(request),
      );
    if (!m)
      throw new Error('no restatement command in the request: neither the context nor the gate named it');
    const flags = Object.entries(values).map(([k, v]) => `--decision '${k}=${JSON.stringify(v)}'`);
    return shell(id, `${m[1]} ${flags.join(' ')}`);
  };
}

/** What the model was told as the result of call `id` (the first request that carries it). */
export function resultOf(server: GeminiServer, id: string): string | undefined {
  for (const r of server.requests) {
    for (const c of r.body?.contents ?? []) {
      for (const p of c.parts ?? []) {
        if (p.functionResponse?.id === id) return JSON.stringify(p.functionResponse.response ?? {});
      }
    }
  }
  return undefined;
}

/** The requests of one kind. */
export function requestsOf(server: GeminiServer, kind: RecordedRequest['kind']): RecordedRequest[] {
  return server.requests.filter((r) => r.kind === kind);
}

export { type GeminiServer, requestText, startGeminiServer };
