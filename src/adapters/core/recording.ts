/**
 * What every runtime adapter's recording paths share besides capture and restatement: the clock,
 * fresh boundary ids, how messages name the task record, the session-id rule, and recording an
 * activity change (ledger + `continuity.activity` span). Never loaded by the gate's fast path.
 */
import { randomBytes } from 'node:crypto';
import { closeSync } from 'node:fs';
import { isAbsolute, relative } from 'node:path';
import { type ActivityState, OPAQUE_ID_PATTERN } from '../../decision/rules.js';
import { formatRfc3339Utc } from '../../decision/time.js';
import { type ExportSpan, nowNs, randomSpanIds } from '../../export/spans.js';
import { activityAttributes } from '../../otel/attributes.js';
import { SPAN_ACTIVITY } from '../../otel/semconv.js';
import type { AdapterConfig } from './config.js';
import { openEvidence } from './evidence.js';
import {
  activityStep,
  openRegularFile,
  readActivityMark,
  readAt,
  type StateDir,
  writeActivity,
  writeProjectSession,
} from './state.js';
import { withSessionLock } from './track.js';

/** A new boundary id: `<prefix>-<time>-<random>`, lower-case, time-ordered, opaque. */
export function newBoundaryId(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
}

/** The clock the hooks use by default, RFC 3339 UTC. */
export function systemNow(): string {
  return formatRfc3339Utc(Date.now());
}

/** How messages name the task record: project-relative, never an absolute path. */
export function taskRecordLabel(config: AdapterConfig): string {
  const rel = relative(config.projectDir, config.taskRecordPath);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : 'the task record (CONTINUITY_TASK_RECORD)';
}

/** True when the session id can be stored (the ledger's opaque-id rule). */
export function storableSessionId(id: string): boolean {
  return OPAQUE_ID_PATTERN.test(id);
}

/**
 * Records the project's current session (what `continuity observe` defaults to). Best effort: a
 * state directory that cannot take it must not keep a compaction from the ledger.
 */
export function rememberSession(
  state: StateDir,
  projectDir: string,
  sessionId: string,
  now: string,
  warn: (line: string) => void,
): void {
  try {
    writeProjectSession(state, projectDir, sessionId, now);
  } catch (e) {
    warn(`current session not recorded (${(e as Error).message.split('\n')[0]})`);
  }
}

/**
 * Records a change of the session's activity state: a ledger `activity` record, the state file,
 * and a `continuity.activity` span. `eventMs` is when the reporting hook started (its process's
 * start, `hookStartMs` in ./state.ts): under the session's lock a report older than the recorded one is
 * dropped, and a repeat only moves the recorded time on, so the ledger's activity records are in
 * the order of the runtime's events even when background hooks finish out of order. An unchanged
 * or stale state records nothing. Never throws.
 */
export async function recordActivity(
  config: AdapterConfig,
  state: StateDir,
  sessionId: string,
  stateName: ActivityState,
  now: string,
  eventMs: number,
  warn: (line: string) => void,
): Promise<void> {
  const startNs = nowNs();
  let step: 'stale' | 'same' | 'changed' | 'failed';
  try {
    step = await withSessionLock(state, sessionId, async () => {
      const s = activityStep(readActivityMark(state, sessionId), stateName, eventMs);
      if (s === 'stale') return s;
      if (s === 'changed') {
        const store = openEvidence(config);
        try {
          await store.append({ type: 'activity', sessionId, state: stateName, at: now });
        } catch (e) {
          warn(`ledger: ${(e as Error).message.split('\n')[0]}`);
          return 'failed';
        } finally {
          await store.close().catch(() => {});
        }
      }
      try {
        writeActivity(state, sessionId, { state: stateName, atMs: eventMs });
      } catch (e) {
        warn(`activity state: ${(e as Error).message.split('\n')[0]}`);
      }
      return s;
    });
  } catch (e) {
    warn(`activity not recorded: ${(e as Error).message.split('\n')[0]}`);
    return;
  }
  if (step !== 'changed') return;
  const span: ExportSpan = {
    name: SPAN_ACTIVITY,
    ids: randomSpanIds(),
    startNs,
    endNs: nowNs(),
    attributes: activityAttributes(sessionId, stateName),
  };
  // The exporter is loaded only to export (a bundle of its own in the hook entry).
  const { exportAdapterSpans } = await import('./export.js');
  await exportAdapterSpans([span], config, warn);
}

/** Most bytes read from the end of a transcript. */
export const TAIL_BYTES = 4 * 1024 * 1024;

/**
 * The lines of the last {@link TAIL_BYTES} of a file (a runtime's transcript), read locally;
 * none when it cannot be read. Only the tail is read, so a long session costs the same as a short one.
 */
export function tailLines(path: string): string[] {
  // Only a regular file, opened without blocking and without following a link: a FIFO or a link
  // to a device at the transcript's path would otherwise hold the hook until the runtime kills it.
  const o = openRegularFile(path);
  if (!o.ok) return [];
  try {
    const length = Math.min(o.size, TAIL_BYTES);
    const buf = readAt(o.fd, length, o.size - length);
    const lines = buf.toString('utf8').split('\n');
    if (o.size > length) lines.shift(); // the first line of the tail may be cut
    return lines;
  } catch {
    return [];
  } finally {
    closeSync(o.fd);
  }
}
