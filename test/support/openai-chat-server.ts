/**
 * A scripted OpenAI chat-completions server on 127.0.0.1 (a free port) that drives a real
 * OpenCode: configured with a provider `"npm": "@ai-sdk/openai-compatible"` whose
 * `options.baseURL` is {@link ChatServer.url}, OpenCode 1.18.33 sends every model call as
 * `POST {baseURL}/chat/completions` with `stream: true` and `stream_options.include_usage`
 * (measured: /work/explore/opencode/FINDINGS.md). The server answers from a script and records
 * every request for assertions:
 *
 * - title requests (first system message "You are a title generator…") → `title`;
 * - the compaction summarizer's request (no tools, the transcript in `<conversation>` tags, or a
 *   plugin prompt followed by "The following is the conversation history:", or LangChain's
 *   summarization prompt with its "Messages to summarize:" block, or Mastra's Observer or
 *   Reflector system prompt) → `summary`;
 * - every other request (the agent's steps) → the next of `steps`, then `fallback`.
 *
 * The stream is the real OpenAI chunk format: a role delta, text deltas, per tool call a delta
 * naming it and then its arguments in pieces, a finish delta, a usage chunk (which OpenCode turns
 * into the step's token counts, what automatic compaction compares with the model's limit), and
 * `data: [DONE]`. A request with `stream: false` (LangChain's `ChatOpenAI.invoke`, observed) gets the
 * same reply as one `chat.completion` JSON object.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Token usage reported in the final chunk (OpenAI's names). */
export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  /** Default `prompt_tokens + completion_tokens`. */
  total_tokens?: number;
}

/** One tool call the model makes. */
export interface ToolCall {
  /** OpenCode's tool id: `bash`, `write`, `edit`, `read`, … */
  name: string;
  /** The arguments, e.g. bash `{ command }`, write `{ filePath, content }` (paths absolute). */
  args: Record<string, unknown>;
  /** Default `call_<request index>_<i>`. */
  id?: string;
}

/** One scripted reply. */
export interface ReplyStep {
  /** Text streamed before any tool call. */
  text?: string;
  /** Tool calls (finish reason `tool_calls`). */
  toolCalls?: ToolCall[];
  /** Usage of this reply. Default the server's `usage`. */
  usage?: Usage;
}

/** An HTTP error instead of a stream (e.g. 400 `context_length_exceeded`). */
export interface ErrorStep {
  status: number;
  body: unknown;
}

/** A step: a reply, an error, or a function of the recorded request returning one. */
export type Step = ReplyStep | ErrorStep | ((request: RecordedRequest) => ReplyStep | ErrorStep);

/** What a request was taken for. */
export type RequestKind = 'title' | 'summary' | 'step' | 'fallback' | 'other';

/** A chat message as OpenCode sends it. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content?: string | Array<{ type: string; text?: string }> | null;
  tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

/** The request body OpenCode sends. */
export interface ChatRequestBody {
  model: string;
  messages: ChatMessage[];
  tools?: Array<{ type: 'function'; function: { name: string } }>;
  stream?: boolean;
  max_tokens?: number;
}

/** A request as the server recorded it. */
export interface RecordedRequest {
  /** 0-based arrival order. */
  index: number;
  url: string;
  headers: IncomingHttpHeaders;
  /** The parsed body (undefined when not JSON). */
  body: ChatRequestBody | undefined;
  kind: RequestKind;
  /** Index into `steps` when `kind` is `step`. */
  step?: number;
}

/** Options of {@link startChatServer}. */
export interface ChatServerOptions {
  /** The agent's replies, consumed in order by requests that are neither title nor summary. */
  steps: Step[];
  /** The summarizer's reply. Default a fixed summary. */
  summary?: string;
  /** The title. Default `Scripted session`. */
  title?: string;
  /** Usage of every reply without its own. Default 100 prompt, 10 completion. */
  usage?: Usage;
  /** Usage of the summary reply. Default `usage`. */
  summaryUsage?: Usage;
  /** How long the summary reply is held back (ms), e.g. so a session ends before its compaction does. Default 0. */
  summaryDelayMs?: number;
  /** The reply once `steps` are used up. Default `Done.` */
  fallback?: string;
  /**
   * Answer a request without `stream: true` with one JSON object, as OpenAI does (the AI SDK's
   * `generateText` omits `stream`, observed). Default false: such a request is streamed, as the
   * tests of OpenCode (which always streams) expect; `stream: false` is always answered in JSON.
   */
  jsonUnlessStreamed?: boolean;
}

