/**
 * GitHub Copilot CLI 1.0.102 on its real binary (issue 29), in bring-your-own-key offline mode
 * against our scripted chat-completions server: `continuity init copilot`'s hooks
 * (`.github/hooks/continuity.json`, Claude Code's format) through a real background compaction
 * (usage over 80 % of `COPILOT_PROVIDER_MAX_PROMPT_TOKENS`).
 *
 * Copilot has no post-compaction hook: the compaction is confirmed by the next hook of the session
 * from Copilot's own records, its checkpoint file (written as the compaction is applied) or its
 * event log (`session.compaction_complete`, success; written on a debounce, so often after that
 * hook ran). Copilot makes the summary in the background and applies it at the next turn: the
 * agent's shell waits (bounded) before the scripted writes, so the summary is ready by then.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ATTR_RUNTIME } from '../../src/otel/semconv.js';
import { type AgentWorld, agentWorld, onlySession } from '../support/agent-e2e.js';
import { boundaryIdsOf, humanApproves, sessionRecords, statusOf } from '../support/evidence.js';
import {
  type ChatServer,
  messageText,
  type RecordedRequest,
  type ReplyStep,
  type Step,
  startChatServer,
} from '../support/openai-chat-server.js';
import { type OtlpReceiver, startOtlpReceiver } from '../support/otlp-receiver.js';
import { ensureNpmPeer, PEERS, peerCacheRoot } from '../support/peers.js';
import { type Run, run, slots } from '../support/processes.js';
import { widened } from '../support/task.js';
import { BIN } from '../support/world.js';

const INSTALL_TIMEOUT_MS = 15 * 60_000;
const SCENARIO_TIMEOUT_MS = 240_000;
/** The context limit Copilot measures against, and a usage over its 80 % background threshold. */
const MAX_PROMPT_TOKENS = 20_000;
const OVER_THRESHOLD = { prompt_tokens: 17_000, completion_tokens: 10 };
/** A model id for which Copilot offers its `create` and `edit` tools (gpt models get `apply_patch`). */
const MODEL = 'claude-sonnet-4.5';

let copilot: string | undefined;
let receiver: OtlpReceiver | undefined;
beforeAll(async () => {
  copilot = (await ensureNpmPeer(PEERS.copilot)).bin;
  receiver = await startOtlpReceiver();
}, INSTALL_TIMEOUT_MS);
afterAll(async () => {
  await receiver?.close();
});

const withSlot = slots(Number(process.env.CONTINUITY_E2E_CONCURRENCY) || 2);

interface World extends AgentWorld {
  copilot(server: ChatServer, prompt: string, resume?: string): Promise<Run>;
}

/**
 * `inits`: the `continuity init` runtimes the project has (`claude-code`: the hooks Copilot loads
 * from `.claude/settings.json`). `launcher`: `command` (default), init's `--command` with this
 * checkout's bin; `project`, agent-continuity installed in the project and not on PATH, init run
 * from it without `--command` (the hooks run the project's own installation); `machine`, neither
 * installed nor on PATH, init run without `--command` (the hooks run this checkout's path).
 */
async function makeWorld(
  inits: readonly string[] = ['copilot'],
  launcher: 'command' | 'project' | 'machine' = 'command',
): Promise<World> {
  if (!copilot || !receiver) throw new Error('the Copilot suite did not start (see the beforeAll error)');
  const bin = copilot;
  const w = await agentWorld({
    name: 'copilot-e2e',
    otlpEndpoint: receiver.endpoint,
    inits,
    env: {
      // Copilot unpacks its JavaScript under XDG_CACHE_HOME on first run: once, in the peer cache.
      XDG_CACHE_HOME: join(peerCacheRoot(), 'copilot-unpacked'),
      COPILOT_OFFLINE: 'true',
      COPILOT_PROVIDER_TYPE: 'openai',
      COPILOT_MODEL: MODEL,
      COPILOT_PROVIDER_MAX_PROMPT_TOKENS: String(MAX_PROMPT_TOKENS),
      COPILOT_ALLOW_ALL: 'true',
      COPILOT_AUTO_UPDATE: 'false',
    },
    launcher,
  });
  return {
    ...w,
    copilot: (server, prompt, resume) =>
      withSlot(() =>
        run(bin, [...(resume ? [`--resume=${resume}`] : []), '-p', prompt, '--allow-all-tools'], {
          env: { ...w.env, COPILOT_PROVIDER_BASE_URL: server.url },
          cwd: w.project,
          timeoutMs: 180_000,
        }),
      ),
  };
}

