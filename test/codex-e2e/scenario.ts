/**
 * The pieces every Codex end-to-end scenario is made of: a task with unique decision values (so the
 * leak scans can look for them), the scripted model's steps (a write, the restatement the injected
 * context asks for, another write), what the model was told, the ledger and the spans read back,
 * and the checks that no raw value, summary, prompt or absolute path got out.
 */
import { existsSync } from 'node:fs';
import { expect } from 'vitest';
import {
  ATTR_BOUNDARY_ID,
  ATTR_DECISION_NAMES,
  ATTR_RUNTIME,
  ATTR_TOKENS_BEFORE,
  ATTR_TRIGGER,
  SPAN_COMPACTION_POST,
  SPAN_COMPACTION_PRE,
} from '../../src/otel/semconv.js';
import {
  type ApprovedChange,
  humanApproves as approve,
  sessionRecords,
  statusOf,
} from '../support/evidence.js';
import type { ReceivedSpan } from '../support/otlp-receiver.js';
import {
  developerTexts,
  type RecordedRequest,
  type ResponsesServer,
  type Step,
  startResponsesServer,
  toolOutputs,
} from '../support/responses-server.js';
import { rawStrings, type TaskValues, taskRecord, taskValues, widened } from '../support/task.js';
import { makeWorld, marker, type Suite, spansOf, type World, wireBytes } from './harness.js';

export { rawStrings, type TaskValues, taskRecord, taskValues, widened };

/** One scenario: its world, its model server (steps appended as the scenario goes), the secrets. */
export interface Scenario {
  suite: Suite;
  world: World;
  server: ResponsesServer;
  /** The server's script: push steps before each run of the binary. */
  steps: Step[];
  values: TaskValues;
  summary: string;
  /** A marker in every prompt: prompts must never be stored or exported. */
  promptMarker: string;
  secrets: string[];
}

/** Creates a scenario: a model server, then a world whose config.toml points at it. */
export async function scenario(suite: Suite, values = taskValues()): Promise<Scenario> {
  const summaryMarker = marker('SUMMARY');
  // A faithful summary quotes the decisions: it must never be stored or exported.
  const summary = `${summaryMarker}: the task is ${JSON.stringify(values)}.`;
  const steps: Step[] = [];
  const server = await startResponsesServer({ steps, summary });
  const world = await makeWorld(suite, server, taskRecord(values));
  const promptMarker = marker('PROMPT');
  return {
    suite,
    world,
    server,
    steps,
    values,
    summary,
    promptMarker,
    secrets: [...rawStrings(values), summaryMarker, promptMarker, world.root],
  };
}

/** Disposes of a scenario's world and server. */
export async function endScenario(s: Scenario): Promise<void> {
  await s.server.close();
  s.world.dispose();
}

/** Runs `codex exec` (or `exec resume`) with the scenario's prompt marker in the prompt. */
export async function exec(s: Scenario, prompt: string, resume?: string) {
  const r = await s.world.exec(`${prompt} ${s.promptMarker}`, resume ? { resume } : {});
  if (r.status !== 0) throw new Error(`codex exec exited ${r.status}: ${r.stderr.slice(-2000)}`);
  return r;
}

// ── Steps ──────────────────────────────────────────────────────────────────────────────────────

/** A file write through apply_patch with a known call id. */
export function write(callId: string, path: string, content: string): Step {
  return { writeFile: { path, content }, callId };
}

/** A shell command with a known call id. */
export function shell(callId: string, command: string, usage?: Record<string, number>): Step {
  return { shell: command, callId, ...(usage ? { usage } : {}) };
}

/** The restatement command the injected context (or a gate reason) printed: its first line and session. */
export function restatementCommand(req: RecordedRequest): { head: string; sessionId: string } | undefined {
  const texts = [...developerTexts(req.body), ...toolOutputs(req.body).map((o) => String(o.output))];
  for (const t of texts.reverse()) {
    const m = /^(.*\bobserve --session (\S+) --decisions - <<'EOF')$/m.exec(t);
    if (m) return { head: m[1]!.trim(), sessionId: m[2]! };
  }
  return undefined;
}

/** The restatement request in the model's developer messages of `req`, if any. */
export function injectedContext(req: RecordedRequest): string | undefined {
  return developerTexts(req.body).find((t) => t.includes('[continuity] This session was just compacted'));
}

/**
 * The agent restating its decisions: a shell call running exactly the command that the context
 * injected into the model's developer messages printed (so the step fails when the context did not
 * reach the model), with `values` as the here-document.
 */
export function restate(callId: string, values: Record<string, unknown>): Step {
  return (req) => {
    if (!injectedContext(req)) throw new Error('no restatement request reached the model');
    const cmd = restatementCommand(req);
    if (!cmd) throw new Error('the restatement request printed no command');
    return { shell: `${cmd.head}\n${JSON.stringify(values)}\nEOF`, callId };
  };
}

/** The output the model was given for tool call `callId` (from the first request carrying it). */
export function outputOf(server: ResponsesServer, callId: string): string | undefined {
  for (const r of server.requests) {
    const o = toolOutputs(r.body).find((x) => x.call_id === callId);
    if (o) return typeof o.output === 'string' ? o.output : JSON.stringify(o.output);
  }
  return undefined;
}

