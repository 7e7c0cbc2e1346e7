/**
 * The pieces of every Agent SDK scenario: a task with unique decision values (so the leak scans
 * can look for them), a session started and compacted by the real SDK, the ledger, the state and
 * the application's spans read back, and the checks that no raw value, summary or absolute path
 * got out.
 */
import { existsSync } from 'node:fs';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { expect } from 'vitest';
import { SUMMARY_INSTRUCTION_PREFIX } from '../../src/adapters/core/messages.js';
import {
  ATTR_BOUNDARY_ID,
  ATTR_CONTINUITY_STATE,
  ATTR_DECISION_NAMES,
  ATTR_EVIDENCE_MISSING,
  ATTR_RUNTIME,
  ATTR_SESSION_ID,
  ATTR_TOKENS_AFTER,
  ATTR_TOKENS_BEFORE,
  ATTR_TRIGGER,
  SPAN_COMPACTION_POST,
  SPAN_COMPACTION_PRE,
} from '../../src/otel/semconv.js';
import {
  type AnthropicServer,
  requestText,
  type Step,
  startAnthropicServer,
} from '../support/anthropic-server.js';
import {
  boundaryIdsOf,
  receivedBytes,
  type SessionStatus,
  sessionRecords,
  statusOf,
} from '../support/evidence.js';
import { rawStrings, type TaskValues, taskRecord, taskValues, widened } from '../support/task.js';
import {
  appSpans,
  makeWorld,
  marker,
  type QueryRun,
  type SdkMessage,
  type Suite,
  type World,
  type WorldOptions,
  write,
} from './harness.js';

export { rawStrings, type TaskValues, taskRecord, taskValues, widened };

/** The names, most critical first (as the adapter orders them). */
export const DECISION_NAMES = ['approval_boundary', 'scope', 'acceptance_test'] as const;

/** One scenario: its world, its model server, the secrets nothing may leak. */
export interface Scenario {
  suite: Suite;
  world: World;
  server: AnthropicServer;
  values: TaskValues;
  /** Raw strings that must never reach the ledger, the adapter state, a span or a warning. */
  secrets: string[];
}

/** Creates a scenario: a world with the task record of fresh values and a model server. */
export async function scenario(
  suite: Suite,
  options: Omit<WorldOptions, 'decisions'> & { values?: TaskValues } = {},
): Promise<Scenario> {
  const values = options.values ?? taskValues();
  const summaryMarker = marker('SUMMARY');
  // A faithful summary quotes the decisions: it must never be stored or exported.
  const summary = `${summaryMarker}: the task is ${JSON.stringify(values)}.`;
  const world = makeWorld(suite, { ...options, decisions: taskRecord(values) });
  const server = await startAnthropicServer({ summary });
  return { suite, world, server, values, secrets: [...rawStrings(values), summaryMarker, world.root] };
}

/** Runs `fn` in a fresh scenario (with `options`), disposed of afterwards whatever happens. */
export async function inScenario(
  suite: Suite,
  fn: (s: Scenario) => Promise<void>,
  options: Parameters<typeof scenario>[1] = {},
): Promise<void> {
  const s = await scenario(suite, options);
  try {
    await fn(s);
  } finally {
    await endScenario(s);
  }
}

/** Disposes of a scenario's world and server. */
export async function endScenario(s: Scenario): Promise<void> {
  await s.server.close();
  s.world.dispose();
}

/** Asserts a query ended normally and returns its session id. */
export function sessionOf(r: QueryRun): string {
  expect(r.result?.type, JSON.stringify(r.messages.at(-1)).slice(0, 500)).toBe('result');
  expect(r.result!.is_error).toBe(false);
  expect(r.sessionId).toMatch(/^[0-9a-f-]{36}$/);
  return r.sessionId;
}

/** Starts a session whose first turn writes a file (no compaction yet: allowed). */
export async function startSession(s: Scenario, options: Record<string, unknown> = {}): Promise<string> {
  s.server.push(write('w-start', s.world.file('start.txt'), 'started\n'), 'Started.');
  const r = await s.world.query(s.server, 'start the task', options);
  const sessionId = sessionOf(r);
  expect(r.denied).toEqual([]);
  expect(existsSync(s.world.file('start.txt'))).toBe(true);
  return sessionId;
}

