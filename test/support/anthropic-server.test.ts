/**
 * The scripted Anthropic Messages server without the binary: it answers turns from its steps in
 * order (text, tool calls, usage, steps computed from the request), recognises the summarization
 * request and answers it apart, streams the Messages API's events, and records what went wrong in
 * the script instead of making the client retry.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  type AnthropicServer,
  contentText,
  isSummaryRequest,
  type MessagesBody,
  startAnthropicServer,
  summaryReply,
  toolResult,
} from './anthropic-server.js';

let server: AnthropicServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const turn = (extra: Partial<MessagesBody> = {}): MessagesBody => ({
  model: 'claude-test',
  max_tokens: 100,
  tools: [{ name: 'Bash' }],
  messages: [{ role: 'user', content: 'hi' }],
  ...extra,
});

function post(path: string, body: unknown): Promise<Response> {
  return fetch(`${server!.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

/** The events of an SSE body, parsed. */
function events(sse: string): Array<{ type: string; [k: string]: unknown }> {
  return sse
    .split('\n')
    .filter((l) => l.startsWith('data: '))
    .map((l) => JSON.parse(l.slice(6)) as { type: string });
}

const SUMMARY_PROMPT =
  'CRITICAL: Respond with TEXT ONLY. Do NOT call any tools. Your task is to create a detailed summary of the conversation so far.';

describe('the scripted Anthropic Messages server', () => {
  it('streams a tool call with its input in input_json_delta pieces, and stops with tool_use', async () => {
    server = await startAnthropicServer({
      steps: [{ tool: 'Bash', id: 'toolu_1', input: { command: 'ls -la' } }],
    });
    const sse = await (await post('/v1/messages?beta=true', turn({ stream: true }))).text();
    const ev = events(sse);
    expect(ev.map((e) => e.type)).toEqual([
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(ev[1]).toMatchObject({ content_block: { type: 'tool_use', id: 'toolu_1', name: 'Bash' } });
    const json = ev
      .filter((e) => e.type === 'content_block_delta')
      .map((e) => (e.delta as { partial_json: string }).partial_json)
      .join('');
    expect(JSON.parse(json)).toEqual({ command: 'ls -la' });
    expect(ev[5]).toMatchObject({ delta: { stop_reason: 'tool_use' } });
    expect(server.requests.map((r) => [r.kind, r.step])).toEqual([['turn', 0]]);
  });

  it('answers text with end_turn, reports the step usage over the default, and answers JSON to a non-streaming request', async () => {
    server = await startAnthropicServer({
      steps: ['first', { text: 'full', usage: { input_tokens: 190_000 } }],
      usage: { input_tokens: 7 },
    });
    const a = (await (await post('/v1/messages', turn())).json()) as Record<string, unknown>;
    expect(a).toMatchObject({ content: [{ type: 'text', text: 'first' }], stop_reason: 'end_turn' });
    expect(a.usage).toMatchObject({ input_tokens: 7 });
    const ev = events(await (await post('/v1/messages', turn({ stream: true }))).text());
    expect(ev[0]).toMatchObject({ message: { usage: { input_tokens: 190_000 } } });
    const text = ev
      .filter((e) => e.type === 'content_block_delta')
      .map((e) => (e.delta as { text: string }).text)
      .join('');
    expect(text).toBe('full');
  });

  it('answers the summarization request with the summary in a <summary> block, without using a step', async () => {
    server = await startAnthropicServer({ steps: ['the only step'], summary: 'SUMMARY-TEXT' });
    const body = turn({
      stream: true,
      messages: [
        { role: 'user', content: 'a' },
        { role: 'assistant', content: 'b' },
        { role: 'user', content: [{ type: 'text', text: SUMMARY_PROMPT }] },
        { role: 'system', content: 'environment' },
      ],
    });
    expect(isSummaryRequest(body)).toBe(true);
    const sse = await (await post('/v1/messages', body)).text();
    expect(sse).toContain('<summary>');
    expect(sse).toContain('SUMMARY-TEXT');
    expect(server.stepsUsed).toBe(0);
    expect(server.requestsOf('summary')).toHaveLength(1);
    expect(summaryReply('<summary>kept</summary>')).toBe('<summary>kept</summary>');
  });

  it('computes a step from the request, and finds tool results in a body', async () => {
    server = await startAnthropicServer({
      steps: [({ request }) => `saw ${contentText(request.body?.messages?.[0]?.content)}`],
    });
    const j = (await (await post('/v1/messages', turn())).json()) as { content: Array<{ text: string }> };
    expect(j.content[0]!.text).toBe('saw hi');
    const body: MessagesBody = {
      messages: [
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 'toolu_9', is_error: true, content: 'denied' }],
        },
      ],
    };
    expect(toolResult(body, 'toolu_9')).toEqual({ isError: true, text: 'denied' });
    expect(toolResult(body, 'toolu_8')).toBeUndefined();
  });

  it('records a failing step and an exhausted script as problems and ends the turn (no HTTP error to retry)', async () => {
    server = await startAnthropicServer({
      steps: [
        () => {
          throw new Error('no context');
        },
      ],
    });
    const a = await post('/v1/messages', turn());
    expect(a.status).toBe(200);
    expect(((await a.json()) as { stop_reason: string }).stop_reason).toBe('end_turn');
    const b = await post('/v1/messages', turn());
    expect(b.status).toBe(200);
    expect(server.problems).toEqual([
      'request 0, step 0: no context',
      'request 1: a turn with no scripted step left',
    ]);
    expect(server.requests.map((r) => r.step)).toEqual([0, -1]);
  });

  it('answers side requests without using a step', async () => {
    server = await startAnthropicServer({ steps: ['x'] });
    expect((await fetch(`${server.url}/api/hello`, { method: 'HEAD' })).status).toBe(200);
    const count = (await (await post('/v1/messages/count_tokens', turn())).json()) as {
      input_tokens: number;
    };
    expect(count.input_tokens).toBeGreaterThan(0);
    expect((await post('/v1/other', {})).status).toBe(404);
    expect(server.requests.map((r) => r.kind)).toEqual(['other', 'count_tokens', 'other']);
    expect(server.stepsUsed).toBe(0);
  });
});