/** Asserts that the gate blocked `callId`: Codex's words for a hook block, and the file not written. */
export function expectBlocked(s: Scenario, callId: string, file: string | undefined, words: string): void {
  const out = outputOf(s.server, callId);
  expect(out, `the model was told nothing about ${callId}`).toBeDefined();
  expect(out).toContain('Command blocked by PreToolUse hook:');
  expect(out).toContain(words);
  if (file) expect(existsSync(s.world.file(file))).toBe(false);
}

/** Asserts that `callId` ran: no block, and the file written. */
export function expectRan(s: Scenario, callId: string, file?: string): void {
  const out = outputOf(s.server, callId);
  expect(out, `the model was told nothing about ${callId}`).toBeDefined();
  expect(out).not.toContain('blocked by PreToolUse hook');
  if (file) expect(existsSync(s.world.file(file))).toBe(true);
}

// ── Evidence ───────────────────────────────────────────────────────────────────────────────────

/** The ledger records of `sessionId`. */
export function records(s: Scenario, sessionId: string): Array<Record<string, unknown>> {
  return sessionRecords(s.world.ledgerRecords(), sessionId);
}

/**
 * Asserts the ledger holds exactly `boundaries` boundaries for the session, each with its pre
 * snapshot of the three decisions, recorded by `codex-cli`; returns the boundary ids in order.
 */
export function expectBoundaries(
  s: Scenario,
  sessionId: string,
  boundaries: number,
  trigger: string,
): string[] {
  const recs = records(s, sessionId);
  const ids = [...new Set(recs.filter((r) => r.type === 'boundary').map((r) => r.boundaryId as string))];
  expect(ids).toHaveLength(boundaries);
  for (const id of ids) {
    const pre = recs.filter((r) => r.type === 'snapshot' && r.phase === 'pre' && r.boundaryId === id);
    expect(pre).toHaveLength(1);
    expect(Object.keys(pre[0]!.decisions as object).sort()).toEqual([
      'acceptance_test',
      'approval_boundary',
      'scope',
    ]);
    const b = recs.find((r) => r.type === 'boundary' && r.boundaryId === id)!;
    expect(b.runtime).toBe('codex-cli');
    expect(b.trigger).toBe(trigger);
  }
  return ids;
}

/** `continuity status --session S --json`, as the human runs it. */
export function status(s: Scenario, sessionId: string): Promise<Record<string, unknown>> {
  return statusOf<Record<string, unknown>>(s.world.continuity, sessionId);
}

/** The human approves a change in their own terminal (another process, no Codex around it). */
export async function humanApproves(s: Scenario, sessionId: string, change: ApprovedChange): Promise<void> {
  await approve(s.world.continuity, sessionId, change);
}

/** Waits for and checks the boundary's pre and post spans at the receiver. */
export async function expectBoundarySpans(
  s: Scenario,
  sessionId: string,
  boundaryId: string,
  want: { trigger: string; posts: number; tokensBefore?: number },
): Promise<ReceivedSpan[]> {
  const of = (spans: ReceivedSpan[], name: string) =>
    spans.filter((x) => x.name === name && x.attributes[ATTR_BOUNDARY_ID] === boundaryId);
  const spans = await spansOf(
    s.suite,
    sessionId,
    (sp) => of(sp, SPAN_COMPACTION_PRE).length >= 1 && of(sp, SPAN_COMPACTION_POST).length >= want.posts,
  );
  const pre = of(spans, SPAN_COMPACTION_PRE);
  const post = of(spans, SPAN_COMPACTION_POST);
  expect(pre).toHaveLength(1);
  expect(post).toHaveLength(want.posts);
  for (const sp of [...pre, ...post]) {
    expect(sp.service).toBe('codex-cli');
    expect(sp.attributes[ATTR_RUNTIME]).toBe('codex-cli');
    expect(sp.attributes[ATTR_TRIGGER]).toBe(want.trigger);
  }
  expect([...(pre[0]!.attributes[ATTR_DECISION_NAMES] as string[])].sort()).toEqual([
    'acceptance_test',
    'approval_boundary',
    'scope',
  ]);
  if (want.tokensBefore !== undefined) expect(pre[0]!.attributes[ATTR_TOKENS_BEFORE]).toBe(want.tokensBefore);
  for (const p of post) expect(p.traceId).toBe(pre[0]!.traceId);
  return spans;
}

/** No raw value, summary, prompt or private path in the ledger, the adapter state or the spans. */
export function expectClean(s: Scenario, extra: string[] = []): void {
  const ledger = s.world
    .ledgerRecords()
    .map((r) => JSON.stringify(r))
    .join('\n');
  const state = s.world.stateBytes().toString('latin1');
  const wire = wireBytes(s.suite);
  for (const secret of [...s.secrets, ...extra]) {
    expect(ledger.includes(secret), `ledger holds ${secret}`).toBe(false);
    expect(state.includes(secret), `state holds ${secret}`).toBe(false);
    expect(wire.includes(secret), `spans hold ${secret}`).toBe(false);
  }
}
