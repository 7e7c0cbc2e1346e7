/**
 * The adapter's own files, outside any repository working tree: where they live and what they
 * hold. Lean on purpose: the write gate reads its cache through this module on every tool call,
 * so it loads nothing but `node:fs` and `node:path` (in the bundled hook entry, plain `require`s).
 *
 * Layout under the state root (`CONTINUITY_STATE_DIR`, else `$XDG_STATE_HOME/agent-continuity`,
 * else `~/.local/state/agent-continuity`, the ledger's default directory too):
 *
 * ```
 * <runtime>/sessions/<key(session id)>/gate.json      boundary track and latest boundary state (cache)
 * <runtime>/sessions/<key(session id)>/lock           serializes read-assemble-write of gate.json
 * <runtime>/sessions/<key(session id)>/activity       latest activity state
 * <runtime>/sessions/<key(session id)>/<key>.*        once-per-boundary markers
 * <runtime>/projects/<key(project dir)>.json          the project's current session id
 * <runtime>/spool/*.json                              OTLP requests not yet delivered
 * ```
 *
 * `<runtime>` is the adapter's runtime name (`claude-code`, …): two runtimes never share state.
 *
 * Every file is 0600 and every directory 0700: they sit beside the ledger and name sessions and
 * boundaries (never values). The gate cache is derived: the ledger stays the evidence, and the
 * cache is rebuilt from it whenever it is missing or says a write must wait.
 *
 * File names are hashes, so a hostile session id or directory name can never become a path. The
 * hash is a 128-bit FNV-1a, not SHA-256: `node:crypto` would cost the gate a third of a bare
 * `node -e 0`. Nothing trusts the hash: the gate cache records its session id and is ignored
 * (re-derived from the ledger) when it does not match.
 *
 * One module for the file helpers, the paths and the cache contents: the write gate's bundle
 * (dist/hook.cjs) holds it whole, so it must stay small and import nothing but built-ins and
 * lean modules of built-ins (the whole-file write is ../../ledger/atomic-file.ts, which the
 * exporter's spool shares).
 */
import {
  accessSync,
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readSync,
  statSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { CONTINUITY_STATES, type ContinuityState } from '../../classify/states.js';
import type { DecisionMap } from '../../decision/model.js';
import { ensureDir, writeFileAtomic } from '../../ledger/atomic-file.js';
import { COVERED_FILE, indexDirOf, indexFile, parseCovered } from '../../ledger/index-names.js';
import type { BoundaryTrack } from './boundary.js';

// ── File helpers ──────────────────────────────────────────────────────────────────────────────
// Whole-file writes, shared with the exporter's spool (node built-ins only).
export { ensureDir, writeFileAtomic };

/**
 * Why a file could not be read as state: it does not exist; it is not a regular file (a FIFO, a
 * device, a socket, a directory: a read could block for ever or never end); it is a symbolic
 * link where none is allowed; it is larger than the reader's bound; or the system refused.
 */
export type FileProblem = 'missing' | 'not_regular' | 'link' | 'too_large' | 'unreadable';

/** A file opened as a regular file, or why it could not be. */
export type RegularOpen =
  | { ok: true; fd: number; size: number; problem?: never }
  | { ok: false; problem: FileProblem; fd?: never; size?: never };

/**
 * Opens `path` for reading only if it is a regular file, without ever blocking: `O_NONBLOCK`
 * (opening a FIFO with no writer returns at once instead of waiting for one) and, unless
 * `followLink`, `O_NOFOLLOW` (a link at the path is refused); then `fstat` on the descriptor
 * opened, so what is checked is what is read (a link to `/dev/zero` or a FIFO is refused after
 * it is followed). The caller closes the descriptor.
 */
export function openRegularFile(path: string, followLink = false): RegularOpen {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | (followLink ? 0 : constants.O_NOFOLLOW));
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return { ok: false, problem: 'missing' };
    return { ok: false, problem: code === 'ELOOP' || code === 'EMLINK' ? 'link' : 'unreadable' };
  }
  try {
    const st = fstatSync(fd);
    if (st.isFile()) return { ok: true, fd, size: st.size };
  } catch {
    // Reported below as not regular: nothing is read from a descriptor that cannot be inspected.
  }
  closeSync(fd);
  return { ok: false, problem: 'not_regular' };
}