/**
 * A manual compaction in a resumed query: `query({ prompt: '/compact <instructions>', options: {
 * resume } })`. Checks that it completed with one summary request that carried our one sentence
 * (names only) and that the stream reported one `compact_boundary`.
 */
export async function compactManually(
  s: Scenario,
  sessionId: string,
  instructions: string,
): Promise<QueryRun> {
  const before = s.server.requestsOf('summary').length;
  const r = await s.world.query(s.server, `/compact ${instructions}`, { resume: sessionId });
  expect(sessionOf(r)).toBe(sessionId);
  expect(r.result!.subtype).toBe('success');
  expect(r.result!.result ?? '').not.toMatch(/blocked/i);
  const summaries = s.server.requestsOf('summary');
  expect(summaries.length).toBe(before + 1);
  expectSummaryInstruction(s, requestText(summaries.at(-1)!.body));
  expect(r.boundaries).toHaveLength(1);
  expect(r.boundaries[0]!.compact_metadata!.trigger).toBe('manual');
  return r;
}

/** The summarization request carried our sentence naming the decisions, and none of their values. */
export function expectSummaryInstruction(s: Scenario, text: string): void {
  const line = text.split('\n').find((l) => l.startsWith(SUMMARY_INSTRUCTION_PREFIX));
  expect(line, 'the summary instruction reached the summarizer').toBeDefined();
  for (const n of DECISION_NAMES) expect(line).toContain(`"${n}"`);
  for (const v of rawStrings(s.values)) expect(line!.includes(v)).toBe(false);
}

/** A turn of a resumed session answering with `steps`. */
export async function resumeWith(
  s: Scenario,
  sessionId: string,
  steps: Step[],
  options: Record<string, unknown> = {},
): Promise<QueryRun> {
  s.server.push(...steps, 'Done.');
  const r = await s.world.query(s.server, 'continue the task', { resume: sessionId, ...options });
  expect(sessionOf(r)).toBe(sessionId);
  return r;
}

// ── The ledger ──────────────────────────────────────────────────────────────────────────────────

/** `continuity status --session S --json`, run by the human. */
export function status(s: Scenario, sessionId: string): Promise<SessionStatus> {
  return statusOf(s.world.cli, sessionId);
}

/** The session's ledger records, in order. */
export function records(s: Scenario, sessionId: string): Array<Record<string, unknown>> {
  return sessionRecords(s.world.ledgerRecords(), sessionId);
}

/** The boundaries the ledger opened for the session, in order. */
export function boundaryIds(s: Scenario, sessionId: string): string[] {
  return boundaryIdsOf(records(s, sessionId));
}

/**
 * One compaction recorded as one boundary by this runtime: one pre snapshot (no evidence
 * missing), the boundary records (the later one with compact_boundary's numbers, exactly), and
 * `restatements` post snapshots. Returns its id.
 */
export function expectOneBoundary(
  s: Scenario,
  sessionId: string,
  restatements: number,
  compact: SdkMessage,
): string {
  const ids = boundaryIds(s, sessionId);
  expect(ids, 'boundaries opened for one compaction').toHaveLength(1);
  const mine = records(s, sessionId).filter((r) => r.boundaryId === ids[0] && r.type !== 'classification');
  const shape = mine.map((r) => `${r.type}${r.phase ? `:${r.phase}` : ''}`);
  expect(shape.filter((t) => t === 'snapshot:pre')).toHaveLength(1);
  expect(shape).not.toContain('evidence_missing:pre');
  expect(shape.filter((t) => t === 'snapshot:post')).toHaveLength(restatements);
  for (const r of mine) expect(r.runtime, `${r.type} record's runtime`).toBe('claude-agent-sdk');
  const reports = mine.filter((r) => r.type === 'boundary');
  expect(new Set(reports.map((r) => r.compactedAt)).size, 'one compaction time').toBe(1);
  const meta = compact.compact_metadata!;
  expect(reports.at(-1)!.tokensBefore).toBe(meta.pre_tokens);
  expect(reports.at(-1)!.tokensAfter).toBe(meta.post_tokens);
  expect(reports.at(-1)!.trigger).toBe(meta.trigger);
  return ids[0]!;
}

