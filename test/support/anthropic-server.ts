/**
 * A scripted Anthropic Messages API server for the end-to-end tests of the real Claude Code
 * binary: a real HTTP server on 127.0.0.1 with a free port (node:http only), which the binary
 * reaches through `ANTHROPIC_BASE_URL=<url> ANTHROPIC_API_KEY=test` (with `DISABLE_TELEMETRY=1`,
 * `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1` and a private `HOME` / `CLAUDE_CONFIG_DIR`).
 *
 * What it answers, as observed from Claude Code 2.1.328 (`/work/explore/cc/FINDINGS.md` §16):
 *
 * - **Turns** (`POST /v1/messages`, `stream: true`; the main loop and subagents alike) from
 *   `steps`, in order, one step per request: a text reply, one or more `tool_use` blocks, or both.
 *   A subagent's requests take the next steps, in the order the binary sends them. A step may be a
 *   function of the request (e.g. to run the command the request's context asks for).
 * - **A compaction's summarization request** (manual `/compact` and automatic), recognised by its
 *   last `user` message, whose last text block is Claude Code's compaction prompt ("CRITICAL:
 *   Respond with TEXT ONLY ... create a detailed summary of the conversation"); a `system`-role
 *   message may follow it. Answered with `summary` inside `<analysis>` / `<summary>` blocks (the
 *   binary asks once more when the reply has no `<summary>` block), never from `steps`.
 * - **Side requests**: any GET/HEAD (`HEAD /api/hello` when nonessential traffic is allowed) gets
 *   `200 {}`, `POST …/count_tokens` an estimate; any other path a 404.
 *
 * Streaming requests get the Messages API's server-sent events (`message_start`,
 * `content_block_start` / `content_block_delta` (`text_delta`, `input_json_delta`) /
 * `content_block_stop`, `message_delta` with the `stop_reason`, `message_stop`); other requests
 * the equivalent JSON message. Every request is recorded, parsed, in arrival order.
 *
 * Usage: every reply reports `usage` (the server's default, overridden by the step's). The binary
 * takes the context size from the latest reply (input + cache read + cache creation + output
 * tokens): with `--autocompact 100000` (effective window 80 000, threshold 67 000) a reply
 * reporting `input_tokens: 190_000` makes it compact before its next request, provided an
 * earlier assistant message exists to summarize (otherwise it fires `PreCompact` and gives up).
 *
 * The script never makes the binary retry: a step that throws, or a turn request once the steps
 * are used up, is recorded in `problems` and answered with a text that ends the turn (an HTTP
 * error would be retried with back-off for a long time). Tests assert `problems` is empty.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

// ── Script ────────────────────────────────────────────────────────────────────────────────────

/** The token counts a reply reports (the Messages API's `usage`). */
export interface Usage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

/** One tool call of a scripted reply: `{ tool: 'Write', input: { file_path, content } }`. */
export interface ToolCall {
  tool: string;
  input: Record<string, unknown>;
  /** The `tool_use` id (to find its result later). Default a fresh `toolu_…` id. */
  id?: string;
}

/** A scripted reply in full. */
export interface Reply {
  /** Text block(s), before any tool calls. */
  text?: string | string[];
  /** `tool_use` blocks, after the text; a reply with tool calls stops with `tool_use`. */
  tools?: ToolCall[];
  /** Overrides the server's default usage for this reply. */
  usage?: Partial<Usage>;
}

/** What a step computed from the request sees. */
export interface StepContext {
  request: RecordedRequest;
  /** This step's index in `steps` (0-based). */
  index: number;
}

/**
 * A step of the script: a text reply (`'done'`), one tool call, several tool calls, a full
 * {@link Reply}, or a function computing one of those from the request.
 */
export type Step = string | ToolCall | ToolCall[] | Reply | ((ctx: StepContext) => Step);

/** What a request was. */
export type RequestKind = 'turn' | 'summary' | 'count_tokens' | 'other';

/** A content block of a request message (the parts the tests read). */
export interface ContentBlock {
  type: string;
  text?: string;
  id?: string;
  name?: string;
  input?: unknown;
  content?: string | ContentBlock[];
  tool_use_id?: string;
  is_error?: boolean;
}

/** A message of a request body. */
export interface Message {
  role: string;
  content: string | ContentBlock[];
}

/** The parts of a Messages API request body the server reads. */
export interface MessagesBody {
  model?: string;
  max_tokens?: number;
  stream?: boolean;
  system?: string | Array<{ type: string; text?: string }>;
  messages?: Message[];
  tools?: Array<{ name: string }>;
}

/** One request as received. */
export interface RecordedRequest {
  /** Arrival order, from 0. */
  seq: number;
  method: string;
  /** Path without the query string, e.g. `/v1/messages`. */
  path: string;
  /** Selected headers (lower-case names; never the API key). */
  headers: Record<string, string>;
  /** The parsed JSON body (undefined when empty or not JSON). */
  body: MessagesBody | undefined;
  kind: RequestKind;
  /** For `turn` requests: the step index answered, -1 when the script was used up. */
  step?: number;
}