/** Reads at most `length` bytes of `fd` from `position` (a short file gives fewer). */
export function readAt(fd: number, length: number, position: number): Buffer {
  const buf = Buffer.allocUnsafe(length);
  let n = 0;
  while (n < length) {
    const got = readSync(fd, buf, n, length - n, position + n);
    if (got === 0) break;
    n += got;
  }
  return buf.subarray(0, n);
}

/** Most bytes of a state or configuration file read ({@link readRegularFile}'s default bound). */
export const MAX_STATE_FILE_BYTES = 4 * 1024 * 1024;

/** A small file's text, or why it could not be read. */
export type RegularRead =
  | { ok: true; text: string; problem?: never }
  | { ok: false; problem: FileProblem; text?: never };

/**
 * Reads a regular file of at most `maxBytes` as UTF-8 ({@link openRegularFile}): never blocks,
 * never reads past the bound (a file that grows while it is read is `too_large` too).
 */
export function readRegularFile(
  path: string,
  maxBytes = MAX_STATE_FILE_BYTES,
  followLink = false,
): RegularRead {
  const o = openRegularFile(path, followLink);
  if (!o.ok) return { ok: false, problem: o.problem };
  try {
    if (o.size > maxBytes) return { ok: false, problem: 'too_large' };
    const buf = readAt(o.fd, maxBytes + 1, 0);
    if (buf.length > maxBytes) return { ok: false, problem: 'too_large' };
    return { ok: true, text: buf.toString('utf8') };
  } catch {
    return { ok: false, problem: 'unreadable' };
  } finally {
    closeSync(o.fd);
  }
}

/** A JSON file as read: absent, present but unusable (and why), or its value. */
export type JsonRead =
  | { kind: 'absent' }
  | { kind: 'unreadable'; problem: Exclude<FileProblem, 'missing'> | 'invalid_json' }
  | { kind: 'value'; value: unknown };

/** Reads and parses a JSON file that must be a regular file of at most `maxBytes`. */
export function readJsonState(path: string, maxBytes = MAX_STATE_FILE_BYTES, followLink = false): JsonRead {
  const r = readRegularFile(path, maxBytes, followLink);
  if (!r.ok) return r.problem === 'missing' ? { kind: 'absent' } : { kind: 'unreadable', problem: r.problem };
  try {
    return { kind: 'value', value: JSON.parse(r.text) as unknown };
  } catch {
    return { kind: 'unreadable', problem: 'invalid_json' };
  }
}

/**
 * Reads and parses a JSON state file (a regular file, no link, bounded); `undefined` when it does
 * not exist, is not valid JSON, or cannot be read as a regular file.
 */
export function readJsonFile(path: string): unknown {
  const r = readJsonState(path);
  return r.kind === 'value' ? r.value : undefined;
}

/** Reads a small state file (regular, no link, bounded); `undefined` when it does not exist or cannot be read so. */
export function readTextFile(path: string): string | undefined {
  const r = readRegularFile(path);
  return r.ok ? r.text : undefined;
}

/**
 * Creates `path` exclusively (O_EXCL, 0600). Returns true for the one caller that created it,
 * false when it already existed: a race-free "do this once" marker between parallel hooks.
 */
export function createMarker(path: string): boolean {
  ensureDir(dirname(path));
  try {
    closeSync(openSync(path, 'wx', 0o600));
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  }
}

/** True when `value` is a plain object (not null, not an array). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// ── Paths ─────────────────────────────────────────────────────────────────────────────────────
/**
 * Where one runtime adapter keeps its state: `<state root>/<runtime>`. Every path below is a
 * function of it, so a store is resolved once per process and passed down.
 */
export interface StateDir {
  /** `<state root>/<runtime>`, absolute. */
  readonly dir: string;
}

/** The state directory of `runtime` under `stateRoot`. */
export function stateDirOf(stateRoot: string, runtime: string): StateDir {
  return { dir: join(stateRoot, runtime) };
}

// FNV-1a 32-bit offset bases of four independent lanes (the first is the standard one).
const LANES = [0x811c9dc5, 0x01000193 ^ 0x5bd1e995, 0x27d4eb2f, 0x165667b1];

