/**
 * Copilot CLI's own record of a compaction: the session's event log,
 * `$COPILOT_HOME/session-state/<session>/events.jsonl` (`~/.copilot` by default), the file its
 * PreCompact payload names as the transcript. Copilot has no post-compaction hook; it appends
 * `session.compaction_complete` with `success` and `outcome` (`applied`, or `cancelled` when the
 * session ended first) to this log (recorded on 1.0.102, docs/copilot.md).
 *
 * Read locally, by the hook of the session that runs next, only for the type, success and time of
 * those records: the log also holds prompts, summaries and tool payloads, which are never kept.
 * Opened as a regular file only, without following a link or blocking, and read from its tail.
 *
 * Lean: node built-ins only (the gate's bundle holds it).
 */
import { homedir } from 'node:os';
import { join } from 'node:path';
import { readTail } from '../core/tail.js';

/** How much of the log's tail is read: a compaction's record is among the session's last events. */
export const LOG_TAIL_BYTES = 4 * 1024 * 1024;

const COMPLETE = '"session.compaction_complete"';
/** Copilot's session ids are UUIDs; anything else never becomes a path. */
const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9-]{0,127}$/;

/** The session's event log, or `undefined` for an id that is not Copilot's. */
export function copilotEventLog(env: NodeJS.ProcessEnv, sessionId: string): string | undefined {
  if (!SESSION_ID.test(sessionId)) return undefined;
  const home = env.COPILOT_HOME?.startsWith('/') ? env.COPILOT_HOME : join(env.HOME || homedir(), '.copilot');
  return join(home, 'session-state', sessionId, 'events.jsonl');
}

/**
 * The time (RFC 3339) of the latest successful compaction in the log text at or after `sinceMs`
 * (pure). A cancelled or failed compaction, or one before `sinceMs`, is not evidence.
 */
export function latestCompaction(text: string, sinceMs: number): string | undefined {
  let latest: string | undefined;
  for (const line of text.split('\n')) {
    if (!line.includes(COMPLETE)) continue;
    let rec: unknown;
    try {
      rec = JSON.parse(line);
    } catch {
      continue; // the first line of a tail read, or a line being written
    }
    if (typeof rec !== 'object' || rec === null) continue;
    const { type, data, timestamp } = rec as { type?: unknown; data?: unknown; timestamp?: unknown };
    if (type !== 'session.compaction_complete' || typeof timestamp !== 'string') continue;
    if (typeof data !== 'object' || data === null || (data as { success?: unknown }).success !== true)
      continue;
    const at = Date.parse(timestamp);
    if (Number.isNaN(at) || at < sinceMs) continue;
    if (!latest || at > Date.parse(latest)) latest = new Date(at).toISOString();
  }
  return latest;
}

/** {@link HookDialect.compactionEvidence} for Copilot: its event log's latest completed compaction since `sinceMs`. */
export function copilotCompactionEvidence(
  env: NodeJS.ProcessEnv,
  sessionId: string,
  sinceMs: number,
): string | undefined {
  const path = copilotEventLog(env, sessionId);
  const text = path ? readTail(path, LOG_TAIL_BYTES) : undefined;
  return text === undefined ? undefined : latestCompaction(text, sinceMs);
}
