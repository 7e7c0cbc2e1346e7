/**
 * The pieces every end-to-end scenario is made of: a task with unique decision values (so the leak
 * scans can look for them), a session started and compacted by the real binary, the ledger and the
 * spans read back, and the checks that no raw value, summary or absolute path got out.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import {
  ATTR_BOUNDARY_ID,
  ATTR_CONTINUITY_STATE,
  ATTR_DECISION_NAMES,
  ATTR_EVIDENCE_MISSING,
  ATTR_TOKENS_AFTER,
  ATTR_TOKENS_BEFORE,
  ATTR_TRIGGER,
  SPAN_COMPACTION_POST,
  SPAN_COMPACTION_PRE,
} from '../../src/otel/semconv.js';
import { type AnthropicServer, type Step, startAnthropicServer } from '../support/anthropic-server.js';
import {
  type ApprovedChange,
  humanApproves as approve,
  boundaryIdsOf,
  type SessionStatus,
  sessionRecords,
  statusOf,
} from '../support/evidence.js';
import type { ReceivedSpan } from '../support/otlp-receiver.js';
import { rawStrings, type TaskValues, taskRecord, taskValues, widened } from '../support/task.js';
import {
  type ClaudeRun,
  deniedIds,
  LAUNCHER,
  makeWorld,
  marker,
  type Suite,
  spansOf,
  type World,
  wireBytes,
  write,
} from './harness.js';

/** The names, most critical first (as the adapter orders them). */
export const DECISION_NAMES = ['approval_boundary', 'scope', 'acceptance_test'] as const;

/** One scenario: its world, its model server, the secrets nothing may leak. */
export interface Scenario {
  suite: Suite;
  world: World;
  server: AnthropicServer;
  values: TaskValues;
  /** Raw strings that must never reach the ledger, the adapter state or a span. */
  secrets: string[];
  /** The summary the model server answers compactions with (it quotes the decision values). */
  summary: string;
}

/** Creates a scenario: a world with the task record of fresh values and a model server. */
export async function scenario(
  suite: Suite,
  options: { claudeMd?: string; values?: TaskValues; clonedWithProjectInstall?: boolean } = {},
): Promise<Scenario> {
  const values = options.values ?? taskValues();
  const summaryMarker = marker('SUMMARY');
  // A faithful summary quotes the decisions: it must never be stored or exported.
  const summary = `${summaryMarker}: the task is ${JSON.stringify(values)}.`;
  const world = await makeWorld(suite, {
    decisions: taskRecord(values),
    ...(options.claudeMd !== undefined ? { claudeMd: options.claudeMd } : {}),
    ...(options.clonedWithProjectInstall ? { clonedWithProjectInstall: true } : {}),
  });
  const server = await startAnthropicServer({ summary });
  return {
    suite,
    world,
    server,
    values,
    summary,
    secrets: [...rawStrings(values), summaryMarker, world.root],
  };
}

/** Disposes of a scenario's world and server. */
export async function endScenario(s: Scenario): Promise<void> {
  await s.server.close();
  // CONTINUITY_E2E_KEEP=1 keeps the world, with what the model server received, to look at.
  if (process.env.CONTINUITY_E2E_KEEP === '1')
    writeFileSync(join(s.world.root, 'requests.json'), JSON.stringify(s.server.requests, null, 1));
  s.world.dispose();
}

/** Asserts a run of the binary ended normally and returns its session id. */
export function sessionOf(r: ClaudeRun): string {
  expect(r.code, r.stderr).toBe(0);
  expect(r.result?.type, r.stdout.slice(0, 500)).toBe('result');
  expect(r.result!.is_error).toBe(false);
  return r.result!.session_id;
}

/** Starts a session whose first turn writes a file (no compaction yet: allowed). */
export async function startSession(s: Scenario, extraArgs: string[] = []): Promise<string> {
  s.server.push(write('w-start', s.world.file('start.txt'), 'started\n'), 'Started.');
  const r = await s.world.claude(s.server, ['-p', 'start the task', ...extraArgs]);
  const sessionId = sessionOf(r);
  expect(deniedIds(r)).toEqual([]);
  expect(existsSync(s.world.file('start.txt'))).toBe(true);
  return sessionId;
}

