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
  restate,
  resultOf,
  SCENARIO_TIMEOUT_MS,
  type Suite,
  useSuite,
  type World,
  write,
} from './harness.js';
import {
  debugLines,
  endScenario,
  expectOneCapturedBoundary,
  records,
  scenario,
  sessionOf,
  status,
} from './scenario.js';

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
 * lines of `send` (control requests); closes stdin after the turn's result (and `endWhen`).
 * Returns the messages.
 */
function streamJson(
  world: World,
  server: AnthropicServer,
  prompt: string,
  options: {
    ready?: () => boolean;
    send?: unknown[];
    /** Further lines to send, each once its `when` holds (given the results so far), in order. */
    later?: Array<{ when: (results: number) => boolean; lines: unknown[] }>;
    endWhen?: () => boolean;
    debugFile: string;
    /** The turns to wait for (a result each) before closing stdin: 1 plus the user messages in `send`. */
    turns?: number;
    args?: string[];
    env?: NodeJS.ProcessEnv;
    /** The binary (default 2.1.337's). */
    bin?: string;
  },
): Promise<{ messages: StreamMessage[]; code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      options.bin ?? claude337,
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
        ...(options.args ?? []),
      ],
      { cwd: world.project, env: { ...world.env, ANTHROPIC_BASE_URL: server.url, ...options.env } },
    );
    const messages: StreamMessage[] = [];
    let buf = '';
    let stderr = '';
    let finished: number | undefined;
    let results = 0;
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
          if (m.type === 'result' && ++results >= (options.turns ?? 1)) finished = Date.now();
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
    let sent = options.send === undefined;
    const later = [...(options.later ?? [])];
    const poll = setInterval(() => {
      // After the turn's result, stdin stays open until `endWhen` holds (a hook of the turn may
      // still be running; an exiting binary does not wait for it), 20 s at most.
      if (finished !== undefined && ((options.endWhen?.() ?? true) || Date.now() - finished > 20_000))
        child.stdin.end();
      const next = later[0];
      if (sent && next?.when(results)) {
        later.shift();
        for (const x of next.lines) send(x);
      }
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
          endWhen: () => s.world.ledgerRecords().some((x) => x.type === 'activity' && x.state === 'idle'),
          debugFile: join(s.world.root, 'debug-1.log'),
        });
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
        // The stream reports what the hook answered the human; the model's request has none of it.
        const shown = r.messages
          .filter((m) => m.subtype === 'hook_response' && m.hook_event === 'SessionStart')
          .map((m) => JSON.parse(String(m.stdout || '{}')) as { systemMessage?: string })
          .find((o) => o.systemMessage);
        expect(shown?.systemMessage).toContain('.continuity/task.json is still the template');
        expect(shown?.systemMessage).toContain('`continuity task seal`');
        const request = JSON.stringify(s.server.requestsOf('turn')[0]?.body ?? {});
        expect(request).not.toContain('is still the template');
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'past the level where 2.1.337 may write a summary early (the threshold less 20 %), no summary is written beside the turn: the compaction at the threshold is PreCompact(auto) → SessionStart(compact) → PostCompact(auto), one boundary, preserved',
    async () => {
      const s = await scenario(on337());
      try {
        const captured = join(s.world.root, 'hooks.jsonl');
        recordHooks(s.world, captured, ['PreCompact', 'PostCompact', 'SessionStart']);
        s.server.push(
          { tools: [bash('b-1', 'echo 1')], usage: { input_tokens: 5_000 } },
          // 66 000: past the early-summary level (64 000 of the 80 000 window), under the threshold (67 000).
          { tools: [bash('b-2', 'echo 2')], usage: { input_tokens: 66_000 } },
          { tools: [bash('b-3', 'echo 3')], usage: { input_tokens: 66_500 } },
          { tools: [bash('b-4', 'echo 4')], usage: { input_tokens: 190_000 } },
          restate('restate', { ...s.values }),
          'Done.',
        );
        const r = await s.world.claude(s.server, ['-p', 'start the task', '--autocompact', '100000']);
        const sessionId = sessionOf(r);
        const debug = debugLines(s);
        // Where the early summary would start, the binary only warns: with its server-side flags
        // at their defaults it writes none (so it has none to install when the prompt cache expires).
        expect(debug.some((l) => /autocompact: .*level=warn effectiveWindow=80000/.test(l))).toBe(true);
        expect(debug.filter((l) => /precomputed compact/.test(l))).toEqual([]);
        expect(s.server.requestsOf('summary')).toHaveLength(1);
        const order = recorded(captured).map(
          (p) => `${p.hook_event_name}(${String(p.trigger ?? p.source ?? '')})`,
        );
        expect(order).toEqual([
          'SessionStart(startup)',
          'PreCompact(auto)',
          'SessionStart(compact)',
          'PostCompact(auto)',
        ]);
        expect(resultOf(s.server, 'restate')?.text).toContain('preserved (digest_match_fresh)');
        expectOneCapturedBoundary(s, sessionId, 1);
        expect((await status(s, sessionId)).state).toBe('preserved');
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  // 2.1.328 and 2.1.332 know the flag and write the summary the same way (observed); only 2.1.337
  // also installs one when the prompt cache expired. Both lines: 2.1.337 and the one this suite runs.
  for (const [line, bin] of [
    ['2.1.337', () => claude337],
    ["the suite's line", () => suite().claude],
  ] as const) {
    it(
      `with the early-summary flag on (seeded in the config file, as Claude Code caches it), ${line} writes the summary beside the second prompt: PreCompact(auto) per attempt and nothing after it, so the adapter keeps a pending capture: no boundary, no write held`,
      async () => {
        const s = await scenario(on337());
        try {
          const captured = join(s.world.root, 'hooks.jsonl');
          recordHooks(s.world, captured, ['PreCompact', 'PostCompact', 'SessionStart', 'Stop']);
          // Claude Code's server-side flag for summaries written early, where the binary keeps the
          // flag values it fetched (read with telemetry off when told to; the environment overrides
          // are compiled out of the release build).
          const configFile = join(s.world.env.CLAUDE_CONFIG_DIR!, '.claude.json');
          const config = existsSync(configFile) ? JSON.parse(readFileSync(configFile, 'utf8')) : {};
          writeFileSync(
            configFile,
            JSON.stringify({
              ...config,
              cachedGrowthBookFeatures: { tengu_sepia_moth: true },
              cachedGrowthBookFeaturesAt: Date.now(),
            }),
          );
          const big = { input_tokens: 2_000, cache_creation_input_tokens: 240_000 };
          s.server.push(
            { text: 'Started.', usage: big },
            { tools: [write('w-1', s.world.file('one.txt'), 'one\n')], usage: big },
            { text: 'Step done.', usage: big },
          );
          const stops = () => recorded(captured).filter((p) => p.hook_event_name === 'Stop').length;
          const r = await streamJson(s.world, s.server, 'start the task', {
            turns: 2,
            later: [
              {
                when: (n) => n >= 1,
                lines: [{ type: 'user', message: { role: 'user', content: 'go on' } }],
              },
            ],
            endWhen: () => stops() >= 2,
            debugFile: join(s.world.root, 'debug-1.log'),
            // The level where the main conversation starts its summary early (a flag setting).
            args: ['--settings', JSON.stringify({ precomputeArmTokens: 50_000 })],
            env: { CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF: '1' },
            bin: bin(),
          });
          expect(r.code, r.stderr).toBe(0);
          const sessionId = r.messages.find((m) => typeof m.session_id === 'string')?.session_id as string;
          const debug = debugLines(s);
          // Not at the first prompt (an SDK session's single prompt never arms it), at the second.
          expect(
            debug.some((l) => /precomputed compact: arm gated \(main, sdk_single_prompt_gate/.test(l)),
          ).toBe(true);
          expect(debug.some((l) => /precomputed compact: ready \(main/.test(l))).toBe(true);
          // The early summary is a request our server answered; nothing was replaced.
          expect(s.server.requestsOf('summary').length).toBeGreaterThanOrEqual(1);
          expect(r.messages.filter((m) => m.subtype === 'compact_boundary')).toEqual([]);
          const order = recorded(captured)
            .filter((p) => p.hook_event_name !== 'Stop')
            .map((p) => `${p.hook_event_name}(${String(p.trigger ?? p.source ?? '')})`);
          // Each attempt runs PreCompact (here the first bails out with too few messages, the
          // second writes it); no SessionStart(compact), no PostCompact.
          expect(order[0]).toBe('SessionStart(startup)');
          expect(order.length).toBeGreaterThanOrEqual(2);
          expect(new Set(order.slice(1))).toEqual(new Set(['PreCompact(auto)']));
          // The adapter: a pending capture, no boundary, and the write beside it went through.
          expect(records(s, sessionId).filter((x) => x.type === 'boundary')).toEqual([]);
          expect(existsSync(s.world.file('one.txt'))).toBe(true);
        } finally {
          await endScenario(s);
        }
      },
      SCENARIO_TIMEOUT_MS,
    );
  }
});
