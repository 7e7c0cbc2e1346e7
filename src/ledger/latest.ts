/**
 * The lean read path: one session's latest boundary evidence (and latest activity), or every
 * session's, without taking the lock and without importing zod, commander or OpenTelemetry. This
 * is what the Claude Code write gate loads on its slow path, so it must start nearly as fast as
 * `node -e 0`.
 *
 * Cost per session: reading `covered`, the last line of the session's `b-` index file (its latest
 * boundary), the entries of its `s-` file from that boundary on (read backwards from the end), the
 * few records they point to, plus any records appended after `covered` (normally none). It does
 * not grow with the ledger, nor with the session's earlier boundaries. When the index is missing
 * or cannot be trusted (another boot, a replaced file, an entry that does not point to a record
 * of the session), it falls back to a full scan, which is correct but O(n); the next append
 * rebuilds the index.
 *
 * It trusts the bytes it reads: the chain is checked by `continuity ledger verify`, not here.
 */
import { closeSync, constants, fstatSync, readSync } from 'node:fs';
import { type TrustedKeys, trustedKeysOf } from '../authority/trust.js';
import {
  type ActivityEvidence,
  type BoundaryEvidence,
  BoundarySelector,
  buildEvidence,
  type Candidate,
} from './evidence.js';
import { onFile, openNoFollow, readSideFile } from './files.js';
import { sidecarPaths } from './paths.js';
import { forEachLine, parseRecordLine } from './scan.js';
import {
  APPROVER_KEYS_INDEX_ID,
  coveredMatches,
  entryOf,
  type IndexEntry,
  indexFile,
  inodeOf,
  isBoundaryKind,
  parseEntries,
  readBoundaryIds,
  readCovered,
  readLastEntry,
  readSessionEvidence,
  readSessions,
  type SessionEvidenceRead,
} from './session-index.js';
import { MAX_RECORD_BYTES } from './types.js';

type Rec = Record<string, unknown>;
/** A candidate's handle: a parsed record and where it is, or an index entry to read it from. */
type Handle = { rec: Rec; offset: number; length: number } | { entry: IndexEntry };

/** How the evidence was found (for tests and benchmarks). */
export type ReadPath = 'index' | 'scan';

/** Options of the lean readers. */
export interface LatestOptions {
  /** Skip the index and scan the whole ledger (for benchmarks and cross-checks). Default false. */
  forceScan?: boolean;
  /** Receives which path answered. */
  onPath?: (path: ReadPath) => void;
  /** The approver keys the run trusts as the chain's first (`CONTINUITY_APPROVER_KEYS`). Default none: the ledger's pin. */
  approverRoots?: readonly string[];
}

function openForRead(ledgerPath: string): number | undefined {
  return openNoFollow(ledgerPath, constants.O_RDONLY, undefined, true);
}

function sizeOf(fd: number, ledgerPath: string): number {
  return onFile(ledgerPath, 'read', () => fstatSync(fd).size);
}

/** The exact text a canonical line holds for this session: a cheap filter before JSON.parse. */
function sessionNeedle(sessionId: string): string {
  return `"sessionId":${JSON.stringify(sessionId)}`;
}

function recordCandidate(
  rec: Rec,
  offset: number,
  length: number,
): { sessionId: string; c: Candidate<Handle> } | undefined {
  const e = entryOf(rec, offset, length);
  if (!e) return undefined;
  return {
    sessionId: e.sessionId,
    c: { seq: e.entry.seq, kind: e.entry.kind, tag: e.entry.tag, item: { rec, offset, length } },
  };
}

/** Candidates of one session from the lines between `from` and `to`. */
function scanCandidates(fd: number, sessionId: string, from: number, to: number): Candidate<Handle>[] {
  const needle = sessionNeedle(sessionId);
  const out: Candidate<Handle>[] = [];
  forEachLine(
    fd,
    (line) => {
      if (!line.complete || !line.text.includes(needle)) return;
      const rec = parseRecordLine(line.text);
      if (!rec || rec.sessionId !== sessionId) return;
      const r = recordCandidate(rec, line.offset, line.length);
      if (r) out.push(r.c);
    },
    from,
    to,
  );
  return out;
}