/** The gate cache of the session, as the adapter keeps it (state, reason). */
export function gateState(s: Scenario): string {
  return s.world.stateBytes().toString('utf8');
}

// ── The spans ───────────────────────────────────────────────────────────────────────────────────

/**
 * The boundary's spans went through the application's tracer provider: the pre span (trigger,
 * names, tokens known at confirmation: none yet) and the latest post span, its child and linked to it, with the
 * state the application's ContinuityProcessor wrote and the context fill from compact_boundary;
 * and none of them over OTLP.
 */
export function expectAppSpans(
  s: Scenario,
  sessionId: string,
  boundaryId: string,
  expected: { trigger: 'manual' | 'auto'; state: string; compact: SdkMessage },
): { pre: ReadableSpan; post: ReadableSpan } {
  const spans = appSpans(s.suite, sessionId).filter((x) => x.attributes[ATTR_BOUNDARY_ID] === boundaryId);
  const pre = spans.find((x) => x.name === SPAN_COMPACTION_PRE);
  const post = spans.filter((x) => x.name === SPAN_COMPACTION_POST).at(-1);
  expect(pre, 'the pre span went through the application provider').toBeDefined();
  expect(post, 'the post span went through the application provider').toBeDefined();
  expect(pre!.attributes[ATTR_RUNTIME]).toBe('claude-agent-sdk');
  expect(pre!.attributes[ATTR_TRIGGER]).toBe(expected.trigger);
  expect(pre!.attributes[ATTR_EVIDENCE_MISSING]).toBeUndefined();
  expect([...(pre!.attributes[ATTR_DECISION_NAMES] as string[])].sort()).toEqual([...DECISION_NAMES].sort());
  expect(post!.attributes[ATTR_CONTINUITY_STATE], 'written by the application ContinuityProcessor').toBe(
    expected.state,
  );
  expect(post!.links.map((l) => l.context.spanId)).toContain(pre!.spanContext().spanId);
  // One trace per boundary: the post span under the pre span, in its trace (no parent missing).
  expect(post!.spanContext().traceId).toBe(pre!.spanContext().traceId);
  expect(post!.parentSpanContext?.spanId).toBe(pre!.spanContext().spanId);
  const meta = expected.compact.compact_metadata!;
  expect(post!.attributes[ATTR_TOKENS_BEFORE]).toBe(meta.pre_tokens);
  expect(post!.attributes[ATTR_TOKENS_AFTER]).toBe(meta.post_tokens);
  expect(
    s.suite.receiver.spans.filter((x) => x.attributes[ATTR_SESSION_ID] === sessionId),
    'nothing of the session over OTLP',
  ).toEqual([]);
  return { pre: pre!, post: post! };
}

// ── Clean runs ──────────────────────────────────────────────────────────────────────────────────

/**
 * The scenario ran clean: the script had no problem, the receiver decoded everything, no
 * callback of ours failed as the SDK reports it, and no raw value, summary or absolute path
 * reached the ledger, the adapter state, a span (through the provider or over OTLP) or a warning.
 */
export function expectClean(s: Scenario, runs: QueryRun[], extraSecrets: string[] = []): void {
  expect(s.server.problems).toEqual([]);
  expect(s.suite.receiver.errors).toEqual([]);
  const failed = runs
    .flatMap((r) => r.messages)
    .filter(
      (m) =>
        m.type === 'system' && m.subtype === 'informational' && /hook_callback_failed/.test(String(m.tag)),
    );
  expect(failed, 'a callback of ours failed').toEqual([]);
  const disk = s.world.stateBytes().toString('utf8');
  const spans = JSON.stringify(
    s.suite.exporter
      .getFinishedSpans()
      .map((x) => ({ name: x.name, attributes: x.attributes, events: x.events })),
  );
  const wire = receivedBytes(s.suite.receiver);
  const warnings = s.world.warnings.join('\n');
  for (const secret of [...s.secrets, ...extraSecrets]) {
    expect(disk.includes(secret), `"${secret}" in the state directory`).toBe(false);
    expect(spans.includes(secret), `"${secret}" in the application's spans`).toBe(false);
    expect(wire.includes(secret), `"${secret}" in the OTLP requests`).toBe(false);
    expect(warnings.includes(secret), `"${secret}" in a warning`).toBe(false);
  }
}
