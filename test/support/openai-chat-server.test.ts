/**
 * The scripted chat-completions server (test/support/openai-chat-server.ts) speaks the stream
 * OpenCode's `@ai-sdk/openai-compatible` provider reads: checked here by decoding what it sends,
 * the way the provider does (SSE `data:` lines, tool call deltas joined by index, usage last).
 * That OpenCode itself accepts it is what test/opencode/ proves.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChatServer, startChatServer, toolResults } from './openai-chat-server.js';

interface Decoded {
  text: string;
  calls: Array<{ id: string; name: string; args: string }>;
  finish: string | null;
  usage: Record<string, number> | undefined;
  done: boolean;
}

async function chat(server: ChatServer, body: unknown): Promise<{ status: number; decoded: Decoded }> {
  const res = await fetch(`${server.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const raw = await res.text();
  const decoded: Decoded = { text: '', calls: [], finish: null, usage: undefined, done: false };
  for (const line of raw.split('\n')) {
    if (!line.startsWith('data: ')) continue;
    const data = line.slice(6);
    if (data === '[DONE]') {
      decoded.done = true;
      continue;
    }
    const chunk = JSON.parse(data) as {
      choices: Array<{
        delta: {
          content?: string;
          tool_calls?: Array<{ index: number; id?: string; function: { name?: string; arguments: string } }>;
        };
        finish_reason: string | null;
      }>;
      usage?: Record<string, number>;
    };
    if (chunk.usage) decoded.usage = chunk.usage;
    for (const c of chunk.choices) {
      decoded.text += c.delta.content ?? '';
      for (const t of c.delta.tool_calls ?? []) {
        decoded.calls[t.index] ??= { id: '', name: '', args: '' };
        const call = decoded.calls[t.index]!;
        if (t.id) call.id = t.id;
        if (t.function.name) call.name = t.function.name;
        call.args += t.function.arguments;
      }
      if (c.finish_reason) decoded.finish = c.finish_reason;
    }
  }
  return { status: res.status, decoded };
}

const TOOLS = [{ type: 'function', function: { name: 'bash' } }];

describe('the scripted chat-completions server', () => {
  let server: ChatServer;
  beforeAll(async () => {
    server = await startChatServer({
      steps: [
        {
          text: 'Running a long enough command.',
          toolCalls: [{ name: 'bash', args: { command: 'echo 1234567890abcdef' } }],
          usage: { prompt_tokens: 9500, completion_tokens: 100 },
        },
        (r) => ({ text: `saw ${toolResults(r).get('call_2_0') ?? 'nothing'}` }),
        { status: 400, body: { error: { code: 'context_length_exceeded' } } },
      ],
      summary: 'SUMMARY',
    });
  });
  afterAll(() => server.close());

  it('streams a step: text, a tool call in pieces, the finish reason, usage, [DONE]', async () => {
    const title = await chat(server, {
      model: 'm',
      messages: [{ role: 'system', content: 'You are a title generator. x' }],
    });
    expect(title.decoded.text).toBe('Scripted session');
    const step = await chat(server, {
      model: 'm',
      stream: true,
      tools: TOOLS,
      messages: [{ role: 'user', content: 'go' }],
    });
    expect(step.status).toBe(200);
    expect(step.decoded).toEqual({
      text: 'Running a long enough command.',
      calls: [{ id: 'call_1_0', name: 'bash', args: '{"command":"echo 1234567890abcdef"}' }],
      finish: 'tool_calls',
      usage: { prompt_tokens: 9500, completion_tokens: 100, total_tokens: 9600 },
      done: true,
    });
  });

  it('answers the summarizer apart from the steps, then a step that reads the tool result, then an error', async () => {
    const summary = await chat(server, {
      model: 'm',
      messages: [
        { role: 'user', content: 'Here is the conversation so far:\n\n<conversation>\n…\n</conversation>' },
      ],
    });
    expect(summary.decoded.text).toBe('SUMMARY');
    const next = await chat(server, {
      model: 'm',
      tools: TOOLS,
      messages: [{ role: 'tool', tool_call_id: 'call_2_0', content: 'ok' }],
    });
    expect(next.decoded.text).toBe('saw ok');
    const again = await chat(server, {
      model: 'm',
      tools: TOOLS,
      messages: [{ role: 'tool', tool_call_id: 'call_1_0', content: 'out' }],
    });
    expect(again.status).toBe(400);
    const fallback = await chat(server, { model: 'm', tools: TOOLS, messages: [] });
    expect(fallback.decoded.text).toBe('Done.');
    expect(server.requests.map((r) => `${r.kind}${r.step ?? ''}`)).toEqual([
      'title',
      'step0',
      'summary',
      'step1',
      'step2',
      'fallback',
    ]);
    expect(server.stepsUsed).toBe(3);
  });
});

/** The fields of a `chat.completion` object the test reads. */
interface Completion {
  object: string;
  choices: Array<{ finish_reason: string; message: { content: string | null; [k: string]: unknown } }>;
}

describe('the scripted chat-completions server, not streaming', () => {
  it('answers `stream: false` with one chat.completion object (LangChain ChatOpenAI.invoke), and knows LangChain’s summary prompt', async () => {
    const server = await startChatServer({
      steps: [{ text: 'calling', toolCalls: [{ id: 'c1', name: 'write_file', args: { path: 'a' } }] }],
      summary: 'SUMMARY',
    });
    try {
      const post = (body: unknown) =>
        fetch(`${server.url}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }).then((r) => r.json() as Promise<Completion>);
      const step = await post({
        model: 'm',
        stream: false,
        tools: TOOLS,
        messages: [{ role: 'user', content: 'go' }],
      });
      expect(step.object).toBe('chat.completion');
      expect(step.choices[0]!.finish_reason).toBe('tool_calls');
      expect(step.choices[0]!.message).toEqual({
        role: 'assistant',
        content: 'calling',
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'write_file', arguments: '{"path":"a"}' } },
        ],
      });
      const summary = await post({
        model: 'm',
        stream: false,
        messages: [{ role: 'user', content: '<messages>\nMessages to summarize:\nHuman: hi\n</messages>' }],
      });
      expect(summary.choices[0]!.message.content).toBe('SUMMARY');
      expect(server.requests.map((r) => r.kind)).toEqual(['step', 'summary']);
    } finally {
      await server.close();
    }
  });
});
