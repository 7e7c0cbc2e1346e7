/**
 * Claude Code's newer surfaces on the real 2.1.337 binary (the one the Agent SDK 0.3.337 bundles,
 * whatever line the rest of this suite runs): the `Interrupt` hook when a stream-json client
 * interrupts a turn (as the SDK's `interrupt()` does), and the message a SessionStart shows the
 * human when the task record is still init's template. Both driven through stream-json, where
 * the binary reports what it shows.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { taskRecordTemplate } from '../../src/adapters/core/task-record.js';
import type { AnthropicServer } from '../support/anthropic-server.js';
import { ensureNpmPeer, PEERS } from '../support/peers.js';
import {
  bash,
  INSTALL_TIMEOUT_MS,
  SCENARIO_TIMEOUT_MS,
  type Suite,
  useSuite,
  type World,
} from './harness.js';
import { endScenario, records, scenario } from './scenario.js';

const suite = useSuite();
let claude337 = '';
beforeAll(async () => {
  claude337 = (await ensureNpmPeer(PEERS.claudeAgentSdkBundled)).bin;
}, INSTALL_TIMEOUT_MS);

const on337 = (): Suite => ({ ...suite(), claude: claude337 });

/** One stream-json message of the binary's output. */
type StreamMessage = Record<string, unknown> & { type: string; subtype?: string };

/**
 * Runs the binary with stream-json in and out, sends `prompt`, then, once `ready()` holds, the
 * lines of `send` (control requests); closes stdin after the turn's result. Returns the messages.
 */
function streamJson(
  world: World,
  server: AnthropicServer,
  prompt: string,
  options: { ready?: () => boolean; send?: unknown[]; debugFile: string },
): Promise<{ messages: StreamMessage[]; code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      claude337,
      [
        '-p',
        '--input-format',
        'stream-json',
        '--output-format',
        'stream-json',
        '--verbose',
        '--allowedTools',
        'Bash Edit Write',
        '--debug-file',
        options.debugFile,
      ],
      { cwd: world.project, env: { ...world.env, ANTHROPIC_BASE_URL: server.url } },
    );
    const messages: StreamMessage[] = [];
    let buf = '';
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), 150_000);
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      stderr += c;
    });
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      buf += c;
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (!line) continue;
        try {
          const m = JSON.parse(line) as StreamMessage;
          messages.push(m);
          if (m.type === 'result') child.stdin.end();
        } catch {
          // not a message line
        }
      }
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      clearInterval(poll);
      resolve({ messages, code, stderr });
    });
    const send = (x: unknown) => child.stdin.write(`${JSON.stringify(x)}\n`);
    send({ type: 'user', message: { role: 'user', content: prompt } });
    let sent = false;
    const poll = setInterval(() => {
      if (sent || !(options.ready?.() ?? false)) return;
      sent = true;
      for (const x of options.send ?? []) send(x);
    }, 100);
  });
}

/** Appends each payload of `events` the binary sends to `file` (a second hook beside ours). */
function recordHooks(world: World, file: string, events: readonly string[]): void {
  const path = world.file('.claude/settings.json');
  const settings = JSON.parse(readFileSync(path, 'utf8')) as { hooks: Record<string, unknown[]> };
  for (const event of events)
    settings.hooks[event] = [
      ...(settings.hooks[event] ?? []),
      { hooks: [{ type: 'command', command: `cat >> ${file}; echo >> ${file}` }] },
    ];
  writeFileSync(path, `${JSON.stringify(settings, null, 2)}\n`);
}