/** Candidates of every session from the lines between `from` and `to`. */
function scanAllCandidates(fd: number, from: number, to: number): Map<string, Candidate<Handle>[]> {
  const out = new Map<string, Candidate<Handle>[]>();
  forEachLine(
    fd,
    (line) => {
      if (!line.complete) return;
      const rec = parseRecordLine(line.text);
      const r = rec && recordCandidate(rec, line.offset, line.length);
      if (!r) return;
      const list = out.get(r.sessionId);
      if (list) list.push(r.c);
      else out.set(r.sessionId, [r.c]);
    },
    from,
    to,
  );
  return out;
}

class StaleIndex extends Error {}

const KEY_NEEDLE = '"type":"approver_key"';

function keyRecordsBetween(fd: number, from: number, to: number): Rec[] {
  const out: Rec[] = [];
  forEachLine(
    fd,
    (line) => {
      if (!line.complete || !line.text.includes(KEY_NEEDLE)) return;
      const rec = parseRecordLine(line.text);
      if (rec?.type === 'approver_key') out.push(rec);
    },
    from,
    to,
  );
  return out;
}

/** The key certificates from the index, or undefined when the index cannot be used. */
function keyRecordsFromIndex(fd: number, ledgerPath: string): Rec[] | undefined {
  const { indexDir } = sidecarPaths(ledgerPath);
  const covered = readCovered(indexDir);
  if (!covered) return undefined;
  const entries = parseEntries(readSideFile(indexFile(indexDir, 'evidence', APPROVER_KEYS_INDEX_ID)) ?? '');
  const size = sizeOf(fd, ledgerPath);
  if (!coveredMatches(covered, fd, inodeOf(fd), size)) return undefined;
  const out: Rec[] = [];
  for (const entry of entries) {
    if (entry.kind !== 'approver_key' || entry.offset + entry.length > size) return undefined;
    if (entry.length > MAX_RECORD_BYTES + 1) return undefined;
    const buf = Buffer.allocUnsafe(entry.length);
    const n = readSync(fd, buf, 0, entry.length, entry.offset);
    if (n !== entry.length || buf[n - 1] !== 0x0a) return undefined;
    const rec = parseRecordLine(buf.toString('utf8', 0, n - 1));
    if (!rec || rec.seq !== entry.seq || rec.type !== 'approver_key') return undefined;
    out.push(rec);
  }
  return [...out, ...keyRecordsBetween(fd, covered.end, size)];
}

/**
 * Every approver key certificate in the ledger, in ledger order: from the index (one read per
 * certificate), else a scan. The trusted chain is the ledger's (../authority/trust.ts).
 */
function readKeyRecords(fd: number, ledgerPath: string): Rec[] {
  return keyRecordsFromIndex(fd, ledgerPath) ?? keyRecordsBetween(fd, 0, fstatSync(fd).size);
}

/** The approver key certificates of the ledger at `ledgerPath`, in ledger order. Lock-free. */
export function readApproverKeyRecords(ledgerPath: string): Array<Record<string, unknown>> {
  const fd = openForRead(ledgerPath);
  if (fd === undefined) return [];
  try {
    return onFile(ledgerPath, 'read', () => readKeyRecords(fd, ledgerPath));
  } finally {
    closeSync(fd);
  }
}