function requestText(request: RecordedRequest): string {
  return (request.body?.messages ?? []).map(messageText).join('\n');
}

function bash(id: string, command: string, usage?: ReplyStep['usage']): ReplyStep {
  return {
    toolCalls: [{ name: 'bash', id, args: { command, description: id } }],
    ...(usage ? { usage } : {}),
  };
}

function create(id: string, path: string, text: string): ReplyStep {
  return { toolCalls: [{ name: 'create', id, args: { path, file_text: text } }] };
}

/**
 * Waits (bounded) for the background compaction: its record reaches the event log only once it is
 * applied at the next turn, so the loop usually runs to its bound (10 s), time enough for the
 * summary; a Copilot that logs it sooner ends the wait sooner.
 */
const WAIT_FOR_COMPACTION = bash(
  'wait',
  `for i in $(seq 100); do grep -qs '"session.compaction_complete"' "$HOME"/.copilot/session-state/*/events.jsonl && break; sleep 0.1; done`,
);

/** Restates with the command the gate's answer printed (found in the request). */
function restate(id: string, values: Record<string, unknown>): Step {
  return (request) => {
    const m = /^(.*\bobserve --session \S+ --decisions - <<'EOF')$/m.exec(requestText(request));
    if (!m) throw new Error('no restatement command in the request');
    return bash(id, `${m[1]}\n${JSON.stringify(values)}\nEOF`);
  };
}

function resultOf(server: ChatServer, id: string): string | undefined {
  for (const r of server.requests) {
    for (const m of r.body?.messages ?? [])
      if (m.role === 'tool' && m.tool_call_id === id) return messageText(m);
  }
  return undefined;
}

/** A background compaction, a held write, the restatement of `restated`, and a write after it. */
async function compactThenRestate(w: World, restated: Record<string, unknown>, extra: Step[] = []) {
  const server = await startChatServer({
    steps: [
      bash('before', 'echo before > before.txt', OVER_THRESHOLD),
      WAIT_FOR_COMPACTION,
      create('w-first', w.file('first.txt'), 'before restating\n'),
      restate('restate', restated),
      create('w-after', w.file('after.txt'), 'after restating\n'),
      ...extra,
      { text: 'Done.' },
    ],
    summary: '## Summary\nThe scripted task.',
  });
  try {
    const r = await w.copilot(server, 'Work on the task.');
    expect(r.status, r.stderr).toBe(0);
    expect(server.requests.some((q) => q.kind === 'summary')).toBe(true);
    // The write after the compaction waits for the restatement, whose command the answer names.
    expect(existsSync(w.file('first.txt'))).toBe(false);
    expect(resultOf(server, 'w-first')).toContain('(unverified: post_observation_missing)');
    const sessionId = onlySession(w);
    const ids = boundaryIdsOf(sessionRecords(w.ledgerRecords(), sessionId));
    expect(ids).toHaveLength(1);
    expect(ids[0]).toMatch(/^cp-/);
    return { server, sessionId };
  } finally {
    await server.close();
  }
}