/** A running server. */
export interface ChatServer {
  /** `http://127.0.0.1:<port>/v1`, for the provider's `options.baseURL`. */
  readonly url: string;
  /** Every request, in arrival order (live). */
  readonly requests: RecordedRequest[];
  /** How many `steps` were consumed. */
  readonly stepsUsed: number;
  close(): Promise<void>;
}

const DEFAULT_SUMMARY = '## Goal\nScripted session.\n\n## Progress\nThe scripted steps ran.\n';

/** The text of a chat message, whatever its content shape. */
export function messageText(message: ChatMessage | undefined): string {
  const c = message?.content;
  if (typeof c === 'string') return c;
  if (Array.isArray(c)) return c.map((p) => p.text ?? '').join('\n');
  return '';
}

/** The system messages of a request, as text. */
export function systemTexts(request: RecordedRequest): string[] {
  return (request.body?.messages ?? []).filter((m) => m.role === 'system').map(messageText);
}

/** The tool results a request carries, by tool call id (what the model reads after each call). */
export function toolResults(request: RecordedRequest): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of request.body?.messages ?? []) {
    if (m.role === 'tool' && m.tool_call_id) out.set(m.tool_call_id, messageText(m));
  }
  return out;
}

function isTitle(body: ChatRequestBody | undefined): boolean {
  const first = body?.messages?.[0];
  return first?.role === 'system' && messageText(first).startsWith('You are a title generator');
}

/**
 * Qwen Code 0.24's summarizer prompt starts so. Recorded: the first attempt sends it as the last
 * user message with the session's tools (to share the prompt cache); the second sends it as the
 * system prompt, no tools, and "…produce the <state_snapshot> XML." as the user message.
 */
export const QWEN_SUMMARY_PROMPT = 'You are the component that summarizes a conversation';

/** GitHub Copilot CLI 1.0's compaction request: a normal chat request whose last user message starts so. */
export const COPILOT_SUMMARY_PROMPT = 'Please create a detailed summary of the conversation so far.';

/** The start of Mastra's Observer and Reflector system prompts (observational memory, `@mastra/memory` 1.31.0). */
export const MASTRA_OBSERVER_PREFIX = 'You are the memory consciousness of an AI assistant.';

function isSummary(body: ChatRequestBody | undefined): boolean {
  if (!body || isTitle(body)) return false;
  const first = body.messages?.[0];
  const noTools = !body.tools || body.tools.length === 0;
  if (noTools && first?.role === 'system' && messageText(first).startsWith(MASTRA_OBSERVER_PREFIX))
    return true;
  const last = [...(body.messages ?? [])].reverse().find((m) => m.role === 'user');
  const text = messageText(last);
  const system = (body.messages ?? []).filter((m) => m.role === 'system').map(messageText);
  if (text.includes(QWEN_SUMMARY_PROMPT) || system.some((t) => t.includes(QWEN_SUMMARY_PROMPT))) return true;
  if (text.startsWith(COPILOT_SUMMARY_PROMPT)) return true;
  if (body.tools && body.tools.length > 0) return false;
  return (
    text.includes('<conversation>') ||
    text.includes('The following is the conversation history:') ||
    text.includes('Messages to summarize:')
  );
}