/** 128-bit FNV-1a (four 32-bit lanes) of the UTF-16 code units of `text`, as 32 hex digits. */
export function fileKey(text: string): string {
  let out = '';
  for (const [lane, basis] of LANES.entries()) {
    let h = basis >>> 0;
    for (let i = 0; i < text.length; i++) {
      h ^= text.charCodeAt(i) + lane;
      h = Math.imul(h, 0x01000193) >>> 0;
    }
    out += h.toString(16).padStart(8, '0');
  }
  return out;
}

const key = fileKey;

/** The directory of one session's derived state. */
export function sessionDir(s: StateDir, sessionId: string): string {
  return join(s.dir, 'sessions', key(sessionId));
}

/** The gate cache of one session: its boundary track and latest boundary state. */
export function gateFile(s: StateDir, sessionId: string): string {
  return join(sessionDir(s, sessionId), 'gate.json');
}

/** The lock serializing updates of one session's gate cache. */
export function sessionLockFile(s: StateDir, sessionId: string): string {
  return join(sessionDir(s, sessionId), 'lock');
}

/** The latest activity state of one session. */
export function activityFile(s: StateDir, sessionId: string): string {
  return join(sessionDir(s, sessionId), 'activity');
}

/** A once-per-boundary marker, e.g. `injected` (the restatement request was given). */
export function markerFile(s: StateDir, sessionId: string, boundaryId: string, what: string): string {
  return join(sessionDir(s, sessionId), `${key(boundaryId)}.${what}`);
}

/** The file naming the current session of a project directory (what `continuity observe` defaults to). */
export function projectFile(s: StateDir, projectDir: string): string {
  return join(s.dir, 'projects', `${key(resolve(projectDir))}.json`);
}

/** The spool of OTLP requests that could not be delivered yet. */
export function spoolDir(s: StateDir): string {
  return join(s.dir, 'spool');
}

// ── Cache contents ────────────────────────────────────────────────────────────────────────────
/** The latest confirmed boundary of a session as the gate sees it (names, digests, states; never values). */
export interface GateBoundary {
  id: string;
  state: ContinuityState;
  reason: string;
  primaryDecision: string | null;
  decisionNames: string[];
  /** When the compaction happened (its first confirming signal). */
  compactedAt?: string;
  /** Why the pre snapshot is missing, if it is. */
  evidenceMissing?: string;
  change?: { decision: string; fromDigest: string; toDigest: string };
  approvalRefs?: string[];
  /** True once a post snapshot (a restatement) exists for the boundary. */
  observed?: boolean;
  /**
   * The identity and size (`<device>:<inode>:<size>`, see {@link ledgerIdentity}) of the ledger
   * file this classification was read from, taken before the read. The gate acts on a state with
   * no objection only when it names the gate's own ledger file as it is now; anything else (a
   * restatement classified against another ledger, records appended since) is re-derived.
   */
  ledgerId?: string;
}

/**
 * What a pre capture holds while it waits for its compaction: the digests (never values) or
 * why there are none. It reaches the ledger only when a compaction confirms it.
 */
export type PreCapture =
  | {
      ok: true;
      capturedAt: string;
      normalizerVersion: number;
      decisions: DecisionMap;
      /** Decisions whose digest was carried forward along a human approval chain. */
      carried?: string[];
      /**
       * The task record differs from its seal: `decisions` are the sealed digests, and the
       * change is recorded as `task_record_changed` (../../authority/seal.ts).
       */
      taskRecordChanged?: true;
    }
  | { ok: false; capturedAt: string; reason: string; names: string[] };

/** The gate cache of one session. `boundary: null` means no compaction happened in the session. */
export interface GateState {
  v: 2;
  sessionId: string;
  boundary: GateBoundary | null;
  /**
   * With `boundary: null`: the ledger's identity and size ({@link ledgerIdentity}) when the
   * session was found to have no boundary. The gate trusts "no compaction" only while the ledger
   * is unchanged since; otherwise it asks the ledger again.
   */
  ledgerId?: string;
  /** The boundary assembly's state (pending pre, current boundary's signals and tokens). */
  track?: BoundaryTrack<PreCapture>;
  updatedAt: string;
}

