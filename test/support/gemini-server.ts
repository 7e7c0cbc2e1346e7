/**
 * A scripted Gemini API server on 127.0.0.1 (a free port) that drives a real Gemini CLI: with
 * `GOOGLE_GEMINI_BASE_URL` set to {@link GeminiServer.url} and `GEMINI_API_KEY`, Gemini CLI 0.61
 * sends the agent's turns as `POST /v1beta/models/<model>:streamGenerateContent?alt=sse`, its
 * utility calls (the compression summary and its verification) as `:generateContent`, and token
 * estimates as `:countTokens` (recorded on the real binary: docs/gemini-cli.md). The server answers
 * from a script and records every request:
 *
 * - the compression summarizer (a system instruction asking for a `<state_snapshot>`) → `summary`;
 * - other `generateContent` calls (utility calls such as the next-speaker check) → `utility`;
 * - every agent turn → the next of `steps`, then `fallback`.
 *
 * Replies are the real `GenerateContentResponse` shape: `candidates[0].content.parts` (text or
 * `functionCall`), `finishReason`, and `usageMetadata.promptTokenCount` (what Gemini CLI compares
 * with `model.compressionThreshold × the model's token limit` before each turn).
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One tool call the model makes (`functionCall`). */
export interface FunctionCall {
  /** Gemini CLI's tool name: `run_shell_command`, `write_file`, `read_file`, … */
  name: string;
  args: Record<string, unknown>;
  /** Echoed back in the `functionResponse`, to find the result. */
  id?: string;
}

/** One scripted reply. */
export interface ReplyStep {
  text?: string;
  calls?: FunctionCall[];
  /** `usageMetadata.promptTokenCount`. Default the server's `promptTokens`. */
  promptTokens?: number;
}

/** A step: a reply, or a function of the recorded request returning one. */
export type Step = ReplyStep | ((request: RecordedRequest) => ReplyStep);

/** What a request was taken for. */
export type RequestKind = 'summary' | 'utility' | 'step' | 'fallback' | 'count' | 'other';

/** A content part as Gemini CLI sends it. */
export interface Part {
  text?: string;
  functionCall?: { id?: string; name: string; args?: Record<string, unknown> };
  functionResponse?: { id?: string; name: string; response?: Record<string, unknown> };
}

/** A content (one turn of the history). */
export interface Content {
  role?: 'user' | 'model';
  parts?: Part[];
}

/** The request body (the parts the tests read). */
export interface GenerateBody {
  contents?: Content[];
  systemInstruction?: Content | string;
  tools?: unknown[];
}

/** A request as the server recorded it. */
export interface RecordedRequest {
  index: number;
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: GenerateBody | undefined;
  kind: RequestKind;
  step?: number;
}

/** Options of {@link startGeminiServer}. */
export interface GeminiServerOptions {
  steps: Step[];
  /** The summarizer's reply (and its verification's). Default a fixed `<state_snapshot>`. */
  summary?: string;
  /** Default 100. */
  promptTokens?: number;
  /** The reply once `steps` are used up. Default `Done.` */
  fallback?: string;
}

/** A running server. */
export interface GeminiServer {
  /** `http://127.0.0.1:<port>`, for `GOOGLE_GEMINI_BASE_URL`. */
  readonly url: string;
  readonly requests: RecordedRequest[];
  readonly stepsUsed: number;
  close(): Promise<void>;
}

/** The summary the server gives by default. */
export const DEFAULT_SNAPSHOT =
  '<state_snapshot><overall_goal>scripted</overall_goal><current_plan>go on</current_plan></state_snapshot>';

/** The text of a content. */
export function contentText(content: Content | string | undefined): string {
  if (typeof content === 'string') return content;
  return (content?.parts ?? []).map((p) => p.text ?? '').join('\n');
}

/** A request's whole text, as the model reads it (system instruction, texts, function results). */
export function requestText(request: RecordedRequest): string {
  const b = request.body;
  const out = [contentText(b?.systemInstruction)];
  for (const c of b?.contents ?? []) {
    for (const p of c.parts ?? []) {
      if (p.text) out.push(p.text);
      if (p.functionResponse) out.push(JSON.stringify(p.functionResponse.response ?? {}));
    }
  }
  return out.join('\n');
}

/** The function results a request carries, by call id. */
export function functionResults(request: RecordedRequest): Map<string, string> {
  const out = new Map<string, string>();
  for (const c of request.body?.contents ?? []) {
    for (const p of c.parts ?? []) {
      if (p.functionResponse?.id)
        out.set(p.functionResponse.id, JSON.stringify(p.functionResponse.response ?? {}));
    }
  }
  return out;
}

function isSummary(body: GenerateBody | undefined): boolean {
  const last = body?.contents?.at(-1);
  const text = contentText(last);
  return last?.role === 'user' && text.includes('<state_snapshot>') && !body?.tools?.length;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function response(reply: ReplyStep, id: string, promptTokens: number): Record<string, unknown> {
  const parts: Part[] = [];
  if (reply.text) parts.push({ text: reply.text });
  for (const [i, c] of (reply.calls ?? []).entries()) {
    parts.push({ functionCall: { id: c.id ?? `call_${id}_${i}`, name: c.name, args: c.args } });
  }
  return {
    candidates: [{ index: 0, content: { role: 'model', parts }, finishReason: 'STOP' }],
    usageMetadata: {
      promptTokenCount: promptTokens,
      candidatesTokenCount: 10,
      totalTokenCount: promptTokens + 10,
    },
    modelVersion: 'scripted',
    responseId: `resp-${id}`,
  };
}

/** Starts a server on 127.0.0.1 with a free port. */
export async function startGeminiServer(options: GeminiServerOptions): Promise<GeminiServer> {
  const requests: RecordedRequest[] = [];
  const defaultTokens = options.promptTokens ?? 100;
  let next = 0;
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const raw = await readBody(req);
    let body: GenerateBody | undefined;
    try {
      body = raw ? (JSON.parse(raw) as GenerateBody) : undefined;
    } catch {
      body = undefined;
    }
    const url = req.url ?? '';
    const record: RecordedRequest = {
      index: requests.length,
      method: req.method ?? '',
      url,
      headers: req.headers,
      body,
      kind: 'other',
    };
    requests.push(record);
    const path = url.split('?')[0]!;
    const json = (status: number, value: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(value));
    };
    if (req.method === 'POST' && path.endsWith(':countTokens')) {
      record.kind = 'count';
      return json(200, { totalTokens: Math.ceil(raw.length / 4) });
    }
    const streaming = path.endsWith(':streamGenerateContent');
    if (req.method !== 'POST' || !(streaming || path.endsWith(':generateContent'))) {
      return json(404, { error: { code: 404, message: `not scripted: ${req.method} ${url}` } });
    }
    let reply: ReplyStep;
    if (isSummary(body)) {
      record.kind = 'summary';
      reply = { text: options.summary ?? DEFAULT_SNAPSHOT };
    } else if (!streaming) {
      record.kind = 'utility';
      reply = { text: '{"reasoning":"scripted","next_speaker":"user"}' };
    } else if (next < options.steps.length) {
      record.kind = 'step';
      record.step = next;
      const step = options.steps[next++]!;
      reply = typeof step === 'function' ? step(record) : step;
    } else {
      record.kind = 'fallback';
      reply = { text: options.fallback ?? 'Done.' };
    }
    const value = response(reply, String(record.index), reply.promptTokens ?? defaultTokens);
    if (!streaming) return json(200, value);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.end(`data: ${JSON.stringify(value)}\r\n\r\n`);
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
    url: `http://127.0.0.1:${port}`,
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
