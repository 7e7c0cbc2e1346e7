/**
 * What every end-to-end scenario asks of the evidence, whatever the runtime: the human's
 * `continuity approve` and `continuity status` in their own terminal, a session's ledger records
 * and boundaries, and the spans of a session at the OTLP receiver (waited for, bounded) with
 * every byte the receiver accepted for the leak scans.
 */
import { expect } from 'vitest';
import { ATTR_SESSION_ID } from '../../src/otel/semconv.js';
import type { OtlpReceiver, ReceivedSpan } from './otlp-receiver.js';
import type { Run } from './processes.js';

/** `continuity …` run as the human (in the project, with the human's environment). */
export type HumanCli = (args: string[]) => Promise<Run>;

/** A change a human approves: `decision` from `from` to `to`, under the change reference `ref`. */
export interface ApprovedChange {
  decision: string;
  from: unknown;
  to: unknown;
  ref: string;
}

/** A human approves a change in their own terminal (another process, no agent around it). */
export async function humanApproves(cli: HumanCli, sessionId: string, change: ApprovedChange): Promise<void> {
  const r = await cli([
    'approve',
    '--session',
    sessionId,
    '--decision',
    change.decision,
    '--from',
    JSON.stringify(change.from),
    '--to',
    JSON.stringify(change.to),
    '--ref',
    change.ref,
    '--by',
    'reviewer-17',
  ]);
  expect(r.status, r.stderr).toBe(0);
}

/** A session's latest boundary as `continuity status --json` recomputes it from the evidence. */
export interface SessionStatus {
  sessionId: string;
  boundaryId: string | null;
  trigger?: string;
  state: string | null;
  reason: string | null;
}

/** `continuity status --session S --json`, run by the human: the session's one entry. */
export async function statusOf<T = SessionStatus>(cli: HumanCli, sessionId: string): Promise<T> {
  const r = await cli(['status', '--session', sessionId, '--json']);
  expect(r.status, r.stderr).toBe(0);
  const sessions = (JSON.parse(r.stdout) as { sessions: T[] }).sessions;
  expect(sessions).toHaveLength(1);
  return sessions[0]!;
}

/** The session's ledger records, in order. */
export function sessionRecords(
  ledger: ReadonlyArray<Record<string, unknown>>,
  sessionId: string,
): Array<Record<string, unknown>> {
  return ledger.filter((r) => r.sessionId === sessionId);
}

/** The boundaries the records open, in order (receipts aside). */
export function boundaryIdsOf(records: ReadonlyArray<Record<string, unknown>>): string[] {
  const ids: string[] = [];
  for (const r of records) {
    const id = r.boundaryId;
    if (typeof id === 'string' && r.type !== 'classification' && !ids.includes(id)) ids.push(id);
  }
  return ids;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Waits until the receiver holds spans of `sessionId` satisfying `done`, polling every 100 ms at
 * most `polls` times, and returns what arrived either way.
 */
export async function sessionSpans(
  receiver: OtlpReceiver,
  sessionId: string,
  done: (spans: ReceivedSpan[]) => boolean,
  polls: number,
): Promise<ReceivedSpan[]> {
  const mine = () => receiver.spans.filter((x) => x.attributes[ATTR_SESSION_ID] === sessionId);
  for (let i = 0; i < polls && !done(mine()); i++) await sleep(100);
  return mine();
}

/** Every byte the receiver accepted, for the leak scans. */
export function receivedBytes(receiver: OtlpReceiver): string {
  return Buffer.concat(receiver.requests.map((r) => r.body)).toString('latin1');
}