/** The payloads {@link recordHooks} wrote, in order. */
function recorded(file: string): Array<Record<string, unknown>> {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe.concurrent('Claude Code 2.1.337: newer surfaces on the real binary', () => {
  it(
    'Interrupt: a client interrupt while a tool runs fires it (source user, reason stop, via client) and the session becomes idle',
    async () => {
      const s = await scenario(on337());
      try {
        const captured = join(s.world.root, 'interrupt.jsonl');
        recordHooks(s.world, captured, ['Interrupt']);
        // A tool that runs long enough for the interrupt to land while it runs.
        s.server.push(bash('b-long', 'sleep 20'), 'Done.', 'Done.');
        const r = await streamJson(s.world, s.server, 'start the task', {
          ready: () => s.server.requestsOf('turn').length >= 1,
          send: [{ type: 'control_request', request_id: 'int-1', request: { subtype: 'interrupt' } }],
          debugFile: join(s.world.root, 'debug-1.log'),
        });
        expect(r.code, r.stderr).toBe(0);
        const sessionId = r.messages.find((m) => typeof m.session_id === 'string')?.session_id as string;
        const payloads = recorded(captured);
        expect(payloads).toHaveLength(1);
        const { session_id, transcript_path, cwd, ...shape } = payloads[0]!;
        expect(session_id).toBe(sessionId);
        expect(shape).toMatchObject({
          hook_event_name: 'Interrupt',
          source: 'user',
          reason: 'stop',
          via: 'client',
        });
        const activity = records(s, sessionId)
          .filter((x) => x.type === 'activity')
          .map((x) => x.state);
        expect(activity.at(-1)).toBe('idle');
        expect(activity).toContain('working');
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    "an unfilled task template: SessionStart's systemMessage reaches the human (the stream's hook message), not the model",
    async () => {
      const s = await scenario(on337());
      try {
        writeFileSync(s.world.file('.continuity/task.json'), taskRecordTemplate(), { mode: 0o600 });
        s.server.push('Done.');
        const r = await streamJson(s.world, s.server, 'start the task', {
          debugFile: join(s.world.root, 'debug-1.log'),
        });
        expect(r.code, r.stderr).toBe(0);
        const text = JSON.stringify(r.messages);
        writeFileSync('/tmp/cc-template-stream.json', JSON.stringify(r.messages, null, 1));
        expect(text).toContain('is still the template');
        const request = JSON.stringify(s.server.requestsOf('turn')[0]?.body ?? {});
        expect(request).not.toContain('is still the template');
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'a summary written earlier (precomputed compaction): which hooks fire, in what order',
    async () => {
      const s = await scenario(on337());
      try {
        const captured = join(s.world.root, 'hooks.jsonl');
        recordHooks(s.world, captured, [
          'PreCompact',
          'PostCompact',
          'SessionStart',
          'UserPromptSubmit',
          'Stop',
          'PostToolUse',
        ]);
        s.server.push(
          { tools: [bash('b-1', 'echo 1')], usage: { input_tokens: 5_000 } },
          { tools: [bash('b-2', 'echo 2')], usage: { input_tokens: 60_000 } },
          { tools: [bash('b-3', 'echo 3')], usage: { input_tokens: 66_000 } },
          { tools: [bash('b-4', 'echo 4')], usage: { input_tokens: 70_000 } },
          { tools: [bash('b-5', 'echo 5')], usage: { input_tokens: 75_000 } },
          { tools: [bash('b-6', 'echo 6')], usage: { input_tokens: 190_000 } },
          'Done.',
          'Done.',
          'Done.',
        );
        const r = await s.world.claude(s.server, ['-p', 'start the task', '--autocompact', '100000']);
        const order = recorded(captured).map(
          (p) => `${p.hook_event_name}${p.trigger ? `(${p.trigger})` : ''}${p.source ? `(${p.source})` : ''}`,
        );
        writeFileSync(
          '/tmp/cc-precompute-order.json',
          JSON.stringify({ code: r.code, order, kinds: s.server.requests.map((q) => q.kind) }, null, 1),
        );
        const debug = readFileSync(join(s.world.root, 'debug-1.log'), 'utf8')
          .split('\n')
          .filter((l) => /precomput|autocompact|compact/i.test(l));
        writeFileSync('/tmp/cc-precompute-debug.txt', debug.join('\n'));
        expect(r.code).toBe(0);
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );
});
