/**
 * The Agent SDK adapter without the binary: its callbacks fed the hook inputs and stream messages
 * the real 0.3.328 sends (shapes recorded in /work/explore/agent-sdk/fixtures, values ours), the
 * answers it gives, the restatement tool's handler, the options it merges, the spans through a
 * registered provider, what importing it loads, and that nothing it is given makes it throw.
 * The real package runs in states.test.ts and compaction.test.ts.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { trace } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  type AgentSdkContinuity,
  type AgentSdkHookOutput,
  type AgentSdkToolResult,
  createAgentSdkContinuity,
  isRegisteredProvider,
  RESTATE_TOOL_NAME,
} from '../../src/adapters/claude-agent-sdk/index.js';
import { SUMMARY_INSTRUCTION_PREFIX } from '../../src/adapters/core/messages.js';
import { ATTR_SESSION_ID, SPAN_COMPACTION_PRE } from '../../src/otel/semconv.js';
import { type OtlpReceiver, startOtlpReceiver, TRACES_PATH } from '../support/otlp-receiver.js';
import { BIN, ROOT, run } from './harness.js';

const SIGNAL = { signal: new AbortController().signal };
const VALUES = {
  scope: 'SCOPE-VALUE-7f3a',
  target: 'release/VALUE-2.4',
  acceptance_test: 'npm test -- VALUE-ledger',
};

interface Captured {
  handler: (args: unknown, extra: unknown) => Promise<AgentSdkToolResult>;
  extras: unknown;
  shape: Record<string, unknown>;
}

/** A stand-in for the SDK's two MCP functions that keeps what the adapter passes them. */
function fakeSdk() {
  const tools: Captured[] = [];
  return {
    tools,
    sdk: {
      createSdkMcpServer: (o: { name: string; tools?: unknown[] }) => ({
        type: 'sdk',
        name: o.name,
        instance: o,
      }),
      tool: (
        _n: string,
        _d: string,
        shape: Record<string, unknown>,
        handler: Captured['handler'],
        extras: unknown,
      ) => {
        tools.push({ handler, extras, shape });
        return { name: _n };
      },
    },
  };
}

interface Env {
  root: string;
  project: string;
  state: string;
  env: NodeJS.ProcessEnv;
}

function makeEnv(endpoint: string, taskRecord = true): Env {
  const root = mkdtempSync(join(tmpdir(), 'asdk-unit-'));
  const project = join(root, 'project');
  const state = join(root, 'state');
  mkdirSync(join(project, '.continuity'), { recursive: true });
  if (taskRecord) {
    writeFileSync(
      join(project, '.continuity', 'task.json'),
      JSON.stringify({
        decisions: Object.fromEntries(Object.entries(VALUES).map(([k, v]) => [k, { value: v }])),
      }),
    );
  }
  return {
    root,
    project,
    state,
    env: {
      PATH: '/usr/bin:/bin',
      HOME: root,
      CONTINUITY_STATE_DIR: state,
      CONTINUITY_LEDGER: join(state, 'ledger.jsonl'),
      CONTINUITY_OTLP_ENDPOINT: endpoint,
    },
  };
}

/** The fields 0.3.328 gives every hook input (BaseHookInput as recorded; session and paths ours). */
const base = (sid: string, cwd: string, event: string) => ({
  session_id: sid,
  transcript_path: `${cwd}/t.jsonl`,
  cwd,
  hook_event_name: event,
});

/** The hook inputs 0.3.328 sends, and its compact_boundary stream message. */
const input = {
  preCompact: (sid: string, cwd: string) => ({
    ...base(sid, cwd, 'PreCompact'),
    prompt_id: '6f1c1e7e-1111-4d2a-9c1b-000000000001',
    trigger: 'manual',
    custom_instructions: 'keep SCOPE-VALUE-7f3a in mind',
  }),
  sessionStart: (sid: string, cwd: string) => ({
    ...base(sid, cwd, 'SessionStart'),
    source: 'compact',
    model: 'claude-sonnet-4-5',
  }),
  postCompact: (sid: string, cwd: string) => ({
    ...base(sid, cwd, 'PostCompact'),
    trigger: 'manual',
    compact_summary: '<summary>SCOPE-VALUE-7f3a</summary>',
  }),
  preToolUse: (
    sid: string,
    cwd: string,
    tool: string,
    toolInput: unknown,
    extra: Record<string, unknown> = {},
  ) => ({
    ...base(sid, cwd, 'PreToolUse'),
    permission_mode: 'default',
    tool_name: tool,
    tool_input: toolInput,
    tool_use_id: 'toolu_1',
    ...extra,
  }),
  boundary: (sid: string, pre = 1250, post = 2756) => ({
    type: 'system',
    subtype: 'compact_boundary',
    session_id: sid,
    uuid: '0b5e8f5c-2222-4d2a-9c1b-000000000002',
    compact_metadata: {
      trigger: 'manual',
      pre_tokens: pre,
      post_tokens: post,
      cumulative_dropped_tokens: 0,
      duration_ms: 109,
    },
  }),
};

