/**
 * Secret-shaped session ids are never written or exported anywhere (issue 26). An id like
 * `sk-ant-…`, `ghp_…` or `AKIA…` was refused by the ledger but written to the gate cache, the
 * project index, the spool and the `session_id` label of `continuity_needs_human`, and echoed by
 * `observe`. One definition (`SECRET_SHAPES` in src/decision/rules.ts, through the opaque-id
 * pattern) now refuses it where an id is taken; this table runs each sink for real and looks for
 * the id in everything it wrote, printed, exported and served.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPAQUE_ID_PATTERN, SECRET_SHAPE_PATTERN } from '../../src/decision/rules.js';
import { checkString } from '../../src/ledger/guard.js';
import { snapshotAttributes } from '../../src/otel/attributes.js';
import { SPAN_COMPACTION_POST, SPAN_COMPACTION_PRE } from '../../src/otel/semconv.js';
import { encodeTraceRequest, type OtlpSpan } from '../../src/otlp/index.js';
import {
  gate,
  hook,
  makeWorld,
  PAYMENTS_DECISIONS,
  type Receiver,
  type Run,
  runCli,
  startReceiver,
  type World,
  writeTaskRecord,
} from '../claude-code/harness.js';
import {
  type Downstream,
  httpGet,
  otlpSpan,
  post,
  type ServeProcess,
  startDownstream,
  startServe,
  tempDir,
} from './harness.js';

const SECRETS = [
  `sk-ant-api03-${'Ab1'.repeat(12)}`,
  `ghp_${'aB3dE'.repeat(6)}`,
  'AKIAIOSFODNN7EXAMPLE',
] as const;

/** Every file under `dir`, as text. */
function filesUnder(dir: string): Array<{ path: string; text: string }> {
  const out: Array<{ path: string; text: string }> = [];
  const walk = (d: string) => {
    let names: string[];
    try {
      names = readdirSync(d);
    } catch {
      return;
    }
    for (const name of names) {
      const p = join(d, name);
      const st = statSync(p);
      if (st.isDirectory()) walk(p);
      else if (st.isFile()) out.push({ path: p, text: readFileSync(p).toString('latin1') });
    }
  };
  walk(dir);
  return out;
}

function holding(secret: string, texts: ReadonlyArray<{ where: string; text: string }>): string[] {
  return texts.filter((t) => t.text.includes(secret)).map((t) => t.where);
}

describe('the one definition of secret-shaped', () => {
  it.each(SECRETS)('%s is secret-shaped for the ledger guard and not an opaque id', (s) => {
    expect(SECRET_SHAPE_PATTERN.test(s)).toBe(true);
    expect(checkString(s)?.kind).toBe('secret');
    expect(OPAQUE_ID_PATTERN.test(s)).toBe(false);
  });
  it.each([
    '4f1c2d3e-aaaa-bbbb-cccc-1234567890ab',
    'ses_0123456789abCDEFGHIJKLMNopqr',
    'run-42',
    'task-sk-1',
  ])('%s stays a usable id', (s) => {
    expect(OPAQUE_ID_PATTERN.test(s)).toBe(true);
  });
});

describe('hooks, observe and the spool never write or print a secret-shaped session id', () => {
  let receiver: Receiver;
  const worlds: World[] = [];
  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(async () => {
    for (const w of worlds) w.dispose();
    await receiver?.close();
  });

  it.each(SECRETS)(
    '%s',
    async (secret) => {
      const world = makeWorld(receiver.endpoint);
      worlds.push(world);
      writeTaskRecord(world, PAYMENTS_DECISIONS);
      const runs: Array<{ where: string; run: Run }> = [];
      const run = async (where: string, r: Promise<Run>) => runs.push({ where, run: await r });
      await run('SessionStart(startup)', hook(world, secret, 'SessionStart', { source: 'startup' }));
      await run('UserPromptSubmit', hook(world, secret, 'UserPromptSubmit', { prompt: 'p' }));
      await run(
        'PreCompact',
        hook(world, secret, 'PreCompact', { trigger: 'auto', custom_instructions: null }),
      );
      await run('SessionStart(compact)', hook(world, secret, 'SessionStart', { source: 'compact' }));
      await run('PostCompact', hook(world, secret, 'PostCompact', { trigger: 'auto', compact_summary: 'S' }));
      runs.push({
        where: 'PreToolUse',
        run: (await gate(world, secret, 'Write', { file_path: join(world.project, 'x.ts'), content: 'x' }))
          .run,
      });
      await run('Stop', hook(world, secret, 'Stop', {}));
      await run(
        'observe --session',
        runCli(['observe', '--session', secret, '--decision', 'scope=1'], {
          env: world.shellEnv,
          cwd: world.project,
        }),
      );
      await run(
        'observe (CLAUDE_CODE_SESSION_ID)',
        runCli(['observe', '--decision', 'scope=1'], {
          env: { ...world.shellEnv, CLAUDE_CODE_SESSION_ID: secret },
          cwd: world.project,
        }),
      );
      await new Promise((r) => setTimeout(r, 300));
      const sinks = [
        // Gate cache, project index, spool, ledger: everything under the state directory, the
        // project (its .continuity/) and the home and XDG directories.
        ...filesUnder(world.root).map((f) => ({ where: f.path.slice(world.root.length), text: f.text })),
        ...runs.flatMap(({ where, run: r }) => [
          { where: `${where} stdout`, text: r.stdout },
          { where: `${where} stderr (logs)`, text: r.stderr },
        ]),
        { where: 'OTLP export', text: JSON.stringify(receiver.spans) },
      ];
      expect(holding(secret, sinks)).toEqual([]);
      // Refused where it came in, with words that do not repeat it.
      expect(runs.find((r) => r.where === 'observe --session')!.run.status).toBe(2);
    },
    120_000,
  );
});