/** Options of {@link startAnthropicServer}. */
export interface AnthropicServerOptions {
  /** Replies to turn requests, in order. More can be added with {@link AnthropicServer.push}. */
  steps?: Step[];
  /** The answer to a summarization request (wrapped in `<summary>` unless it has one). */
  summary?: string;
  /** Usage reported by every reply unless its step overrides it. Default 100 in, 10 out. */
  usage?: Partial<Usage>;
}

/** A running server. */
export interface AnthropicServer {
  /** Base URL for `ANTHROPIC_BASE_URL`, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  /** Every request, in arrival order. */
  readonly requests: readonly RecordedRequest[];
  /** What went wrong in the script (a step that threw, a turn with no step left), in order. */
  readonly problems: readonly string[];
  /** The requests of one kind, in order. */
  requestsOf(kind: RequestKind): RecordedRequest[];
  /** Appends steps to the script (e.g. before the next run of the binary). */
  push(...steps: Step[]): void;
  /** How many steps have been answered. */
  readonly stepsUsed: number;
  close(): Promise<void>;
}

// ── Reading requests ──────────────────────────────────────────────────────────────────────────

/** The text of a message's content: text blocks and nested tool results, joined by newlines. */
export function contentText(content: string | ContentBlock[] | undefined): string {
  if (content === undefined) return '';
  if (typeof content === 'string') return content;
  const parts: string[] = [];
  for (const block of content) {
    if (typeof block.text === 'string') parts.push(block.text);
    else if (block.type === 'tool_result') parts.push(contentText(block.content));
  }
  return parts.join('\n');
}

/** Every text of a request: the system prompt and every message, joined by newlines. */
export function requestText(body: MessagesBody | undefined): string {
  const system = body?.system;
  const sys =
    system === undefined
      ? ''
      : typeof system === 'string'
        ? system
        : system.map((b) => b.text ?? '').join('\n');
  return [sys, ...(body?.messages ?? []).map((m) => contentText(m.content))].join('\n');
}

/** The last user message of a request body, if any. */
export function lastUserMessage(body: MessagesBody | undefined): Message | undefined {
  const messages = body?.messages ?? [];
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]!.role === 'user') return messages[i];
  return undefined;
}

/** The result the binary sent back for a tool call, found in a request's messages. */
export interface ToolResult {
  isError: boolean;
  text: string;
}

/** The result of tool call `id` in `body`, if the body carries it. */
export function toolResult(body: MessagesBody | undefined, id: string): ToolResult | undefined {
  for (const m of body?.messages ?? []) {
    if (typeof m.content === 'string') continue;
    for (const b of m.content) {
      if (b.type === 'tool_result' && b.tool_use_id === id)
        return { isError: b.is_error === true, text: contentText(b.content) };
    }
  }
  return undefined;
}

// Claude Code's compaction prompt, which ends the summarization request.
const SUMMARY_MARKERS = ['CRITICAL: Respond with TEXT ONLY', 'create a detailed summary of the conversation'];

/** Whether a body is a compaction's summarization request (the prompt ends its last user message). */
export function isSummaryRequest(body: MessagesBody | undefined): boolean {
  const last = contentText(lastUserMessage(body)?.content);
  return SUMMARY_MARKERS.some((m) => last.includes(m));
}

function classify(method: string, path: string, body: MessagesBody | undefined): RequestKind {
  if (method !== 'POST') return 'other';
  if (path.endsWith('/count_tokens')) return 'count_tokens';
  if (!path.endsWith('/v1/messages') || !Array.isArray(body?.messages)) return 'other';
  return isSummaryRequest(body) ? 'summary' : 'turn';
}

// ── Replies ───────────────────────────────────────────────────────────────────────────────────

const DEFAULT_USAGE: Usage = {
  input_tokens: 100,
  output_tokens: 10,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
};

type OutBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> };

interface Resolved {
  blocks: OutBlock[];
  stopReason: 'end_turn' | 'tool_use';
  usage: Usage;
}

function newId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}

function isToolCall(step: unknown): step is ToolCall {
  return typeof step === 'object' && step !== null && typeof (step as ToolCall).tool === 'string';
}

function toReply(step: Step, ctx: StepContext): Reply {
  if (typeof step === 'function') return toReply(step(ctx), ctx);
  if (typeof step === 'string') return { text: step };
  if (Array.isArray(step)) return { tools: step };
  if (isToolCall(step)) return { tools: [step] };
  return step;
}

function resolveReply(reply: Reply, defaults: Usage): Resolved {
  const blocks: OutBlock[] = [];
  const texts = reply.text === undefined ? [] : Array.isArray(reply.text) ? reply.text : [reply.text];
  for (const text of texts) blocks.push({ type: 'text', text });
  for (const call of reply.tools ?? [])
    blocks.push({ type: 'tool_use', id: call.id ?? newId('toolu'), name: call.tool, input: call.input });
  if (blocks.length === 0) blocks.push({ type: 'text', text: '' });
  return {
    blocks,
    stopReason: blocks.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn',
    usage: { ...defaults, ...reply.usage },
  };
}