function pieces(text: string, size = 16): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function stream(res: ServerResponse, reply: ReplyStep, id: string, model: string, usage: Usage): void {
  const created = Math.floor(Date.now() / 1000);
  const calls = (reply.toolCalls ?? []).map((c, i) => ({ ...c, id: c.id ?? `call_${id}_${i}` }));
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const send = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    res.write(
      `data: ${JSON.stringify({ id: `chatcmpl-${id}`, object: 'chat.completion.chunk', created, model, choices, ...extra })}\n\n`,
    );
  send([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]);
  for (const p of pieces(reply.text ?? '')) send([{ index: 0, delta: { content: p }, finish_reason: null }]);
  calls.forEach((c, i) => {
    const named = { index: i, id: c.id, type: 'function', function: { name: c.name, arguments: '' } };
    send([{ index: 0, delta: { tool_calls: [named] }, finish_reason: null }]);
    for (const p of pieces(JSON.stringify(c.args))) {
      send([
        { index: 0, delta: { tool_calls: [{ index: i, function: { arguments: p } }] }, finish_reason: null },
      ]);
    }
  });
  send([{ index: 0, delta: {}, finish_reason: calls.length > 0 ? 'tool_calls' : 'stop' }]);
  const total = usage.total_tokens ?? usage.prompt_tokens + usage.completion_tokens;
  send([], { usage: { ...usage, total_tokens: total } });
  res.end('data: [DONE]\n\n');
}

function complete(res: ServerResponse, reply: ReplyStep, id: string, model: string, usage: Usage): void {
  const calls = (reply.toolCalls ?? []).map((c, i) => ({
    id: c.id ?? `call_${id}_${i}`,
    type: 'function',
    function: { name: c.name, arguments: JSON.stringify(c.args) },
  }));
  const total = usage.total_tokens ?? usage.prompt_tokens + usage.completion_tokens;
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({
      id: `chatcmpl-${id}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: reply.text ?? (calls.length > 0 ? null : ''),
            ...(calls.length > 0 ? { tool_calls: calls } : {}),
          },
          finish_reason: calls.length > 0 ? 'tool_calls' : 'stop',
        },
      ],
      usage: { ...usage, total_tokens: total },
    }),
  );
}

/** Starts a server on 127.0.0.1 with a free port. */
export async function startChatServer(options: ChatServerOptions): Promise<ChatServer> {
  const requests: RecordedRequest[] = [];
  const usage = options.usage ?? { prompt_tokens: 100, completion_tokens: 10 };
  let next = 0;
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const raw = await readBody(req);
    let body: ChatRequestBody | undefined;
    try {
      body = raw ? (JSON.parse(raw) as ChatRequestBody) : undefined;
    } catch {
      body = undefined;
    }
    const record: RecordedRequest = {
      index: requests.length,
      url: req.url ?? '',
      headers: req.headers,
      body,
      kind: 'other',
    };
    requests.push(record);
    if (req.method !== 'POST' || !(req.url ?? '').split('?')[0]!.endsWith('/chat/completions') || !body) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `not scripted: ${req.method} ${req.url}` } }));
      return;
    }
    let reply: ReplyStep | ErrorStep;
    if (isTitle(body)) {
      record.kind = 'title';
      reply = { text: options.title ?? 'Scripted session' };
    } else if (isSummary(body)) {
      record.kind = 'summary';
      reply = { text: options.summary ?? DEFAULT_SUMMARY, usage: options.summaryUsage ?? usage };
      if (options.summaryDelayMs) await new Promise((r) => setTimeout(r, options.summaryDelayMs));
    } else if (next < options.steps.length) {
      record.kind = 'step';
      record.step = next;
      const step = options.steps[next++]!;
      reply = typeof step === 'function' ? step(record) : step;
    } else {
      record.kind = 'fallback';
      reply = { text: options.fallback ?? 'Done.' };
    }
    if ('status' in reply) {
      res.writeHead(reply.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(reply.body));
      return;
    }
    const json = body.stream === false || (options.jsonUnlessStreamed === true && body.stream !== true);
    if (json) complete(res, reply, String(record.index), body.model, reply.usage ?? usage);
    else stream(res, reply, String(record.index), body.model, reply.usage ?? usage);
  };
  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: String(err) } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
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
