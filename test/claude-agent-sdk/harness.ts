/**
 * The harness for the Agent SDK adapter on the real package: `@anthropic-ai/claude-agent-sdk`
 * 0.3.328 (with its peers, pinned in test/support/peers.ts) installed into the peer cache outside
 * the repository and imported from there by this test process, which plays the application: it
 * registers its own tracer provider (a `ContinuityProcessor` and an in-memory exporter), creates
 * the adapter with the SDK's `createSdkMcpServer` and `tool`, and runs `query()` against our
 * scripted Anthropic Messages server on 127.0.0.1 (test/support/anthropic-server.ts). The SDK
 * spawns its bundled Claude Code 2.1.328 binary; our callbacks run here, in process.
 *
 * Each scenario gets a private world: HOME and CLAUDE_CONFIG_DIR, a project with its task record,
 * a state directory with the ledger, a digest key and a chain key, `continuity` on the PATH of the
 * agent's Bash tool (as `npm link` puts it there), and an OTLP receiver for what goes over OTLP
 * (the agent's own `continuity observe`, another process).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { trace } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll } from 'vitest';
import {
  type AgentSdkContinuity,
  createAgentSdkContinuity,
  RESTATE_TOOL_NAME,
} from '../../src/adapters/claude-agent-sdk/index.js';
import { ContinuityProcessor } from '../../src/otel/processor.js';
import { ATTR_SESSION_ID } from '../../src/otel/semconv.js';
import {
  type AnthropicServer,
  type MessagesBody,
  requestText,
  type Step,
  startAnthropicServer,
  type ToolCall,
  type ToolResult,
  toolResult,
} from '../support/anthropic-server.js';
import { type OtlpReceiver, startOtlpReceiver, TRACES_PATH } from '../support/otlp-receiver.js';
import { claudeAgentSdkPeer, ensureNpmPeer, type NpmPeer } from '../support/peers.js';
import { cleanEnv, type Run, run, slots } from '../support/processes.js';
import { marker, type TaskDecision } from '../support/task.js';
import { BIN, continuityCli, evidenceDirs, type WorldFiles, worldFiles } from '../support/world.js';

export { BIN, marker, run, type TaskDecision };

// Scenarios run concurrently; this bounds the processes of the binary at once (2 shared cores).
const withSlot = slots();

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** How long a peer install may take (about 420 MB on a fresh machine). */
export const INSTALL_TIMEOUT_MS = 15 * 60_000;
/** A ceiling for one scenario (several queries, a process of the binary each); never a timing assertion. */
export const SCENARIO_TIMEOUT_MS = 240_000;
/** The bundled binary of the platform package (the SDK finds it itself; checked so a miss says why). */
const BINARY = 'node_modules/@anthropic-ai/claude-agent-sdk-linux-x64/claude';

// ── The SDK, as the application imports it ─────────────────────────────────────────────────────

/** A message of the query's stream (the fields the tests read). */
export interface SdkMessage {
  type: string;
  subtype?: string;
  session_id?: string;
  compact_metadata?: { trigger: string; pre_tokens: number; post_tokens?: number };
  result?: string;
  is_error?: boolean;
  permission_denials?: Array<{ tool_name: string; tool_use_id: string }>;
  [key: string]: unknown;
}

/** A running query: its messages, and its control requests the tests use. */
export interface SdkQuery extends AsyncIterable<SdkMessage> {
  interrupt(): Promise<unknown>;
}

/** The SDK's exports the tests use, loosely typed (the package is not a dependency of this repository). */
export interface AgentSdk {
  query(params: { prompt: string | AsyncIterable<unknown>; options?: Record<string, unknown> }): SdkQuery;
  createSdkMcpServer(options: { name: string; version?: string; tools?: never[] }): unknown;
  // biome-ignore lint/suspicious/noExplicitAny: the SDK's generic tool() signature.
  tool: any;
}

/** What every scenario of a test file shares: the SDK, the application's tracer provider, the receiver. */
export interface Suite {
  sdk: AgentSdk;
  /** The installed SDK's version (from its package.json). */
  version: string;
  /** Every span the application's provider ended, through the ContinuityProcessor. */
  exporter: InMemorySpanExporter;
  /** Where OTLP goes (the agent's `continuity observe`; the adapter when no provider is registered). */
  receiver: OtlpReceiver;
}

/**
 * Registers the file's suite: the peer installed when missing (the long timeout is for a first
 * install), the SDK imported from the cache, the application's tracer provider registered
 * globally, the receiver started. Returns its getter.
 */
