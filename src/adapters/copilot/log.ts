/**
 * Copilot CLI's own record of a compaction, in the session's directory
 * `$COPILOT_HOME/session-state/<session>/` (`~/.copilot` by default). Copilot has no
 * post-compaction hook; when it applies a compaction it writes two records (recorded on 1.0.102,
 * docs/copilot.md):
 *
 * - a checkpoint file, `checkpoints/NNN-<title>.md` (the summary), written as the compaction is
 *   applied, before the next model request: so before the next tool call's hook runs. A cancelled
 *   or failed compaction writes none.
 * - `session.compaction_complete` with `success` and `outcome` (`applied`, or `cancelled` when
 *   the session ended first) in the event log `events.jsonl`, the file its PreCompact payload
 *   names as the transcript. Copilot writes that log on a debounce: the record can reach the disk
 *   after the next tool call's `preToolUse` hook has run, so the log alone can miss an applied
 *   compaction at exactly the tool call that must be held.
 *
 * Either is evidence. Read locally, by the hook of the session that runs next: of the checkpoint
 * files only their names, type and time; of the log only the type, success and time of those
 * records (the log and the checkpoints also hold prompts, summaries and tool payloads, which are
 * never read or kept). Files are opened as regular files only, without following a link or
 * blocking; the log is read from its tail.
 *
 * Lean: node built-ins only (the gate's bundle holds it).
 */
import { lstatSync, readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { readTail } from '../core/tail.js';

/** How much of the log's tail is read: a compaction's record is among the session's last events. */
export const LOG_TAIL_BYTES = 4 * 1024 * 1024;

const COMPLETE = '"session.compaction_complete"';
/** A checkpoint file Copilot writes for an applied compaction (`001-session-0c579f57.md`); not `index.md`. */
const CHECKPOINT_FILE = /^[0-9]{3,}-[^/]*\.md$/;
/** Most directory entries looked at: Copilot writes one checkpoint per compaction. */
const MAX_CHECKPOINT_ENTRIES = 10_000;
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

/**
 * The time (RFC 3339) of the latest checkpoint file in `dir` written at or after `sinceMs`: a
 * compaction Copilot applied then. Only regular files (not links) named as checkpoints count; an
 * unreadable or missing directory is no evidence.
 */
export function latestCheckpoint(dir: string, sinceMs: number): string | undefined {
  let names: string[];
  try {
    // A link in place of the directory is not followed: lstat first (readdir never blocks).
    if (!lstatSync(dir).isDirectory()) return undefined;
    names = readdirSync(dir);
  } catch {
    return undefined;
  }
  let latest = Number.NEGATIVE_INFINITY;
  for (const name of names.slice(0, MAX_CHECKPOINT_ENTRIES)) {
    if (!CHECKPOINT_FILE.test(name)) continue;
    let mtimeMs: number;
    try {
      const st = lstatSync(join(dir, name));
      if (!st.isFile()) continue;
      mtimeMs = st.mtimeMs;
    } catch {
      continue;
    }
    if (mtimeMs >= sinceMs && mtimeMs > latest) latest = mtimeMs;
  }
  return Number.isFinite(latest) ? new Date(Math.round(latest)).toISOString() : undefined;
}

/**
 * {@link HookDialect.compactionEvidence} for Copilot: the latest compaction applied since
 * `sinceMs`, from its checkpoint files or its event log, whichever shows it (the log may not yet
 * hold a compaction whose checkpoint is written: it is flushed on a debounce).
 */
export function copilotCompactionEvidence(
  env: NodeJS.ProcessEnv,
  sessionId: string,
  sinceMs: number,
): string | undefined {
  const path = copilotEventLog(env, sessionId);
  if (!path) return undefined;
  const checkpoint = latestCheckpoint(join(dirname(path), 'checkpoints'), sinceMs);
  const text = readTail(path, LOG_TAIL_BYTES);
  const logged = text === undefined ? undefined : latestCompaction(text, sinceMs);
  if (!checkpoint || !logged) return checkpoint ?? logged;
  return Date.parse(checkpoint) > Date.parse(logged) ? checkpoint : logged;
}