/**
 * The identity and extent of the ledger file at `path` (`<device>:<inode>:<size>`, never the path
 * itself), or `undefined` when it does not exist. A cache that records it was derived from this
 * very file as it was then: any record appended since (a compaction the cache never learnt of,
 * because the hooks could not write it) changes it. One `stat`, cheap enough for the fast path.
 */
export function ledgerIdentity(path: string, sessionId?: string): string | undefined {
  try {
    const st = statSync(path, { bigint: true });
    const id = `${st.dev}:${st.ino}:${st.size}`;
    return sessionId === undefined ? id : `${id}:${evidenceIndexSize(path, sessionId)}`;
  } catch (e) {
    // With a session: a ledger not yet written holds nothing for it, as long as it stays so.
    return sessionId !== undefined && (e as NodeJS.ErrnoException).code === 'ENOENT' ? NO_LEDGER : undefined;
  }
}

/** The mark of a ledger that does not exist yet. */
const NO_LEDGER = 'absent';

/** The size of the session's evidence index file (0 when it has none, -1 when it is not a regular file). */
function evidenceIndexSize(ledgerPath: string, sessionId: string): number {
  try {
    const st = lstatSync(indexFile(indexDirOf(ledgerPath), 'evidence', sessionId), { throwIfNoEntry: false });
    if (!st) return 0;
    return st.isFile() ? st.size : -1;
  } catch {
    return -1;
  }
}

/**
 * True when the ledger at `ledgerPath` holds nothing for `sessionId` that it did not hold when
 * `mark` ({@link ledgerIdentity} with the session) was taken: the same file, and either not grown
 * or grown only by other sessions' records and activity. The second is read from the ledger's
 * index: it must cover every byte of the ledger (`covered` at its end, same inode), and the
 * session's evidence index file must be as long as it was. Anything else (an index behind, one
 * that cannot be read, a new entry of the session) is false: the gate then asks the ledger itself.
 */
export function ledgerUnchangedFor(mark: string, ledgerPath: string, sessionId: string): boolean {
  const [dev, ino, size, evidence] = mark.split(':');
  let st: import('node:fs').BigIntStats;
  try {
    st = statSync(ledgerPath, { bigint: true });
  } catch (e) {
    return mark === NO_LEDGER && (e as NodeJS.ErrnoException).code === 'ENOENT';
  }
  if (mark === NO_LEDGER) return false;
  if (`${st.dev}` !== dev || `${st.ino}` !== ino) return false;
  if (`${st.size}` === size) return true;
  if (evidence === undefined) return false;
  const read = readRegularFile(join(indexDirOf(ledgerPath), COVERED_FILE), 4096);
  const covered = read.ok ? parseCovered(read.text) : undefined;
  if (!covered || covered.ino !== `${st.ino}` || BigInt(covered.end) !== st.size) return false;
  return `${evidenceIndexSize(ledgerPath, sessionId)}` === evidence;
}

/**
 * True when this process could replace the session's gate cache now: the file (when it exists)
 * and its directory are writable. A cache it could not replace may be stale (a read-only bind
 * mount, `chmod a-w`, an immutable directory: the recording hooks could not write the boundary
 * they saw), so the gate does not act on it.
 */