/** A manual compaction in a process of its own: `claude -p "/compact <instructions>" --resume S`. */
export async function compactManually(
  s: Scenario,
  sessionId: string,
  instructions: string,
  extraEnv: NodeJS.ProcessEnv = {},
): Promise<ClaudeRun> {
  const before = s.server.requestsOf('summary').length;
  const r = await s.world.claude(s.server, ['-p', `/compact ${instructions}`, '--resume', sessionId], {
    env: extraEnv,
  });
  expect(sessionOf(r)).toBe(sessionId);
  // It completed (a blocking PreCompact would have said so in `result`), with one summary request.
  expect(r.result!.subtype).toBe('success');
  expect(r.result!.result).not.toMatch(/blocked/i);
  expect(s.server.requestsOf('summary').length).toBe(before + 1);
  return r;
}

/** A turn of a resumed session: `claude -p PROMPT --resume S` answering with `steps`. */
export async function resumeWith(
  s: Scenario,
  sessionId: string,
  steps: Step[],
  extraArgs: string[] = [],
): Promise<ClaudeRun> {
  s.server.push(...steps, 'Done.');
  const r = await s.world.claude(s.server, ['-p', 'continue the task', '--resume', sessionId, ...extraArgs]);
  expect(sessionOf(r)).toBe(sessionId);
  return r;
}

/** A human approves the change of `decision` from `from` to `to`, in their own terminal (another process). */
export async function humanApproves(s: Scenario, sessionId: string, change: ApprovedChange): Promise<void> {
  await approve(s.world.continuity, sessionId, change);
}

// ── The ledger ──────────────────────────────────────────────────────────────────────────────────

/** A session's latest boundary as `continuity status --json` recomputes it, with its evidence counts. */
export interface StatusEntry extends SessionStatus {
  evidence: { pre: number | null; post: number | null; boundary: number | null; missing?: unknown[] };
}

/** `continuity status --session S --json`, run by the human. */
export function status(s: Scenario, sessionId: string): Promise<StatusEntry> {
  return statusOf<StatusEntry>(s.world.continuity, sessionId);
}

/** The session's ledger records, in order. */
export function records(s: Scenario, sessionId: string): Array<Record<string, unknown>> {
  return sessionRecords(s.world.ledgerRecords(), sessionId);
}

/** The boundaries the ledger opened for the session, in order. */
export function boundaryIds(s: Scenario, sessionId: string): string[] {
  return boundaryIdsOf(records(s, sessionId));
}

/** The records of one boundary as `type[:phase]`, in order, without the receipts. */
export function boundaryShape(s: Scenario, sessionId: string, boundaryId: string): string[] {
  return records(s, sessionId)
    .filter((r) => r.boundaryId === boundaryId && r.type !== 'classification')
    .map((r) => `${r.type}${r.phase ? `:${r.phase}` : ''}`);
}

/** The chain verifies (the human's `continuity ledger verify`). */
export async function ledgerVerifies(s: Scenario): Promise<boolean> {
  const r = await s.world.continuity(['ledger', 'verify', '--json']);
  return r.status === 0;
}

/**
 * One compaction recorded as one boundary, whatever order Claude Code reported it in: one pre
 * snapshot, the compaction report (a later boundary record of the same compaction may add the
 * token counts learnt afterwards), and the post snapshots of the restatements. Returns its id.
 */
export function expectOneCapturedBoundary(s: Scenario, sessionId: string, restatements: number): string {
  const ids = boundaryIds(s, sessionId);
  expect(ids, 'boundaries opened for one compaction').toHaveLength(1);
  const shape = boundaryShape(s, sessionId, ids[0]!);
  expect(shape.filter((t) => t === 'snapshot:pre')).toHaveLength(1);
  expect(shape).not.toContain('evidence_missing:pre');
  expect(shape.filter((t) => t === 'snapshot:post')).toHaveLength(restatements);
  const reports = boundaryRecords(s, sessionId, ids[0]!);
  expect(reports.length).toBeGreaterThan(0);
  expect(new Set(reports.map((r) => r.compactedAt)).size, 'one compaction time').toBe(1);
  return ids[0]!;
}