export function useSuite(options: { registerProvider?: boolean; peer?: NpmPeer } = {}): () => Suite {
  let suite: Suite | undefined;
  let provider: BasicTracerProvider | undefined;
  beforeAll(async () => {
    const peer = options.peer ?? claudeAgentSdkPeer();
    const { dir, bin } = await ensureNpmPeer(peer);
    if (!existsSync(join(dir, BINARY))) {
      throw new Error(
        `the SDK's Claude Code binary is not in ${peer.id} (${BINARY}): this suite runs on linux-x64 with glibc`,
      );
    }
    const sdk = (await import(pathToFileURL(bin).href)) as AgentSdk;
    const version = (
      JSON.parse(readFileSync(join(dirname(bin), 'package.json'), 'utf8')) as { version: string }
    ).version;
    const exporter = new InMemorySpanExporter();
    if (options.registerProvider !== false) {
      provider = new BasicTracerProvider({
        spanProcessors: [new ContinuityProcessor(), new SimpleSpanProcessor(exporter)],
      });
      trace.setGlobalTracerProvider(provider);
    }
    const receiver = await startOtlpReceiver({ paths: [TRACES_PATH] });
    suite = { sdk, version, exporter, receiver };
  }, INSTALL_TIMEOUT_MS);
  afterAll(async () => {
    await provider?.shutdown();
    trace.disable();
    await suite?.receiver.close();
  });
  return () => {
    if (!suite) throw new Error('the Agent SDK suite did not start (see the beforeAll error)');
    return suite;
  };
}

// ── A world per scenario ────────────────────────────────────────────────────────────────────────

/** What one `query()` did. */
export interface QueryRun {
  messages: SdkMessage[];
  /** The last `result` message. */
  result: SdkMessage | undefined;
  sessionId: string;
  /** The tool calls the SDK reports as denied (`result.permission_denials`). */
  denied: string[];
  /** The `compact_boundary` messages of the stream. */
  boundaries: SdkMessage[];
}

/** A continuity CLI run. */
export type CliRun = Run;

/** One scenario's world. */
export interface World extends WorldFiles {
  root: string;
  project: string;
  state: string;
  ledger: string;
  /** The query's `env`: the binary's, its Bash tool's (and so the agent's `continuity observe`). */
  env: NodeJS.ProcessEnv;
  /** A human's terminal: the same state and keys, nothing of the agent's session. */
  humanEnv: NodeJS.ProcessEnv;
  /** The adapter, as the application creates it. */
  continuity: AgentSdkContinuity;
  /** The adapter's warnings (its `onWarning`). */
  warnings: string[];
  /** Runs one `query()` in the project against `server`, its stream read through the adapter. */
  query(
    server: AnthropicServer,
    prompt: string | AsyncIterable<unknown>,
    options?: Record<string, unknown>,
    /** Sees each message as it arrives (e.g. to send the next turn of a streaming input). */
    observe?: (m: SdkMessage, q: SdkQuery) => void,
  ): Promise<QueryRun>;
  /** Runs `continuity …` in the project (as the human, unless `env` says otherwise). */
  cli(args: string[], input?: string, env?: NodeJS.ProcessEnv): Promise<CliRun>;
}

/** Options of {@link makeWorld}. */
export interface WorldOptions {
  decisions: Record<string, TaskDecision>;
  /** A CLAUDE.md for the project (so InstructionsLoaded fires). */
  claudeMd?: string;
  /** Give the adapter the SDK's MCP functions (default true). */
  mcp?: boolean;
}