export function cacheReplaceable(s: StateDir, sessionId: string): boolean {
  try {
    accessSync(sessionDir(s, sessionId), constants.W_OK);
    accessSync(gateFile(s, sessionId), constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** True for the states in which the gate has no objection. */
export function isHealthy(state: ContinuityState): boolean {
  return state === 'preserved' || state === 'approved_change';
}

function isStringArray(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((x) => typeof x === 'string');
}

/** Reads a session's gate cache; `undefined` when missing, unreadable or for another session. */
export function readGateState(s: StateDir, sessionId: string): GateState | undefined {
  const raw = readJsonFile(gateFile(s, sessionId));
  if (!isRecord(raw) || raw.v !== 2 || raw.sessionId !== sessionId) return undefined;
  if (raw.track !== undefined && !isRecord(raw.track)) return undefined;
  if (raw.boundary === null) return raw as unknown as GateState;
  const b = raw.boundary;
  if (
    !isRecord(b) ||
    typeof b.id !== 'string' ||
    !(CONTINUITY_STATES as readonly unknown[]).includes(b.state) ||
    typeof b.reason !== 'string' ||
    !(b.primaryDecision === null || typeof b.primaryDecision === 'string') ||
    !isStringArray(b.decisionNames)
  ) {
    return undefined;
  }
  return raw as unknown as GateState;
}

/** Writes a session's gate cache (atomic, 0600). */
export function writeGateState(
  s: StateDir,
  sessionId: string,
  boundary: GateBoundary | null,
  now: string,
  track?: BoundaryTrack<PreCapture>,
  ledgerId?: string,
): GateState {
  const state: GateState = {
    v: 2,
    sessionId,
    boundary,
    ...(boundary === null && ledgerId ? { ledgerId } : {}),
    ...(track ? { track } : {}),
    updatedAt: now,
  };
  writeFileAtomic(gateFile(s, sessionId), `${JSON.stringify(state)}\n`);
  return state;
}

/** A session's latest activity state and the start time (ms since the epoch) of the hook that reported it. */
export interface ActivityMark {
  state: string;
  /** Absent in a file written before the time was recorded: any later report then wins. */
  atMs?: number;
}

/** Reads a session's latest recorded activity (`<state> <atMs>`, or `<state>` as older versions wrote it). */
export function readActivityMark(s: StateDir, sessionId: string): ActivityMark | undefined {
  const text = readTextFile(activityFile(s, sessionId))?.trim();
  if (!text) return undefined;
  const [state, at] = text.split(/\s+/, 2);
  const atMs = Number(at);
  return { state: state!, ...(at !== undefined && Number.isFinite(atMs) ? { atMs } : {}) };
}

/**
 * What a report of `state` by a hook started at `atMs` does to the recorded activity (pure):
 * `stale` when a hook started later already reported (a background hook that finished late must
 * not turn the state back), `same` when it repeats the recorded state (only the time moves on),
 * `changed` otherwise. The runtime starts its hooks in the order of its events, so a hook's start
 * time orders the reports whatever order they finish in.
 */
export function activityStep(
  recorded: ActivityMark | undefined,
  state: string,
  atMs: number,
): 'stale' | 'same' | 'changed' {
  if (recorded?.atMs !== undefined && atMs < recorded.atMs) return 'stale';
  return recorded?.state === state ? 'same' : 'changed';
}

/**
 * When this hook process started, in milliseconds since the epoch: the time of the event it
 * reports, as the runtime started the hook for it (a background hook may finish long after).
 */
export function hookStartMs(): number {
  return performance.timeOrigin;
}

/** Reads a session's latest recorded activity state. */
export function readActivity(s: StateDir, sessionId: string): string | undefined {
  return readActivityMark(s, sessionId)?.state;
}

/** Records a session's latest activity state and the start time of the hook that reported it. */
export function writeActivity(s: StateDir, sessionId: string, mark: Required<ActivityMark>): void {
  writeFileAtomic(activityFile(s, sessionId), `${mark.state} ${mark.atMs}\n`);
}

/** The current session of a project directory, as written by the hooks. */
export interface ProjectSession {
  v: 1;
  sessionId: string;
  updatedAt: string;
}

/** Records `sessionId` as the current session of `projectDir` (what `continuity observe` defaults to). */
export function writeProjectSession(s: StateDir, projectDir: string, sessionId: string, now: string): void {
  const doc: ProjectSession = { v: 1, sessionId, updatedAt: now };
  writeFileAtomic(projectFile(s, projectDir), `${JSON.stringify(doc)}\n`);
}

/** Reads the current session of `projectDir`, if a hook recorded one. */
export function readProjectSession(s: StateDir, projectDir: string): ProjectSession | undefined {
  const raw = readJsonFile(projectFile(s, projectDir));
  if (!isRecord(raw) || raw.v !== 1 || typeof raw.sessionId !== 'string') return undefined;
  return raw as unknown as ProjectSession;
}

/** The current session recorded for `dir` or the nearest parent that has one. */
export function findProjectSession(s: StateDir, dir: string): string | undefined {
  let d = resolve(dir);
  for (;;) {
    const found = readProjectSession(s, d);
    if (found) return found.sessionId;
    const up = dirname(d);
    if (up === d) return undefined;
    d = up;
  }
}