describe('continuity serve never writes or exports a secret-shaped session id', () => {
  let downstream: Downstream;
  let serve: ServeProcess;
  let dir: string;
  beforeAll(async () => {
    dir = tempDir();
    downstream = await startDownstream();
    serve = await startServe({
      dir,
      config: { downstream: { endpoint: `${downstream.base}/v1/traces` }, server: { grpcPort: false } },
    });
  }, 30_000);
  afterAll(async () => {
    await serve?.stop();
    await downstream?.close();
  });

  function compactionSpans(secret: string, seed: number): Buffer {
    const snapshot = (at: string, scope: string) => ({
      sessionId: secret,
      capturedAt: at,
      normalizerVersion: 1 as const,
      decisions: { scope: { digest: `sha256:${scope.repeat(64)}`, revision: 1, observedAt: at } },
    });
    const span = (name: string, attributes: Record<string, unknown>, n: number): OtlpSpan =>
      otlpSpan({
        name,
        traceId: seed.toString(16).padStart(32, '0'),
        spanId: (seed * 10 + n).toString(16).padStart(16, '0'),
        attributes: Object.entries(attributes).map(([key, v]) => ({
          key,
          value: typeof v === 'number' ? { intValue: String(v) } : { stringValue: String(v) },
        })),
      });
    const ctx = { boundaryId: `b-${seed}`, runtime: 'sdk', trigger: 'auto' as const };
    const spans = [
      span(SPAN_COMPACTION_PRE, snapshotAttributes('pre', snapshot('2026-11-30T10:00:00Z', 'a'), ctx), 1),
      span(SPAN_COMPACTION_POST, snapshotAttributes('post', snapshot('2026-11-30T10:05:00Z', 'b'), ctx), 2),
    ];
    return Buffer.from(
      encodeTraceRequest(
        {
          resourceSpans: [
            {
              resource: { attributes: [], droppedAttributesCount: 0 },
              scopeSpans: [
                {
                  scope: { name: 't', version: '', attributes: [], droppedAttributesCount: 0 },
                  spans,
                  schemaUrl: '',
                },
              ],
              schemaUrl: '',
            },
          ],
        },
        'protobuf',
      ),
    );
  }

  it.each(SECRETS.map((s, i) => [s, i + 1] as const))('%s', async (secret, seed) => {
    const answer = await post(serve.otlp, compactionSpans(secret, seed), {
      'content-type': 'application/x-protobuf',
    });
    await new Promise((r) => setTimeout(r, 500));
    const sinks = [
      { where: 'answer', text: answer.body.toString('latin1') },
      { where: '/metrics (needs_human session_id label)', text: (await httpGet(serve.metrics)).body },
      { where: '/ui', text: (await httpGet(`${serve.base}/ui`)).body },
      { where: 'logs', text: serve.stderr() },
      ...filesUnder(join(dir, 'state')).map((f) => ({ where: `state ${f.path}`, text: f.text })),
      {
        where: 'downstream',
        text: JSON.stringify(downstream.raw.map((r) => r.body.toString('latin1'))),
      },
    ];
    expect(holding(secret, sinks)).toEqual([]);
  });
});