/** Creates a world: directories, keys, the task record, the adapter. */
export function makeWorld(suite: Suite, options: WorldOptions): World {
  const root = mkdtempSync(join(tmpdir(), 'asdk-e2e-'));
  const project = join(root, 'project');
  const home = join(root, 'home');
  for (const d of [project, home, join(project, '.continuity')])
    mkdirSync(d, { recursive: true, mode: 0o700 });
  const { state, ledger, binDir, continuityEnv } = evidenceDirs(root, suite.receiver.endpoint);
  writeFileSync(
    join(project, '.continuity', 'task.json'),
    `${JSON.stringify({ task: 'sdk-e2e-task', decisions: options.decisions }, null, 2)}\n`,
    { mode: 0o600 },
  );
  if (options.claudeMd !== undefined) writeFileSync(join(project, 'CLAUDE.md'), options.claudeMd);

  const env = cleanEnv({
    PATH: `${binDir}:${process.env.PATH ?? ''}`,
    HOME: home,
    CLAUDE_CONFIG_DIR: join(home, '.claude'),
    ANTHROPIC_API_KEY: 'test',
    DISABLE_TELEMETRY: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    ...continuityEnv,
  });
  const humanEnv = cleanEnv({ PATH: env.PATH, HOME: join(root, 'human'), ...continuityEnv });
  const warnings: string[] = [];
  const continuity = createAgentSdkContinuity({
    projectDir: project,
    env,
    ...(options.mcp !== false
      ? { sdk: { createSdkMcpServer: suite.sdk.createSdkMcpServer, tool: suite.sdk.tool } }
      : {}),
    onWarning: (l) => warnings.push(l),
  });

  return {
    root,
    project,
    state,
    ledger,
    env,
    humanEnv,
    continuity,
    warnings,
    query: (server, prompt, extra = {}, observe) =>
      withSlot(async () => {
        const stderr: string[] = [];
        const q = suite.sdk.query({
          prompt,
          options: continuity.options({
            cwd: project,
            env: { ...env, ANTHROPIC_BASE_URL: server.url },
            permissionMode: 'default',
            allowedTools: ['Write', 'Edit', 'Bash'],
            model: 'claude-sonnet-4-5',
            stderr: (s: string) => stderr.push(s),
            ...extra,
          }),
        });
        const messages: SdkMessage[] = [];
        for await (const m of continuity.watch(q)) {
          messages.push(m);
          observe?.(m, q);
        }
        const result = messages.filter((m) => m.type === 'result').at(-1);
        const sessionId = messages.find((m) => typeof m.session_id === 'string')?.session_id ?? '';
        return {
          messages,
          result,
          sessionId,
          denied: (result?.permission_denials ?? []).map((d) => d.tool_use_id),
          boundaries: messages.filter((m) => m.type === 'system' && m.subtype === 'compact_boundary'),
        };
      }),
    cli: continuityCli(project, humanEnv),
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

/**
 * The agent restating through the in-process MCP tool. The step fails unless the request carries
 * the tool's name as the compaction context or the gate's reason offered it (so it fails when our
 * words did not reach the model).
 */
export function restateWithTool(id: string, values: Record<string, unknown>): Step {
  return ({ request }) => {
    if (!requestText(request.body).includes(`restate with the tool ${RESTATE_TOOL_NAME}`))
      throw new Error('no restatement tool in the request: the compaction context did not reach the model');
    return { tool: RESTATE_TOOL_NAME, id, input: { decisions: values } };
  };
}

/** The restatement command the context added after compaction prints: its first line. */
export function restatementCommand(body: MessagesBody | undefined): string | undefined {
  return /^(.*\bobserve --session \S+ --decisions - <<'EOF')$/m.exec(requestText(body))?.[1];
}

/** The agent restating in its Bash tool, with exactly the command the context printed. */
export function restateWithCli(id: string, values: Record<string, unknown>): Step {
  return ({ request }) => {
    const head = restatementCommand(request.body);
    if (!head)
      throw new Error(
        'no restatement command in the request: the compaction context did not reach the model',
      );
    return bash(id, `${head}\n${JSON.stringify(values)}\nEOF`);
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

// ── Spans ───────────────────────────────────────────────────────────────────────────────────────

/** The spans the application's provider ended for `sessionId`. */
export function appSpans(suite: Suite, sessionId: string): ReadableSpan[] {
  return suite.exporter.getFinishedSpans().filter((s) => s.attributes[ATTR_SESSION_ID] === sessionId);
}

export { startAnthropicServer };

/**
 * A streaming input (`AsyncIterable<SDKUserMessage>`) that sends each prompt once the previous
 * turn's `result` arrived; pass {@link StreamingInput.observe} to the query.
 */
export interface StreamingInput {
  input: AsyncIterable<unknown>;
  observe: (m: SdkMessage) => void;
}

/** The turns of one query with streaming input, in order. */
export function streamingInput(prompts: string[]): StreamingInput {
  let release: (() => void) | undefined;
  async function* input() {
    for (const content of prompts) {
      const done = new Promise<void>((r) => {
        release = r;
      });
      yield { type: 'user', message: { role: 'user', content }, parent_tool_use_id: null };
      await done;
    }
  }
  return {
    input: input(),
    observe: (m) => {
      if (m.type === 'result') release?.();
    },
  };
}
