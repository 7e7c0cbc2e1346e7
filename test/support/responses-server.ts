/**
 * Scripted OpenAI Responses API server for driving the real Codex CLI in tests (test/codex-e2e).
 *
 * Dependency-free (node:http, node:zlib), listens on 127.0.0.1 with port 0.
 * Written against what codex-cli 0.171.0 was observed to send (docs/codex.md). Point Codex at it with a custom provider
 * (see `codexProviderArgs`):
 *
 *   codex exec --skip-git-repo-check \
 *     -c model_provider=scripted \
 *     -c 'model_providers.scripted={name="scripted",base_url="<baseUrl>",wire_api="responses",env_key="OPENAI_API_KEY"}' \
 *     -c model=gpt-5.5 PROMPT </dev/null
 *
 * (`gpt-5.5` is in Codex's bundled model catalog, so Codex offers the
 * `apply_patch` freeform tool; an unknown model name gets fallback metadata
 * and no `apply_patch` tool.)
 *
 * Request kinds:
 *   - "turn":    a normal sampling request; answered with the next scripted step
 *                (`defaultReply` once the script is used up).
 *   - "compact": a compaction request, answered with `summary`:
 *       · inline (custom providers): a streamed POST /v1/responses with no tools
 *         whose last user message is the summarization prompt
 *         ("You are performing a CONTEXT CHECKPOINT COMPACTION…") and whose
 *         x-codex-turn-metadata has request_kind "compaction". Answered with an
 *         assistant message; Codex then starts the next window with a user
 *         message SUMMARY_PREFIX + "\n" + summary.
 *       · remote v2 (built-in "openai" provider): POST /v1/responses whose last
 *         input item is {"type":"compaction_trigger"}; Codex requires exactly
 *         one output item {"type":"compaction","encrypted_content":…}, which it
 *         replays verbatim as an input item of later requests. `summary` is
 *         used as encrypted_content.
 *       · remote v1 POST /v1/responses/compact (not seen from 0.171.0, kept
 *         for older versions): JSON {output:[<user message with summary>]}.
 *   - "title":   the TUI's side request that names a new thread
 *                (thread_source "thread_title"); answered with `title`, never
 *                consumes a step.
 *   - "other":   anything else. A WebSocket upgrade attempt on /v1/responses
 *                (built-in openai provider) gets 426 so Codex falls back to
 *                HTTP at once; GET …/models gets an empty list; the rest 404.
 *
 * Every request is recorded.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import zlib from 'node:zlib';

// biome-ignore lint/suspicious/noExplicitAny: request bodies are untyped JSON from Codex
type Json = any;

/**
 * Token usage reported in `response.completed`. Codex treats the latest
 * response's `total_tokens` as the active context size: when it reaches
 * `model_auto_compact_token_limit` (config, top level) and the response needs a
 * follow-up (a tool call), Codex compacts mid-turn; if the turn ended, it
 * compacts before the next turn (also in a later `codex exec resume`).
 */
export interface Usage {
  input_tokens: number;
  cached_input_tokens: number;
  output_tokens: number;
  reasoning_output_tokens: number;
  total_tokens: number;
}

export interface StepOptions {
  /** Usage reported for this response (merged over the server default). */
  usage?: Partial<Usage>;
  /** Assistant text emitted before the step's tool call. */
  preamble?: string;
  /** Delay before answering, in ms. */
  delayMs?: number;
  /** call_id for a tool call (default `call_<n>`). */
  callId?: string;
}

/** One scripted model response. A bare string is a text reply. */
export type Step =
  | string
  | (StepOptions & { text: string })
  /** Shell command via Codex's `exec_command` function tool (hooks see tool_name "Bash"). */
  | (StepOptions & {
      shell: string;
      workdir?: string;
      /** Extra `exec_command` arguments, e.g. `{ yield_time_ms: 2000, tty: true }`. */
      args?: Record<string, unknown>;
    })
  /** Raw patch through Codex's freeform `apply_patch` custom tool (hooks see tool_name "apply_patch"). */
  | (StepOptions & { applyPatch: string })
  /** Create a file through `apply_patch` ("*** Add File:"); path relative to the cwd or absolute. */
  | (StepOptions & { writeFile: { path: string; content: string } })
  /** Any function tool call; `arguments` is JSON-encoded unless already a string. */
  | (StepOptions & { functionCall: { name: string; arguments: unknown } })
  /** Any custom (freeform) tool call. */
  | (StepOptions & { customToolCall: { name: string; input: string } })
  /** Raw SSE events, sent as given (`type` becomes the SSE `event:` line). */
  | { events: Array<Record<string, unknown>>; delayMs?: number }
  /** A non-200 answer (Codex retries 5xx/429). */
  | { httpError: { status: number; body?: unknown }; delayMs?: number }
  /** Choose the step from the request. */
  | ((req: RecordedRequest) => Step);