/** Reads the record an index entry points to, checking it is the record the entry describes. */
function loadEntry(fd: number, sessionId: string, c: Candidate<Handle>): Rec {
  if ('rec' in c.item) return c.item.rec;
  const { entry } = c.item;
  if (entry.length > MAX_RECORD_BYTES + 1) throw new StaleIndex();
  const buf = Buffer.allocUnsafe(entry.length);
  const n = readSync(fd, buf, 0, entry.length, entry.offset);
  if (n !== entry.length || buf[n - 1] !== 0x0a) throw new StaleIndex();
  const rec = parseRecordLine(buf.toString('utf8', 0, n - 1));
  if (!rec || rec.seq !== entry.seq || rec.sessionId !== sessionId) throw new StaleIndex();
  const again = entryOf(rec, entry.offset, entry.length);
  if (!again || again.entry.kind !== entry.kind || again.entry.tag !== entry.tag) throw new StaleIndex();
  return rec;
}

function fromEntries(entries: IndexEntry[], size: number): Candidate<Handle>[] | undefined {
  const out: Candidate<Handle>[] = [];
  for (const entry of entries) {
    if (entry.offset + entry.length > size) return undefined;
    out.push({ seq: entry.seq, kind: entry.kind, tag: entry.tag, item: { entry } });
  }
  return out;
}

/**
 * One session's candidates from what its index said and the records after `covered` (`tail`),
 * in seq order; undefined when the index cannot be used. With the session's latest boundary
 * known, only that boundary's records and the approvals after its start are candidates, unless
 * the tail holds a record of another boundary of the session (new, or a late record for an old
 * one: only the whole `s-` file tells which).
 */
function sessionCandidates(
  indexDir: string,
  sessionId: string,
  read: SessionEvidenceRead,
  tail: readonly Candidate<Handle>[],
  size: number,
): Candidate<Handle>[] | undefined {
  const latest = read.opened?.boundaryId;
  let entries = read.entries;
  const current = latest !== undefined && !tail.some((c) => isBoundaryKind(c.kind) && c.tag !== latest);
  if (latest !== undefined && !current) {
    entries = parseEntries(readSideFile(indexFile(indexDir, 'evidence', sessionId)) ?? '');
  }
  const fromIndex = fromEntries(entries, size);
  if (!fromIndex) return undefined;
  const bySeq = new Map<number, Candidate<Handle>>();
  for (const c of [...fromIndex, ...tail]) {
    if (current && c.kind !== 'approval' && c.tag !== latest) continue;
    bySeq.set(c.seq, c);
  }
  return [...bySeq.values()].sort((a, b) => a.seq - b.seq);
}

function evidenceFrom(
  fd: number,
  sessionId: string,
  candidates: Candidate<Handle>[],
  trust: TrustedKeys,
): BoundaryEvidence | null {
  const sel = new BoundarySelector<Handle>();
  for (const c of candidates) sel.feed(c);
  const ev = buildEvidence(sessionId, sel, (c) => loadEntry(fd, sessionId, c), trust);
  if (ev) {
    ev.locations = sel
      .needed()
      .map(({ seq, item }) =>
        'entry' in item
          ? { seq, offset: item.entry.offset, length: item.entry.length }
          : { seq, offset: item.offset, length: item.length },
      );
  }
  return ev;
}

/** The index's answer for one session, or undefined when the index cannot be used. */
function latestFromIndex(
  fd: number,
  ledgerPath: string,
  sessionId: string,
  trust: TrustedKeys,
): BoundaryEvidence | null | undefined {
  const { indexDir } = sidecarPaths(ledgerPath);
  // Order matters: `covered`, then the index files, then the file size. Writers append the
  // record, then its index lines, then `covered`, so everything read here points inside the size
  // read last.
  const covered = readCovered(indexDir);
  if (!covered) return undefined;
  const read = readSessionEvidence(indexDir, sessionId, covered.seq);
  const size = sizeOf(fd, ledgerPath);
  if (!coveredMatches(covered, fd, inodeOf(fd), size)) return undefined;
  const tail = scanCandidates(fd, sessionId, covered.end, size);
  const candidates = sessionCandidates(indexDir, sessionId, read, tail, size);
  if (!candidates) return undefined;
  try {
    return evidenceFrom(fd, sessionId, candidates, trust);
  } catch (e) {
    if (e instanceof StaleIndex) return undefined;
    throw e;
  }
}