function ledger(e: Env): Array<Record<string, unknown>> {
  try {
    return readFileSync(join(e.state, 'ledger.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  } catch {
    return [];
  }
}

async function call(
  c: AgentSdkContinuity,
  event: keyof AgentSdkContinuity['hooks'],
  payload: unknown,
  id?: string,
): Promise<AgentSdkHookOutput> {
  return c.hooks[event][0]!.hooks[0]!(payload, id, SIGNAL);
}

function reasonOf(out: AgentSdkHookOutput): { decision: string; reason: string } | undefined {
  const h = (out as { hookSpecificOutput?: { permissionDecision: string; permissionDecisionReason: string } })
    .hookSpecificOutput;
  return h?.permissionDecision
    ? { decision: h.permissionDecision, reason: h.permissionDecisionReason }
    : undefined;
}

let receiver: OtlpReceiver;
beforeAll(async () => {
  receiver = await startOtlpReceiver({ paths: [TRACES_PATH] });
});
afterAll(async () => {
  await receiver.close();
});

describe('createAgentSdkContinuity', () => {
  let e: Env;
  let warnings: string[];
  let fake: ReturnType<typeof fakeSdk>;
  let c: AgentSdkContinuity;
  const SID = '4f0ccb8f-b87e-412a-a189-d460d6d6b1a2';
  beforeEach(() => {
    e = makeEnv(receiver.endpoint);
    warnings = [];
    fake = fakeSdk();
    c = createAgentSdkContinuity({
      projectDir: e.project,
      env: e.env,
      sdk: fake.sdk,
      onWarning: (l) => warnings.push(l),
    });
  });
  afterEach(() => rmSync(e.root, { recursive: true, force: true }));

  it('registers the ten events; only the gate blocks on its own failure', () => {
    expect(Object.keys(c.hooks).sort()).toEqual([
      'InstructionsLoaded',
      'Interrupt',
      'PostCompact',
      'PostToolUse',
      'PostToolUseFailure',
      'PreCompact',
      'PreToolUse',
      'SessionStart',
      'Stop',
      'UserPromptSubmit',
    ]);
    expect(c.hooks.PreToolUse).toEqual([{ hooks: [expect.any(Function)], timeout: 10, onFailure: 'block' }]);
    for (const ev of Object.keys(c.hooks).filter((k) => k !== 'PreToolUse') as Array<
      keyof AgentSdkContinuity['hooks']
    >) {
      expect(c.hooks[ev][0]!.onFailure, ev).toBeUndefined();
      expect(c.hooks[ev][0]!.matcher, ev).toBeUndefined();
    }
  });

  it('activity: a prompt and a tool result are working, Stop and Interrupt idle; only changes reach the ledger', async () => {
    const at = (event: string, extra: Record<string, unknown> = {}) => ({
      ...base(SID, e.project, event),
      ...extra,
    });
    const activity = () =>
      ledger(e)
        .filter((r) => r.type === 'activity')
        .map((r) => r.state);
    await expect(call(c, 'UserPromptSubmit', at('UserPromptSubmit', { prompt: 'go' }))).resolves.toEqual({});
    await call(c, 'PostToolUse', at('PostToolUse', { tool_name: 'Read', tool_input: { file_path: '/p/a' } }));
    expect(activity()).toEqual(['working']);
    await expect(call(c, 'Interrupt', at('Interrupt', { source: 'user', reason: 'stop' }))).resolves.toEqual(
      {},
    );
    expect(activity()).toEqual(['working', 'idle']);
    await call(c, 'UserPromptSubmit', at('UserPromptSubmit', { prompt: 'again' }));
    await call(c, 'Stop', at('Stop', { stop_hook_active: false }));
    expect(activity()).toEqual(['working', 'idle', 'working', 'idle']);
    expect(warnings).toEqual([]);
  });

  it('PreCompact answers only a systemMessage naming the decisions, never a value, and records nothing yet', async () => {
    const out = await call(c, 'PreCompact', input.preCompact(SID, e.project));
    expect(Object.keys(out)).toEqual(['systemMessage']);
    const text = (out as { systemMessage: string }).systemMessage;
    expect(text.startsWith(SUMMARY_INSTRUCTION_PREFIX)).toBe(true);
    for (const n of Object.keys(VALUES)) expect(text).toContain(`"${n}"`);
    for (const v of Object.values(VALUES)) expect(text).not.toContain(v);
    // A pre capture is pending until a compaction confirms it: nothing in the ledger, writes allowed.
    expect(ledger(e)).toEqual([]);
    expect(
      await call(c, 'PreToolUse', input.preToolUse(SID, e.project, 'Write', { file_path: `${e.project}/a` })),
    ).toEqual({});
  });

  it('confirms at SessionStart(compact), asks to restate once, joins PostCompact and compact_boundary with its numbers', async () => {
    await call(c, 'PreCompact', input.preCompact(SID, e.project));
    const ss = await call(c, 'SessionStart', input.sessionStart(SID, e.project));
    const ctx = (ss as { hookSpecificOutput: { hookEventName: string; additionalContext: string } })
      .hookSpecificOutput;
    expect(ctx.hookEventName).toBe('SessionStart');
    expect(ctx.additionalContext).toContain(`observe --session ${SID} --decisions -`);
    expect(ctx.additionalContext).toContain(`restate with the tool ${RESTATE_TOOL_NAME}`);
    for (const v of Object.values(VALUES)) expect(ctx.additionalContext).not.toContain(v);
    expect(await call(c, 'PostCompact', input.postCompact(SID, e.project))).toEqual({});
    await c.onMessage(input.boundary(SID));
    // The same SessionStart again (delivered twice) asks nothing more.
    expect(await call(c, 'SessionStart', input.sessionStart(SID, e.project))).toEqual({});
    const types = ledger(e).map((r) => `${r.type}${r.phase ? `:${r.phase}` : ''}`);
    expect(types).toEqual(['snapshot:pre', 'boundary', 'boundary']);
    const [, first, second] = ledger(e);
    expect(first!.runtime).toBe('claude-agent-sdk');
    expect(second).toMatchObject({
      boundaryId: first!.boundaryId,
      tokensBefore: 1250,
      tokensAfter: 2756,
      trigger: 'manual',
    });
    expect(JSON.stringify(ledger(e))).not.toContain('SCOPE-VALUE');
  });

  it('a compact_boundary with no hook before it opens a boundary whose pre is missing: the gate asks', async () => {
    await c.onMessage(input.boundary(SID, 95_135, 2_925));
    expect(ledger(e).map((r) => `${r.type}${r.phase ? `:${r.phase}` : ''}`)).toEqual([
      'evidence_missing:pre',
      'boundary',
    ]);
    expect(ledger(e)[1]).toMatchObject({ tokensBefore: 95_135, tokensAfter: 2_925 });
    const out = reasonOf(
      await call(c, 'PreToolUse', input.preToolUse(SID, e.project, 'Write', { file_path: `${e.project}/a` })),
    );
    expect(out?.decision).toBe('ask');
    expect(out?.reason).toContain('pre_snapshot_missing');
  });

  it('the gate: deny with the words (and the tool) after a compaction; `continuity approve` refused; the restate tool always passes', async () => {
    await call(c, 'PreCompact', input.preCompact(SID, e.project));
    await call(c, 'SessionStart', input.sessionStart(SID, e.project));
    const w = reasonOf(
      await call(c, 'PreToolUse', input.preToolUse(SID, e.project, 'Write', { file_path: `${e.project}/a` })),
    );
    expect(w?.decision).toBe('deny');
    expect(w?.reason).toContain('Blocked by the continuity gate (unverified: post_observation_missing)');
    expect(w?.reason).toContain(RESTATE_TOOL_NAME);
    const approve = reasonOf(
      await call(
        c,
        'PreToolUse',
        input.preToolUse(SID, e.project, 'Bash', { command: 'continuity approve --session x' }),
      ),
    );
    expect(approve?.decision).toBe('deny');
    expect(approve?.reason).toContain('approvals come from a human');
    const restate = input.preToolUse(
      SID,
      e.project,
      RESTATE_TOOL_NAME,
      { decisions: {} },
      {
        mcp_server: { name: 'continuity', source: 'sdk' },
      },
    );
    expect(await call(c, 'PreToolUse', restate, 'toolu_1')).toEqual({});
    // Read is not a gated tool.
    expect(
      await call(c, 'PreToolUse', input.preToolUse(SID, e.project, 'Read', { file_path: '/etc/hosts' })),
    ).toEqual({});
  });

  it('the restate tool: the session from its PreToolUse, the verdict in words; bad input is an error naming the field', async () => {
    expect(fake.tools).toHaveLength(1);
    expect(fake.tools[0]!.extras).toEqual({ alwaysLoad: true });
    expect(Object.keys(fake.tools[0]!.shape)).toEqual(['decisions']);
    expect(c.allowedTools).toEqual([RESTATE_TOOL_NAME]);
    await call(c, 'PreCompact', input.preCompact(SID, e.project));
    await call(c, 'SessionStart', input.sessionStart(SID, e.project));
    await call(
      c,
      'PreToolUse',
      input.preToolUse(
        SID,
        e.project,
        RESTATE_TOOL_NAME,
        {},
        { mcp_server: { name: 'continuity', source: 'sdk' } },
      ),
      'toolu_restate',
    );
    const extra = { _meta: { 'claudecode/toolUseId': 'toolu_restate', progressToken: 2 }, requestId: 2 };
    const bad = await fake.tools[0]!.handler({ decisions: { 'Not A Name': 1 } }, extra);
    expect(bad.isError).toBe(true);
    expect(bad.content[0]!.text).toContain('Not A Name');
    const ok = await fake.tools[0]!.handler({ decisions: { ...VALUES } }, extra);
    expect(ok.isError).toBeUndefined();
    expect(ok.content[0]!.text).toContain(`preserved (digest_match_fresh) for session ${SID}`);
    expect(
      await call(c, 'PreToolUse', input.preToolUse(SID, e.project, 'Write', { file_path: `${e.project}/a` })),
    ).toEqual({});
    const post = ledger(e).find((r) => r.type === 'snapshot' && r.phase === 'post');
    expect(post).toMatchObject({ runtime: 'claude-agent-sdk', sessionId: SID });
    expect(JSON.stringify(ledger(e))).not.toContain('VALUE');
  });

  it('a tool named like ours from a server that is not this process’s in-process one is gated like any other', async () => {
    const star = createAgentSdkContinuity({
      projectDir: e.project,
      env: { ...e.env, CONTINUITY_GATE_TOOLS: '*' },
      sdk: fake.sdk,
      onWarning: () => {},
    });
    await call(star, 'PreCompact', input.preCompact(SID, e.project));
    await call(star, 'SessionStart', input.sessionStart(SID, e.project));
    const impostor = input.preToolUse(
      SID,
      e.project,
      RESTATE_TOOL_NAME,
      {},
      { mcp_server: { name: 'continuity', source: 'project' } },
    );
    expect(reasonOf(await call(star, 'PreToolUse', impostor))?.decision).toBe('deny');
    const ours = input.preToolUse(
      SID,
      e.project,
      RESTATE_TOOL_NAME,
      {},
      { mcp_server: { name: 'continuity', source: 'sdk' } },
    );
    expect(await call(star, 'PreToolUse', ours)).toEqual({});
  });

  it('when the gate cannot reach a verdict it asks, whether or not this process saw a compaction', async () => {
    const write = input.preToolUse(SID, e.project, 'Write', { file_path: `${e.project}/a` });
    // Nothing seen in this process, but neither the state nor the ledger can be read: an earlier
    // process of the same session may have left a compaction unresolved, so a human looks first.
    rmSync(e.state, { recursive: true, force: true });
    writeFileSync(e.state, 'not a directory');
    const unknown = reasonOf(await call(c, 'PreToolUse', write));
    expect(unknown?.decision).toBe('ask');
    expect(unknown?.reason).toContain('could not read this session');
    rmSync(e.state, { force: true });
    await call(c, 'PreCompact', input.preCompact(SID, e.project));
    await call(c, 'SessionStart', input.sessionStart(SID, e.project));
    rmSync(e.state, { recursive: true, force: true });
    writeFileSync(e.state, 'not a directory');
    const out = reasonOf(await call(c, 'PreToolUse', write));
    expect(out?.decision).toBe('ask');
    expect(out?.reason).toContain('The continuity gate asks a human first');
    expect(warnings.join('\n')).not.toContain(e.root);
  });

  it('never throws, whatever it is given', async () => {
    const junk = [
      undefined,
      null,
      42,
      'PreCompact',
      [],
      {},
      { hook_event_name: 'PreCompact' },
      { session_id: 'a b' },
    ];
    for (const ev of Object.keys(c.hooks) as Array<keyof AgentSdkContinuity['hooks']>) {
      for (const j of junk) await expect(call(c, ev, j)).resolves.toEqual({});
    }
    for (const j of [...junk, { type: 'system', subtype: 'compact_boundary', session_id: '../x' }]) {
      await expect(c.onMessage(j)).resolves.toBeUndefined();
    }
    await expect(fake.tools[0]!.handler(undefined, undefined)).resolves.toMatchObject({ isError: true });
    expect(ledger(e)).toEqual([]);
  });

  it('options(): merges after what the application has and keeps everything else', () => {
    const own = { hooks: [async () => ({})] };
    const merged = c.options({
      cwd: '/p',
      hooks: { PreToolUse: [own], Stop: [own] },
      mcpServers: { other: { type: 'stdio' } },
      allowedTools: ['Read'],
    });
    expect(merged.cwd).toBe('/p');
    expect(merged.hooks!.PreToolUse).toEqual([own, ...c.hooks.PreToolUse]);
    expect(merged.hooks!.Stop).toEqual([own, ...c.hooks.Stop]);
    expect((merged.hooks as Record<string, unknown>).PreCompact).toEqual(c.hooks.PreCompact);
    expect(Object.keys(merged.mcpServers!)).toEqual(['other', 'continuity']);
    expect(merged.allowedTools).toEqual(['Read', RESTATE_TOOL_NAME]);
    expect(c.options({ allowedTools: [RESTATE_TOOL_NAME] }).allowedTools).toEqual([RESTATE_TOOL_NAME]);
    const bare = createAgentSdkContinuity({ projectDir: e.project, env: e.env });
    expect(bare.mcpServers).toEqual({});
    expect(bare.options({ allowedTools: ['Read'] })).toEqual({ allowedTools: ['Read'], hooks: bare.hooks });
  });

  it('watch(): yields every message unchanged, after reading it', async () => {
    await call(c, 'PreCompact', input.preCompact(SID, e.project));
    async function* stream() {
      yield { type: 'system', subtype: 'init', session_id: SID };
      yield input.boundary(SID);
      yield { type: 'result', subtype: 'success', session_id: SID };
    }
    const seen: unknown[] = [];
    for await (const m of c.watch(stream())) {
      seen.push(m);
      if ((m as { subtype?: string }).subtype === 'compact_boundary')
        expect(ledger(e).length).toBeGreaterThan(0);
    }
    expect(seen.map((m) => (m as { subtype: string }).subtype)).toEqual([
      'init',
      'compact_boundary',
      'success',
    ]);
  });
});

describe('continuity observe for an Agent SDK session', () => {
  const SID = '8d0ccb8f-b87e-412a-a189-d460d6d6b1a6';

  const cli = (args: string[], e: Env, stdin: string) =>
    run(process.execPath, [BIN, ...args], { env: e.env, cwd: e.project, input: stdin });

  it('takes the runtime from the session’s boundary in the ledger, and the adapter’s gate sees it', async () => {
    const e = makeEnv(receiver.endpoint);
    try {
      const c = createAgentSdkContinuity({ projectDir: e.project, env: e.env, onWarning: () => {} });
      await call(c, 'PreCompact', input.preCompact(SID, e.project));
      await call(c, 'SessionStart', input.sessionStart(SID, e.project));
      const bad = await cli(['observe', '--session', SID, '--runtime', 'nope', '--decisions', '-'], e, '{}');
      expect(bad.status).toBe(2);
      expect(bad.stderr).toContain('unknown runtime "nope"; expected claude-code, claude-agent-sdk, codex');
      // As the agent's Bash tool runs it without --session: the SDK's shell has CLAUDE_CODE_SESSION_ID.
      const shell = { ...e, env: { ...e.env, CLAUDE_CODE_SESSION_ID: SID } };
      const r = await cli(['observe', '--decisions', '-'], shell, JSON.stringify(VALUES));
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toContain('preserved (digest_match_fresh)');
      const post = ledger(e).find((x) => x.type === 'snapshot' && x.phase === 'post');
      expect(post?.runtime).toBe('claude-agent-sdk');
      expect(
        await call(
          c,
          'PreToolUse',
          input.preToolUse(SID, e.project, 'Write', { file_path: `${e.project}/a` }),
        ),
      ).toEqual({});
    } finally {
      rmSync(e.root, { recursive: true, force: true });
    }
  });
});

describe('spans', () => {
  const SID = '5a0ccb8f-b87e-412a-a189-d460d6d6b1a3';
  afterEach(() => trace.disable());

  it('isRegisteredProvider tells the API’s no-op global from a registered provider', () => {
    expect(isRegisteredProvider(trace.getTracerProvider())).toBe(false);
    trace.setGlobalTracerProvider(new BasicTracerProvider());
    expect(isRegisteredProvider(trace.getTracerProvider())).toBe(true);
  });

  it('go through the registered provider, not over OTLP; over OTLP without one', async () => {
    const exporter = new InMemorySpanExporter();
    trace.setGlobalTracerProvider(
      new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
    );
    const e = makeEnv(receiver.endpoint);
    try {
      const c = createAgentSdkContinuity({ projectDir: e.project, env: e.env, onWarning: () => {} });
      await call(c, 'PreCompact', input.preCompact(SID, e.project));
      await call(c, 'SessionStart', input.sessionStart(SID, e.project));
      const pre = exporter.getFinishedSpans().filter((s) => s.name === SPAN_COMPACTION_PRE);
      expect(pre).toHaveLength(1);
      expect(pre[0]!.attributes[ATTR_SESSION_ID]).toBe(SID);
      expect(receiver.spans.filter((s) => s.attributes[ATTR_SESSION_ID] === SID)).toEqual([]);

      trace.disable();
      const other = '6b0ccb8f-b87e-412a-a189-d460d6d6b1a4';
      await call(c, 'PreCompact', input.preCompact(other, e.project));
      await call(c, 'SessionStart', input.sessionStart(other, e.project));
      expect(
        receiver.spans.filter((s) => s.attributes[ATTR_SESSION_ID] === other).map((s) => s.name),
      ).toEqual([SPAN_COMPACTION_PRE]);
    } finally {
      rmSync(e.root, { recursive: true, force: true });
    }
  });
});

describe('importing agent-continuity/claude-agent-sdk', () => {
  // A resolve hook that refuses the SDK and OpenTelemetry, as in an application that has neither.
  const BLOCK = `export async function resolve(s, c, n) {
    if (s.startsWith('@anthropic-ai/') || s.startsWith('@opentelemetry/')) {
      throw Object.assign(new Error('not installed: ' + s), { code: 'ERR_MODULE_NOT_FOUND' });
    }
    return n(s, c);
  }`;
  const REGISTER = `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(BLOCK)}`)});`;

  const node = (script: string, env: NodeJS.ProcessEnv) =>
    run(
      process.execPath,
      [
        '--import',
        `data:text/javascript,${encodeURIComponent(REGISTER)}`,
        '--input-type=module',
        '-e',
        script,
      ],
      { cwd: ROOT, env: { PATH: process.env.PATH, ...env } },
    );

  it('loads neither the SDK nor OpenTelemetry, and without OpenTelemetry its spans go over OTLP', async () => {
    const e = makeEnv(receiver.endpoint);
    const sid = '7c0ccb8f-b87e-412a-a189-d460d6d6b1a5';
    try {
      const script = `
        const m = await import('agent-continuity/claude-agent-sdk');
        const c = m.createAgentSdkContinuity({ projectDir: process.env.P, env: process.env, onWarning: () => {} });
        const base = { session_id: '${sid}', transcript_path: '/t', cwd: process.env.P };
        const s = { signal: new AbortController().signal };
        const pre = await c.hooks.PreCompact[0].hooks[0]({ ...base, hook_event_name: 'PreCompact', trigger: 'auto', custom_instructions: null }, undefined, s);
        await c.hooks.SessionStart[0].hooks[0]({ ...base, hook_event_name: 'SessionStart', source: 'compact' }, undefined, s);
        console.log(JSON.stringify({ exports: Object.keys(m).sort(), pre: Object.keys(pre) }));`;
      const r = await node(script, { ...e.env, P: e.project });
      expect(r.status, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout) as { exports: string[]; pre: string[] };
      expect(out.exports).toContain('createAgentSdkContinuity');
      expect(out.pre).toEqual(['systemMessage']);
      expect(receiver.spans.filter((s) => s.attributes[ATTR_SESSION_ID] === sid).map((s) => s.name)).toEqual([
        SPAN_COMPACTION_PRE,
      ]);
    } finally {
      rmSync(e.root, { recursive: true, force: true });
    }
  });
});