export type RequestKind = 'turn' | 'compact' | 'title' | 'other';
export type CompactionFlavor = 'inline' | 'remote-v2' | 'remote-v1';

export interface RecordedRequest {
  index: number;
  /** ms since the server started. */
  at: number;
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** Parsed JSON body (undefined when empty or not JSON). */
  body: Json;
  rawBody: string;
  kind: RequestKind;
  /** Set for kind "compact". */
  compaction?: CompactionFlavor;
  /** Index into `steps` of the step that answered it; -1 when none. */
  stepIndex: number;
  /** Parsed `x-codex-turn-metadata` header (session_id, turn_id, request_kind, compaction, …). */
  turnMetadata?: Record<string, Json>;
}

export interface ResponsesServerOptions {
  steps: Step[];
  /** Text answered to compaction requests (default "Summary of the conversation so far."). */
  summary?: string;
  /** Default usage for every streamed response. */
  usage?: Partial<Usage>;
  /** Usage for compaction responses (default: `usage`). */
  compactUsage?: Partial<Usage>;
  /** Answer to the TUI's thread-title request (default "Scripted task"). */
  title?: string;
  /** Text reply once `steps` is used up (default "done"). */
  defaultReply?: string;
  /** Replace compaction detection (return a flavor, or undefined for "not a compaction"). */
  detectCompaction?: (req: {
    method: string;
    path: string;
    body: Json;
    turnMetadata?: Record<string, Json>;
  }) => CompactionFlavor | undefined;
  /** Called for each request once it is recorded. */
  onRequest?: (req: RecordedRequest) => void;
  /**
   * Put the response's output items in `response.completed` (`response.output`), as the API
   * does; OpenAI Agents JS reads its output from there (observed on 0.20.0). Default false (Codex
   * reads the items as they stream).
   */
  completedOutput?: boolean;
}

export interface ResponsesServer {
  /** e.g. http://127.0.0.1:43567 */
  url: string;
  /** `${url}/v1` — the provider's base_url. */
  baseUrl: string;
  requests: RecordedRequest[];
  requestsOf(kind: RequestKind): RecordedRequest[];
  /** Steps consumed so far. */
  readonly stepsUsed: number;
  /** Date.now() when the server started (RecordedRequest.at is relative to it). */
  startedAt: number;
  close(): Promise<void>;
}

/** In the inline compaction prompt (the request's last user message). */
export const COMPACTION_PROMPT_MARKER = 'CONTEXT CHECKPOINT COMPACTION';
/** Start of the user message that carries the summary into the next window. */
export const SUMMARY_PREFIX =
  'Another language model started to solve this problem and produced a summary of its thinking process.';
/** Start of the TUI's thread-title side request. */
export const TITLE_PROMPT_PREFIX = 'Generate a concise, single-line task title';

const DEFAULT_USAGE: Usage = {
  input_tokens: 100,
  cached_input_tokens: 0,
  output_tokens: 10,
  reasoning_output_tokens: 0,
  total_tokens: 110,
};

type PlainStep = Exclude<Step, string | ((req: RecordedRequest) => Step)>;
/** What the server streams: a scripted step, or the remote-v2 compaction item. */
type Answer = PlainStep | (StepOptions & { compactionItem: string });