/**
 * The evidence of `sessionId`'s latest boundary in the ledger at `ledgerPath`, or null when the
 * ledger or the session has no boundary. Lock-free: safe beside concurrent appends (it sees
 * whole records only). Throws `LedgerFileError` naming the file for a ledger path that is a
 * symbolic link or cannot be read.
 */
export function readLatestBoundary(
  ledgerPath: string,
  sessionId: string,
  options: LatestOptions = {},
): BoundaryEvidence | null {
  const fd = openForRead(ledgerPath);
  if (fd === undefined) return null;
  try {
    return onFile(ledgerPath, 'read', () => {
      const trust = trustedKeysOf(ledgerPath, readKeyRecords(fd, ledgerPath), options.approverRoots);
      if (!options.forceScan) {
        const ev = latestFromIndex(fd, ledgerPath, sessionId, trust);
        if (ev !== undefined) {
          options.onPath?.('index');
          return ev;
        }
      }
      const ev = evidenceFrom(fd, sessionId, scanCandidates(fd, sessionId, 0, fstatSync(fd).size), trust);
      options.onPath?.('scan');
      return ev;
    });
  } finally {
    closeSync(fd);
  }
}

function activityOf(fd: number, sessionId: string, c: Candidate<Handle>): ActivityEvidence | undefined {
  const rec = loadEntry(fd, sessionId, c);
  return typeof rec.at === 'string'
    ? { seq: c.seq, state: rec.state as ActivityEvidence['state'], at: rec.at }
    : undefined;
}

/** The index's answer for a session's activity, or undefined when the index cannot be used. */
function activityFromIndex(
  fd: number,
  ledgerPath: string,
  sessionId: string,
): ActivityEvidence | null | undefined {
  const { indexDir } = sidecarPaths(ledgerPath);
  const covered = readCovered(indexDir);
  if (!covered) return undefined;
  const last = readLastEntry(indexFile(indexDir, 'activity', sessionId));
  const size = sizeOf(fd, ledgerPath);
  if (!coveredMatches(covered, fd, inodeOf(fd), size)) return undefined;
  if (last && (last.offset + last.length > size || last.kind !== 'activity')) return undefined;
  const tail = scanCandidates(fd, sessionId, covered.end, size).filter((c) => c.kind === 'activity');
  const c = tail.at(-1) ?? (last && { seq: last.seq, kind: last.kind, tag: last.tag, item: { entry: last } });
  if (!c) return null;
  try {
    return activityOf(fd, sessionId, c) ?? undefined;
  } catch (e) {
    if (e instanceof StaleIndex) return undefined;
    throw e;
  }
}

/** The latest activity state of `sessionId`, or null when none is recorded. Lock-free. */
export function readLatestActivity(
  ledgerPath: string,
  sessionId: string,
  options: LatestOptions = {},
): ActivityEvidence | null {
  const fd = openForRead(ledgerPath);
  if (fd === undefined) return null;
  try {
    return onFile(ledgerPath, 'read', () => {
      if (!options.forceScan) {
        const a = activityFromIndex(fd, ledgerPath, sessionId);
        if (a !== undefined) {
          options.onPath?.('index');
          return a;
        }
      }
      const candidates = scanCandidates(fd, sessionId, 0, fstatSync(fd).size);
      options.onPath?.('scan');
      for (let i = candidates.length - 1; i >= 0; i--) {
        const c = candidates[i]!;
        if (c.kind !== 'activity') continue;
        const a = activityOf(fd, sessionId, c);
        if (a) return a;
      }
      return null;
    });
  } finally {
    closeSync(fd);
  }
}

/**
 * Every boundary id `sessionId` has in the ledger at `ledgerPath` (from the index's `b-` file
 * when it is usable, else a scan), for checking a `--boundary` a person typed. Lock-free.
 */