/** The summary as the binary expects it: inside a `<summary>` block. */
export function summaryReply(text: string): string {
  if (/<summary>[\s\S]*<\/summary>/.test(text)) return text;
  return `<analysis>\nScripted analysis.\n</analysis>\n\n<summary>\n${text}\n</summary>`;
}

/** The server-sent events of a streamed reply, as `event:` / `data:` frames. */
function sseFrames(id: string, model: string, r: Resolved): string[] {
  const frames: string[] = [];
  const event = (type: string, data: Record<string, unknown>) =>
    frames.push(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  event('message_start', {
    message: {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...r.usage, output_tokens: 1 },
    },
  });
  r.blocks.forEach((block, index) => {
    // Each block's payload in two deltas, so the client's accumulation is exercised.
    const halves = (s: string) => [s.slice(0, Math.ceil(s.length / 2)), s.slice(Math.ceil(s.length / 2))];
    if (block.type === 'text') {
      event('content_block_start', { index, content_block: { type: 'text', text: '' } });
      for (const text of halves(block.text))
        if (text) event('content_block_delta', { index, delta: { type: 'text_delta', text } });
    } else {
      event('content_block_start', {
        index,
        content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} },
      });
      for (const partial_json of halves(JSON.stringify(block.input)))
        if (partial_json)
          event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json } });
    }
    event('content_block_stop', { index });
  });
  event('message_delta', {
    delta: { stop_reason: r.stopReason, stop_sequence: null },
    usage: { output_tokens: r.usage.output_tokens },
  });
  event('message_stop', {});
  return frames;
}

// ── Server ────────────────────────────────────────────────────────────────────────────────────

const KEPT_HEADERS = ['anthropic-version', 'user-agent', 'x-app', 'x-claude-code-session-id'];

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** Starts the server on 127.0.0.1 with a free port; resolves once it listens. */
export async function startAnthropicServer(options: AnthropicServerOptions = {}): Promise<AnthropicServer> {
  const steps: Step[] = [...(options.steps ?? [])];
  const usage: Usage = { ...DEFAULT_USAGE, ...options.usage };
  const requests: RecordedRequest[] = [];
  const problems: string[] = [];
  let next = 0;

  const turnReply = (rec: RecordedRequest): Reply => {
    if (next >= steps.length) {
      rec.step = -1;
      problems.push(`request ${rec.seq}: a turn with no scripted step left`);
      return { text: 'The script has no step left.' };
    }
    const index = next++;
    rec.step = index;
    try {
      return toReply(steps[index]!, { request: rec, index });
    } catch (e) {
      problems.push(`request ${rec.seq}, step ${index}: ${(e as Error).message}`);
      return { text: 'The scripted step failed.' };
    }
  };

  const answer = (res: ServerResponse, rec: RecordedRequest): void => {
    if (rec.kind === 'count_tokens') {
      sendJson(res, 200, {
        input_tokens: Math.max(1, Math.round(JSON.stringify(rec.body ?? {}).length / 4)),
      });
      return;
    }
    if (rec.kind === 'other') {
      if (rec.method === 'GET' || rec.method === 'HEAD') sendJson(res, 200, {});
      else sendJson(res, 404, { type: 'error', error: { type: 'not_found_error', message: rec.path } });
      return;
    }
    const reply =
      rec.kind === 'summary'
        ? { text: summaryReply(options.summary ?? 'Scripted summary.') }
        : turnReply(rec);
    const r = resolveReply(reply, usage);
    const id = newId('msg');
    const model = rec.body?.model ?? 'claude-scripted';
    if (rec.body?.stream !== true) {
      sendJson(res, 200, {
        id,
        type: 'message',
        role: 'assistant',
        model,
        content: r.blocks,
        stop_reason: r.stopReason,
        stop_sequence: null,
        usage: r.usage,
      });
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.end(sseFrames(id, model, r).join(''));
  };

  const server: Server = createServer((req, res) => {
    readBody(req)
      .then((raw) => {
        const path = new URL(req.url ?? '/', 'http://localhost').pathname;
        let body: MessagesBody | undefined;
        try {
          body = raw.length > 0 ? (JSON.parse(raw) as MessagesBody) : undefined;
        } catch {
          body = undefined;
        }
        const headers: Record<string, string> = {};
        for (const name of KEPT_HEADERS) {
          const v = req.headers[name];
          if (typeof v === 'string') headers[name] = v;
        }
        const method = req.method ?? 'GET';
        const rec: RecordedRequest = {
          seq: requests.length,
          method,
          path,
          headers,
          body,
          kind: classify(method, path, body),
        };
        requests.push(rec);
        answer(res, rec);
      })
      .catch((e: unknown) => {
        problems.push(`server: ${(e as Error).message}`);
        if (!res.headersSent)
          sendJson(res, 500, { type: 'error', error: { type: 'api_error', message: 'x' } });
        else res.destroy();
      });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    problems,
    requestsOf: (kind) => requests.filter((r) => r.kind === kind),
    push: (...more) => {
      steps.push(...more);
    },
    get stepsUsed() {
      return next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