export async function startResponsesServer(options: ResponsesServerOptions): Promise<ResponsesServer> {
  const started = Date.now();
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  let nextStep = 0;
  let seq = 0;

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let raw: string;
      try {
        raw = decodeBody(Buffer.concat(chunks), req.headers['content-encoding']);
      } catch (err) {
        res.writeHead(415, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: String(err) } }));
        return;
      }
      handle(req, res, raw).catch((err) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: String(err) } }));
      });
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse, raw: string) {
    const method = req.method ?? 'GET';
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    let body: Json;
    try {
      body = raw ? JSON.parse(raw) : undefined;
    } catch {
      body = undefined;
    }
    const turnMetadata = parseJsonHeader(req.headers['x-codex-turn-metadata']);
    const isStream = method === 'POST' && path.endsWith('/responses');
    const compaction = (options.detectCompaction ?? detectCompaction)({ method, path, body, turnMetadata });
    let kind: RequestKind;
    if (compaction) kind = 'compact';
    else if (!isStream) kind = 'other';
    else if (
      turnMetadata?.thread_source === 'thread_title' ||
      lastUserText(body).startsWith(TITLE_PROMPT_PREFIX)
    )
      kind = 'title';
    else kind = 'turn';

    const rec: RecordedRequest = {
      index: requests.length,
      at: Date.now() - started,
      method,
      path,
      headers: req.headers,
      body,
      rawBody: raw,
      kind,
      ...(compaction ? { compaction } : {}),
      stepIndex: -1,
      ...(turnMetadata ? { turnMetadata } : {}),
    };
    requests.push(rec);

    let step: Step | Answer;
    if (kind === 'other') {
      options.onRequest?.(rec);
      return answerSide(req, path, res);
    } else if (compaction === 'remote-v1') {
      options.onRequest?.(rec);
      res.writeHead(200, { 'content-type': 'application/json' });
      const u: Usage = { ...DEFAULT_USAGE, ...options.usage, ...options.compactUsage };
      res.end(
        JSON.stringify({
          id: `cmp_${requests.length}`,
          object: 'response.compaction',
          output: [userMessage(`${SUMMARY_PREFIX}\n${summary()}`)],
          usage: {
            input_tokens: u.input_tokens,
            input_tokens_details: { cached_tokens: u.cached_input_tokens },
            output_tokens: u.output_tokens,
            output_tokens_details: { reasoning_tokens: u.reasoning_output_tokens },
            total_tokens: u.total_tokens,
          },
        }),
      );
      return;
    } else if (compaction === 'remote-v2') {
      step = { compactionItem: summary(), usage: options.compactUsage ?? options.usage ?? {} };
    } else if (compaction === 'inline') {
      step = { text: summary(), usage: options.compactUsage ?? options.usage ?? {} };
    } else if (kind === 'title') {
      step = options.title ?? 'Scripted task';
    } else if (nextStep < options.steps.length) {
      rec.stepIndex = nextStep;
      step = options.steps[nextStep++]!;
    } else {
      step = options.defaultReply ?? 'done';
    }
    options.onRequest?.(rec);
    while (typeof step === 'function') step = step(rec);
    const plain: Answer = typeof step === 'string' ? { text: step } : step;
    if (plain.delayMs) await new Promise((r) => setTimeout(r, plain.delayMs));
    stream(res, plain);
  }

  function summary() {
    return options.summary ?? 'Summary of the conversation so far.';
  }

  function stream(res: http.ServerResponse, step: Answer) {
    if ('httpError' in step) {
      res.writeHead(step.httpError.status, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify(step.httpError.body ?? { error: { message: 'scripted error', type: 'server_error' } }),
      );
      return;
    }
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    const send = (ev: Record<string, unknown>) =>
      res.write(`event: ${String(ev.type)}\ndata: ${JSON.stringify(ev)}\n\n`);
    if ('events' in step) {
      for (const ev of step.events) send(ev);
      res.end();
      return;
    }
    const s = step as Json;

    const n = ++seq;
    const responseId = `resp_${n}`;
    let outputIndex = 0;
    const output: Array<Record<string, unknown>> = [];
    send({ type: 'response.created', response: { id: responseId, status: 'in_progress' } });
    const message = (text: string) => {
      const id = `msg_${n}_${outputIndex}`;
      const done = {
        type: 'message',
        role: 'assistant',
        id,
        status: 'completed',
        content: [{ type: 'output_text', text, annotations: [] }],
      };
      send({
        type: 'response.output_item.added',
        output_index: outputIndex,
        item: { ...done, status: 'in_progress', content: [] },
      });
      send({
        type: 'response.content_part.added',
        item_id: id,
        output_index: outputIndex,
        content_index: 0,
        part: { type: 'output_text', text: '', annotations: [] },
      });
      send({
        type: 'response.output_text.delta',
        item_id: id,
        output_index: outputIndex,
        content_index: 0,
        delta: text,
      });
      send({
        type: 'response.output_text.done',
        item_id: id,
        output_index: outputIndex,
        content_index: 0,
        text,
      });
      send({ type: 'response.output_item.done', output_index: outputIndex, item: done });
      output.push(done);
      outputIndex++;
    };
    const item = (it: Record<string, unknown>) => {
      send({
        type: 'response.output_item.added',
        output_index: outputIndex,
        item: { ...it, status: 'in_progress' },
      });
      send({
        type: 'response.output_item.done',
        output_index: outputIndex,
        item: { ...it, status: 'completed' },
      });
      output.push({ ...it, status: 'completed' });
      outputIndex++;
    };

    if (s.preamble) message(s.preamble);
    const callId = s.callId ?? `call_${n}`;
    if ('compactionItem' in s) {
      item({ type: 'compaction', id: `cmp_${n}`, encrypted_content: s.compactionItem });
    } else if ('text' in s) {
      message(s.text);
    } else if ('shell' in s) {
      const args = { cmd: s.shell, ...(s.workdir ? { workdir: s.workdir } : {}), ...s.args };
      item({
        type: 'function_call',
        id: `fc_${n}`,
        call_id: callId,
        name: 'exec_command',
        arguments: JSON.stringify(args),
      });
    } else if ('functionCall' in s) {
      const a = s.functionCall.arguments;
      item({
        type: 'function_call',
        id: `fc_${n}`,
        call_id: callId,
        name: s.functionCall.name,
        arguments: typeof a === 'string' ? a : JSON.stringify(a ?? {}),
      });
    } else if ('applyPatch' in s || 'writeFile' in s || 'customToolCall' in s) {
      const name = 'customToolCall' in s ? s.customToolCall.name : 'apply_patch';
      const input =
        'customToolCall' in s
          ? s.customToolCall.input
          : 'applyPatch' in s
            ? s.applyPatch
            : addFilePatch(s.writeFile.path, s.writeFile.content);
      item({ type: 'custom_tool_call', id: `ctc_${n}`, call_id: callId, name, input });
    } else {
      throw new Error(`unknown step: ${JSON.stringify(step)}`);
    }
    const u: Usage = { ...DEFAULT_USAGE, ...options.usage, ...s.usage };
    send({
      type: 'response.completed',
      response: {
        id: responseId,
        status: 'completed',
        ...(options.completedOutput ? { output } : {}),
        usage: {
          input_tokens: u.input_tokens,
          input_tokens_details: { cached_tokens: u.cached_input_tokens },
          output_tokens: u.output_tokens,
          output_tokens_details: { reasoning_tokens: u.reasoning_output_tokens },
          total_tokens: u.total_tokens,
        },
      },
    });
    res.end();
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    baseUrl: `${url}/v1`,
    requests,
    requestsOf: (kind) => requests.filter((r) => r.kind === kind),
    startedAt: started,
    get stepsUsed() {
      return nextStep;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** `-c` arguments that point Codex at `server` through a custom provider named `name`. */
export function codexProviderArgs(
  server: Pick<ResponsesServer, 'baseUrl'>,
  opts: { name?: string; model?: string; envKey?: string } = {},
): string[] {
  const name = opts.name ?? 'scripted';
  return [
    '-c',
    `model_provider=${name}`,
    '-c',
    `model_providers.${name}={name=${JSON.stringify(name)},base_url=${JSON.stringify(server.baseUrl)},wire_api="responses",env_key=${JSON.stringify(opts.envKey ?? 'OPENAI_API_KEY')}}`,
    '-c',
    `model=${JSON.stringify(opts.model ?? 'gpt-5.5')}`,
  ];
}

/** An apply_patch body that creates `path` with `content`. */
export function addFilePatch(path: string, content: string): string {
  const lines = (content.endsWith('\n') ? content.slice(0, -1) : content).split('\n');
  return `*** Begin Patch\n*** Add File: ${path}\n${lines.map((l) => `+${l}`).join('\n')}\n*** End Patch\n`;
}

/** Every text part of every message in a request's `input`, with its role. */
export function inputTexts(body: Json): Array<{ role: string; text: string }> {
  const out: Array<{ role: string; text: string }> = [];
  for (const it of body?.input ?? []) {
    if (it?.type !== 'message' || !Array.isArray(it.content)) continue;
    for (const c of it.content) if (typeof c?.text === 'string') out.push({ role: it.role, text: c.text });
  }
  return out;
}

/** Developer messages of a request (where hook additionalContext lands). */
export function developerTexts(body: Json): string[] {
  return inputTexts(body)
    .filter((t) => t.role === 'developer')
    .map((t) => t.text);
}

/** Tool results Codex sends back (`function_call_output` / `custom_tool_call_output`). */
export function toolOutputs(body: Json): Array<{ type: string; call_id: string; output: unknown }> {
  return (body?.input ?? [])
    .filter((i: Json) => i?.type === 'function_call_output' || i?.type === 'custom_tool_call_output')
    .map((i: Json) => ({ type: i.type, call_id: i.call_id, output: i.output }));
}

/** The summary text Codex carried into a request (after SUMMARY_PREFIX), if Json. */
export function carriedSummary(body: Json): string | undefined {
  const t = inputTexts(body).find((x) => x.role === 'user' && x.text.startsWith(SUMMARY_PREFIX));
  if (t) return t.text.slice(t.text.indexOf('\n') + 1);
  const c = (body?.input ?? []).find((i: Json) => i?.type === 'compaction');
  return typeof c?.encrypted_content === 'string' ? c.encrypted_content : undefined;
}

export function detectCompaction(req: {
  method: string;
  path: string;
  body: Json;
  turnMetadata?: Record<string, Json>;
}): CompactionFlavor | undefined {
  if (req.method !== 'POST') return undefined;
  if (req.path.endsWith('/responses/compact')) return 'remote-v1';
  if (!req.path.endsWith('/responses')) return undefined;
  const items = req.body?.input;
  if (Array.isArray(items) && items.at(-1)?.type === 'compaction_trigger') return 'remote-v2';
  if (
    req.turnMetadata?.request_kind === 'compaction' ||
    lastUserText(req.body).includes(COMPACTION_PROMPT_MARKER)
  )
    return 'inline';
  return undefined;
}

function lastUserText(body: Json): string {
  const items = body?.input;
  if (!Array.isArray(items)) return '';
  for (let i = items.length - 1; i >= 0; i--) {
    const it = items[i];
    if (it?.type === 'message' && it.role === 'user') {
      return (it.content ?? []).find((c: Json) => typeof c?.text === 'string')?.text ?? '';
    }
  }
  return '';
}

function userMessage(text: string) {
  return { type: 'message', role: 'user', content: [{ type: 'input_text', text }] };
}

function answerSide(req: http.IncomingMessage, path: string, res: http.ServerResponse) {
  if (req.headers.upgrade) {
    res.writeHead(426, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: 'the scripted server speaks HTTP/SSE only' } }));
  } else if (path.endsWith('/models')) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ object: 'list', data: [], models: [] }));
  } else {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: `not scripted: ${req.method} ${path}` } }));
  }
}

function decodeBody(buf: Buffer, encoding: string | string[] | undefined): string {
  const enc = String(encoding ?? '').toLowerCase();
  if (!enc || enc === 'identity') return buf.toString('utf8');
  if (enc === 'gzip') return zlib.gunzipSync(buf).toString('utf8');
  if (enc === 'zstd') {
    const z = zlib as unknown as { zstdDecompressSync?: (b: Buffer) => Buffer };
    if (z.zstdDecompressSync) return z.zstdDecompressSync(buf).toString('utf8');
    throw new Error('zstd-encoded request body, and this Node has no zlib.zstdDecompressSync');
  }
  throw new Error(`unsupported content-encoding: ${enc}`);
}

function parseJsonHeader(v: string | string[] | undefined): Record<string, Json> | undefined {
  if (typeof v !== 'string') return undefined;
  try {
    return JSON.parse(v);
  } catch {
    return undefined;
  }
}