describe.concurrent('GitHub Copilot CLI on the real binary', () => {
  it(
    'a background compaction confirmed from Copilot’s own records; a conflicting restatement stops the write; self-approval refused; a human approval releases it',
    async () => {
      const w = await makeWorld();
      try {
        const changed = widened(w.values);
        const { server, sessionId } = await compactThenRestate(w, { ...changed }, [
          bash(
            'self-approve',
            `continuity approve --session SESSION --decision scope --from '"a"' --to '"b"' --ref self --by agent`,
          ),
        ]);
        expect(resultOf(server, 'restate')).toContain('conflicting (unapproved_change)');
        expect(resultOf(server, 'w-after')).toContain('(conflicting: unapproved_change)');
        expect(existsSync(w.file('after.txt'))).toBe(false);
        expect(resultOf(server, 'self-approve')).toContain('approvals come from a human');
        expect(w.ledgerRecords().filter((x) => x.type === 'approval')).toHaveLength(0);
        const st = await statusOf(w.continuity, sessionId);
        expect([st.state, st.reason, st.trigger]).toEqual(['conflicting', 'unapproved_change', 'auto']);

        await humanApproves(w.continuity, sessionId, {
          decision: 'scope',
          from: w.values.scope,
          to: changed.scope,
          ref: 'CHG-9',
        });
        const next = await startChatServer({
          steps: [create('w-approved', w.file('approved.txt'), 'approved\n'), { text: 'Done.' }],
        });
        try {
          const r = await w.copilot(next, 'Go on.', sessionId);
          expect(r.status, r.stderr).toBe(0);
        } finally {
          await next.close();
        }
        expect(existsSync(w.file('approved.txt'))).toBe(true);
        expect((await statusOf(w.continuity, sessionId)).state).toBe('approved_change');
        const spans = receiver!.spans.filter((x) => x.attributes['session.id'] === sessionId);
        const compaction = spans.filter((x) => x.name.startsWith('continuity.compaction'));
        expect(compaction.length).toBeGreaterThan(0);
        for (const x of compaction) expect(x.attributes[ATTR_RUNTIME]).toBe('copilot');
      } finally {
        w.dispose();
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'a preserved restatement lets the write through',
    async () => {
      const w = await makeWorld();
      try {
        const { server, sessionId } = await compactThenRestate(w, { ...w.values });
        expect(resultOf(server, 'restate')).toContain('preserved (digest_match_fresh)');
        expect(existsSync(w.file('after.txt'))).toBe(true);
        const st = await statusOf(w.continuity, sessionId);
        expect([st.state, st.trigger]).toEqual(['preserved', 'auto']);
      } finally {
        w.dispose();
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'a compaction cancelled when the session ends (no checkpoint, outcome cancelled) opens no boundary: the next session writes',
    async () => {
      const w = await makeWorld();
      try {
        // The session ends before the summary comes back: Copilot cancels the compaction.
        const server = await startChatServer({
          steps: [bash('before', 'echo before > before.txt', OVER_THRESHOLD), { text: 'Done.' }],
          summaryDelayMs: 8000,
        });
        let sessionId: string;
        try {
          const r = await w.copilot(server, 'Work on the task.');
          expect(r.status, r.stderr).toBe(0);
          sessionId = onlySession(w);
        } finally {
          await server.close();
        }
        const dir = join(w.file('..'), 'home', '.copilot', 'session-state', sessionId);
        const completes = readFileSync(join(dir, 'events.jsonl'), 'utf8')
          .split('\n')
          .filter((l) => l.includes('"type":"session.compaction_complete"'))
          .map((l) => JSON.parse(l).data as { success: boolean; outcome: string });
        expect(completes.map((c) => [c.success, c.outcome])).toEqual([[false, 'cancelled']]);
        expect(readdirSync(join(dir, 'checkpoints')).filter((n) => /^[0-9]+-/.test(n))).toEqual([]);

        const next = await startChatServer({
          steps: [create('w-next', w.file('next.txt'), 'next\n'), { text: 'Done.' }],
        });
        try {
          const r = await w.copilot(next, 'Go on.', sessionId);
          expect(r.status, r.stderr).toBe(0);
        } finally {
          await next.close();
        }
        expect(existsSync(w.file('next.txt'))).toBe(true);
        expect(boundaryIdsOf(sessionRecords(w.ledgerRecords(), sessionId))).toEqual([]);
      } finally {
        w.dispose();
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'with only `init claude-code` whose hooks run the project\'s installation ("$CLAUDE_PROJECT_DIR"/node_modules/.bin/continuity), and `init copilot` likewise: the compaction confirmed, the first write held, a preserved restatement releases it',
    async () => {
      const w = await makeWorld(['claude-code', 'copilot'], 'project');
      try {
        const launcher = '"$CLAUDE_PROJECT_DIR"/node_modules/.bin/continuity';
        for (const [file, runtime] of [
          ['.claude/settings.json', 'claude-code'],
          ['.github/hooks/continuity.json', 'copilot'],
        ] as const) {
          expect(readFileSync(w.file(file), 'utf8')).toContain(
            JSON.stringify(`${launcher} hook ${runtime}`).slice(1, -1),
          );
        }
        const { server, sessionId } = await compactThenRestate(w, { ...w.values });
        expect(resultOf(server, 'restate')).toContain('preserved (digest_match_fresh)');
        expect(existsSync(w.file('after.txt'))).toBe(true);
        const st = await statusOf(w.continuity, sessionId);
        expect([st.state, st.trigger]).toEqual(['preserved', 'auto']);
      } finally {
        w.dispose();
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'with only `init claude-code` (Copilot loads .claude/settings.json): the compaction is confirmed from Copilot’s records, the first write held, a preserved restatement releases it',
    async () => {
      const w = await makeWorld(['claude-code']);
      try {
        expect(existsSync(w.file('.github/hooks/continuity.json'))).toBe(false);
        const { server, sessionId } = await compactThenRestate(w, { ...w.values });
        expect(resultOf(server, 'restate')).toContain('preserved (digest_match_fresh)');
        expect(existsSync(w.file('after.txt'))).toBe(true);
        const st = await statusOf(w.continuity, sessionId);
        expect([st.state, st.trigger]).toEqual(['preserved', 'auto']);
        // Recorded as Copilot's, in the ledger and on the spans.
        const runtimes = sessionRecords(w.ledgerRecords(), sessionId).map((r) => r.runtime);
        expect(new Set(runtimes.filter((r) => r !== undefined))).toEqual(new Set(['copilot']));
        const spans = receiver!.spans.filter(
          (x) => x.attributes['session.id'] === sessionId && x.name.startsWith('continuity.compaction'),
        );
        expect(spans.length).toBeGreaterThan(0);
        for (const x of spans) expect(x.attributes[ATTR_RUNTIME]).toBe('copilot');
      } finally {
        w.dispose();
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'with both `init claude-code` and `init copilot`: one boundary per compaction, held once, released by one restatement',
    async () => {
      const w = await makeWorld(['claude-code', 'copilot']);
      try {
        const { server } = await compactThenRestate(w, { ...w.values });
        expect(resultOf(server, 'restate')).toContain('preserved (digest_match_fresh)');
        expect(existsSync(w.file('after.txt'))).toBe(true);
      } finally {
        w.dispose();
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    "init copilot without a portable launcher: this machine's path goes into .github/hooks/continuity.local.json (git-ignored), which Copilot loads: the compaction captured, the first write held",
    async () => {
      const w = await makeWorld(['copilot'], 'machine');
      try {
        expect(existsSync(w.file('.github/hooks/continuity.json'))).toBe(false);
        expect(readFileSync(w.file('.github/hooks/continuity.local.json'), 'utf8')).toContain(
          `node ${BIN} hook copilot`,
        );
        expect(readFileSync(w.file('.gitignore'), 'utf8')).toContain('/.github/hooks/continuity.local.json');
        await compactThenRestate(w, { ...w.values });
        const r = await w.continuity(['init', 'copilot', '--remove']);
        expect(r.status, r.stderr).toBe(0);
        expect(existsSync(w.file('.github/hooks/continuity.local.json'))).toBe(false);
      } finally {
        w.dispose();
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it('init --remove deletes the hooks file it created', async () => {
    const w = await makeWorld();
    try {
      expect(existsSync(w.file('.github/hooks/continuity.json'))).toBe(true);
      const r = await w.continuity(['init', 'copilot', '--remove']);
      expect(r.status, r.stderr).toBe(0);
      expect(existsSync(w.file('.github/hooks/continuity.json'))).toBe(false);
    } finally {
      w.dispose();
    }
  });
});