export function readBoundaryIdsOf(ledgerPath: string, sessionId: string): Set<string> {
  const fd = openForRead(ledgerPath);
  if (fd === undefined) return new Set();
  try {
    return onFile(ledgerPath, 'read', () => {
      const { indexDir } = sidecarPaths(ledgerPath);
      const covered = readCovered(indexDir);
      const fromIndex = covered ? readBoundaryIds(indexDir, sessionId) : undefined;
      const size = fstatSync(fd).size;
      const usable = fromIndex && coveredMatches(covered, fd, inodeOf(fd), size);
      const ids = usable ? fromIndex : new Set<string>();
      for (const c of scanCandidates(fd, sessionId, usable ? covered!.end : 0, size)) {
        if (isBoundaryKind(c.kind)) ids.add(c.tag);
      }
      return ids;
    });
  } finally {
    closeSync(fd);
  }
}

function firstSeq(e: BoundaryEvidence): number {
  return Math.min(
    ...[e.seqs.pre, e.seqs.post, e.seqs.boundary, ...e.evidenceMissing.map((m) => m.seq)].filter(
      (s): s is number => s !== null,
    ),
    Number.MAX_SAFE_INTEGER,
  );
}

function allFromScan(fd: number, trust: TrustedKeys): BoundaryEvidence[] {
  const out: BoundaryEvidence[] = [];
  for (const [sessionId, candidates] of scanAllCandidates(fd, 0, fstatSync(fd).size)) {
    const ev = evidenceFrom(fd, sessionId, candidates, trust);
    if (ev) out.push(ev);
  }
  return out;
}

/** Every session's evidence from the index, or undefined when the index cannot be used. */
function allFromIndex(fd: number, ledgerPath: string, trust: TrustedKeys): BoundaryEvidence[] | undefined {
  const { indexDir } = sidecarPaths(ledgerPath);
  const covered = readCovered(indexDir);
  if (!covered) return undefined;
  const reads = new Map<string, SessionEvidenceRead>();
  for (const sessionId of readSessions(indexDir))
    reads.set(sessionId, readSessionEvidence(indexDir, sessionId, covered.seq));
  const size = sizeOf(fd, ledgerPath);
  if (!coveredMatches(covered, fd, inodeOf(fd), size)) return undefined;
  const tails = scanAllCandidates(fd, covered.end, size);
  const out: BoundaryEvidence[] = [];
  try {
    for (const sessionId of new Set([...reads.keys(), ...tails.keys()])) {
      // A session first seen in the tail has no index lines yet: everything it has is in the tail.
      const read = reads.get(sessionId) ?? { opened: undefined, entries: [] };
      const candidates = sessionCandidates(indexDir, sessionId, read, tails.get(sessionId) ?? [], size);
      if (!candidates) return undefined;
      const ev = evidenceFrom(fd, sessionId, candidates, trust);
      if (ev) out.push(ev);
    }
  } catch (e) {
    if (e instanceof StaleIndex) return undefined;
    throw e;
  }
  return out;
}

/**
 * Every session's latest boundary evidence (for `status` without `--session`), from the index:
 * the cost grows with the number of sessions, not with the ledger. Sessions are returned in the
 * order their latest boundary appeared.
 */
export function readAllLatestBoundaries(ledgerPath: string, options: LatestOptions = {}): BoundaryEvidence[] {
  const fd = openForRead(ledgerPath);
  if (fd === undefined) return [];
  try {
    return onFile(ledgerPath, 'read', () => {
      const trust = trustedKeysOf(ledgerPath, readKeyRecords(fd, ledgerPath), options.approverRoots);
      let out = options.forceScan ? undefined : allFromIndex(fd, ledgerPath, trust);
      options.onPath?.(out ? 'index' : 'scan');
      out ??= allFromScan(fd, trust);
      return out.sort((a, b) => firstSeq(a) - firstSeq(b));
    });
  } finally {
    closeSync(fd);
  }
}