/** The boundary records (compaction reports) of one boundary, in order. */
export function boundaryRecords(
  s: Scenario,
  sessionId: string,
  boundaryId: string,
): Array<Record<string, unknown>> {
  return records(s, sessionId).filter((r) => r.type === 'boundary' && r.boundaryId === boundaryId);
}

/**
 * Tokens before a compaction: at least what the model server reported for the last reply before it
 * (input + output tokens, as Claude Code counts the context), and at most a little more (the
 * binary's own count adds the tool results that came after that reply).
 */
export function expectTokensBefore(actual: unknown, reported: number, label: string): void {
  expect(typeof actual, label).toBe('number');
  expect(actual as number, label).toBeGreaterThanOrEqual(reported);
  expect(actual as number, label).toBeLessThan(reported + 1_000);
}

/**
 * The context fill recorded for a boundary, as numbers: before it (see {@link expectTokensBefore})
 * and after it (whatever the binary measured).
 */
export function expectTokens(s: Scenario, sessionId: string, boundaryId: string, reported: number): void {
  const latest = boundaryRecords(s, sessionId, boundaryId).at(-1)!;
  expectTokensBefore(latest.tokensBefore, reported, 'tokens before the compaction');
  expect(typeof latest.tokensAfter, 'tokens after the compaction').toBe('number');
  expect(Number.isInteger(latest.tokensAfter) && (latest.tokensAfter as number) > 0).toBe(true);
}

// ── The spans ───────────────────────────────────────────────────────────────────────────────────

/** The pre span and the latest post span of a boundary, once `continuity serve` forwarded them. */
export async function boundarySpans(
  s: Scenario,
  sessionId: string,
  boundaryId: string,
  posts: number,
): Promise<{ pre: ReceivedSpan | undefined; post: ReceivedSpan | undefined; all: ReceivedSpan[] }> {
  const ofBoundary = (spans: ReceivedSpan[]) =>
    spans.filter((x) => x.attributes[ATTR_BOUNDARY_ID] === boundaryId);
  const spans = await spansOf(s.suite, sessionId, (all) => {
    const mine = ofBoundary(all);
    return (
      mine.some((x) => x.name === SPAN_COMPACTION_PRE) &&
      mine.filter((x) => x.name === SPAN_COMPACTION_POST && x.attributes[ATTR_CONTINUITY_STATE] !== undefined)
        .length >= posts
    );
  });
  const mine = ofBoundary(spans);
  return {
    pre: mine.find((x) => x.name === SPAN_COMPACTION_PRE),
    post: mine.filter((x) => x.name === SPAN_COMPACTION_POST).at(-1),
    all: spans,
  };
}

/**
 * The spans of a captured boundary: the pre span with the trigger and the decision names, and the
 * latest post span (same trace, linked) carrying the state `continuity serve` resolved.
 */
export async function expectBoundarySpans(
  s: Scenario,
  sessionId: string,
  boundaryId: string,
  expected: {
    trigger: 'manual' | 'auto';
    state: string;
    posts?: number;
    /** The tokens the model server reported for the last reply before the compaction. */
    tokensBefore?: number;
    /** Whether the post span also carries the tokens after (known once the binary wrote them). */
    tokensAfterOnPost?: boolean;
  },
): Promise<void> {
  const { pre, post } = await boundarySpans(s, sessionId, boundaryId, expected.posts ?? 1);
  expect(pre, 'the pre span reached the receiver').toBeDefined();
  expect(pre!.attributes[ATTR_TRIGGER]).toBe(expected.trigger);
  expect(pre!.attributes[ATTR_EVIDENCE_MISSING]).toBeUndefined();
  expect([...(pre!.attributes[ATTR_DECISION_NAMES] as string[])].sort()).toEqual([...DECISION_NAMES].sort());
  expect(post, 'the post span reached the receiver').toBeDefined();
  expect(post!.traceId).toBe(pre!.traceId);
  // One trace per boundary: the pre span its root, the post its child (no parent missing).
  expect(pre!.span.parentSpanId).toBe('');
  expect(post!.span.parentSpanId).toBe(pre!.spanId);
  expect(post!.links).toContainEqual({ traceId: pre!.traceId, spanId: pre!.spanId });
  expect(post!.attributes[ATTR_CONTINUITY_STATE]).toBe(expected.state);
  if (expected.tokensBefore !== undefined) {
    // The context fill travels as numbers: before on both spans, after on the post span.
    expectTokensBefore(Number(pre!.attributes[ATTR_TOKENS_BEFORE]), expected.tokensBefore, 'on the pre span');
    expectTokensBefore(
      Number(post!.attributes[ATTR_TOKENS_BEFORE]),
      expected.tokensBefore,
      'on the post span',
    );
    if (expected.tokensAfterOnPost !== false)
      expect(Number(post!.attributes[ATTR_TOKENS_AFTER])).toBeGreaterThan(0);
  }
}

// ── Clean runs ──────────────────────────────────────────────────────────────────────────────────

/** Every line of the binary's debug logs of this scenario (`--debug-file`, one per run). */
export function debugLines(s: Scenario): string[] {
  return readdirSync(s.world.root)
    .filter((f) => f.startsWith('debug-'))
    .flatMap((f) => readFileSync(join(s.world.root, f), 'utf8').split('\n'));
}

/**
 * The scenario ran clean: every run of our hook ended with status 0 as Claude Code logged it (a
 * hook that timed out, failed or answered JSON Claude Code rejects is logged otherwise; a gate
 * that timed out would have let its tool call through), the script had no problem, the receiver
 * decoded everything, and no raw value, summary or absolute path reached the ledger, the adapter
 * state or a span. `launcher` is how init's hooks start continuity (default the harness's `--command`).
 */
export function expectClean(s: Scenario, extraSecrets: string[] = [], launcher = LAUNCHER): void {
  const lines = debugLines(s);
  const ours = lines.filter((l) => l.includes(`[${launcher} hook claude-code]`));
  expect(ours.length, 'our hooks ran').toBeGreaterThan(0);
  // The activity hooks init registers `async: true` are logged as moved to the background, and
  // each, once it exits 0 printing nothing, as having produced no response payload (2.1.328: the
  // line is written only for exit status 0).
  const background = ours.filter((l) => /\] moved to the background \(/.test(l));
  expect(background.filter((l) => !/Hooks: (PostToolUse|UserPromptSubmit)\b/.test(l))).toEqual([]);
  const cleanAsync = lines.filter((l) =>
    /Hooks: async_hook_\d+ \((PostToolUse|UserPromptSubmit)\b[^)]*\) produced no response payload/.test(l),
  );
  // A background hook still running when a `claude -p` process exits is killed without an outcome
  // line (seen under load on 2.1.332 and 2.1.337; the synchronous Stop records the activity after
  // it): every outcome logged is the clean one, and at least one background hook logged it.
  const asyncOutcomes = lines.filter((l) =>
    /Hooks: async_hook_\d+ \((PostToolUse|UserPromptSubmit)\b/.test(l),
  );
  expect(
    asyncOutcomes.filter(
      (l) => !cleanAsync.includes(l) && /fail|error|status [1-9]|timed out|non-blocking/i.test(l),
    ),
    'no background hook of ours failed',
  ).toEqual([]);
  expect(cleanAsync.length, 'background hooks of ours that exited 0').toBeLessThanOrEqual(background.length);
  if (background.length > 0)
    expect(cleanAsync.length, 'a background hook of ours exited 0').toBeGreaterThan(0);
  expect(
    ours.filter((l) => !background.includes(l) && !/(finished|completed) with status 0\b/.test(l)),
  ).toEqual([]);
  expect(s.server.problems).toEqual([]);
  expect(s.suite.receiver.errors).toEqual([]);
  const disk = s.world.stateBytes().toString('utf8');
  const wire = wireBytes(s.suite);
  for (const secret of [...s.secrets, ...extraSecrets]) {
    expect(disk.includes(secret), `"${secret}" in the state directory`).toBe(false);
    expect(wire.includes(secret), `"${secret}" in the spans`).toBe(false);
  }
}

export { rawStrings, startAnthropicServer, type TaskValues, taskRecord, taskValues, widened };
