/**
 * The lean read path: one session's latest boundary evidence (and latest activity) without
 * taking the lock and without importing zod, commander or OpenTelemetry. This is what the Claude
 * Code write gate loads on every tool call, so it must start nearly as fast as `node -e 0`.
 *
 * Cost: reading `covered`, the session's index file and the few records it points to, plus any
 * records appended after `covered` (normally none). It does not grow with the ledger. When the
 * index is missing or cannot be trusted (another boot, a replaced file, an entry that does not
 * point to a record of the session), it falls back to a full scan, which is correct but O(n);
 * the next append rebuilds the index.
 *
 * It trusts the bytes it reads: the chain is checked by `continuity ledger verify`, not here.
 */
import { closeSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs';
import {
  type ActivityEvidence,
  type BoundaryEvidence,
  BoundarySelector,
  buildEvidence,
  type Candidate,
} from './evidence.js';
import { sidecarPaths } from './paths.js';
import { forEachLine } from './scan.js';
import {
  coveredMatches,
  entryOf,
  type IndexEntry,
  indexFile,
  inodeOf,
  parseEntries,
  readCovered,
} from './session-index.js';
import { MAX_RECORD_BYTES } from './types.js';

type Rec = Record<string, unknown>;
/** A candidate's handle: a parsed record, or where to read it. */
type Handle = { rec: Rec } | { entry: IndexEntry };

/** How the evidence was found (for tests and benchmarks). */
export type ReadPath = 'index' | 'scan';

/** Options of the lean readers. */
export interface LatestOptions {
  /** Skip the index and scan the whole ledger (for benchmarks and cross-checks). Default false. */
  forceScan?: boolean;
  /** Receives which path answered. */
  onPath?: (path: ReadPath) => void;
}

function openForRead(ledgerPath: string): number | undefined {
  try {
    return openSync(ledgerPath, 'r');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

function readText(file: string): string {
  try {
    return readFileSync(file, 'latin1');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw e;
  }
}

/** The exact text a canonical line holds for this session: a cheap filter before JSON.parse. */
function sessionNeedle(sessionId: string): string {
  return `"sessionId":${JSON.stringify(sessionId)}`;
}

function parseLine(text: string): Rec | undefined {
  try {
    const v = JSON.parse(text) as unknown;
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Rec) : undefined;
  } catch {
    return undefined;
  }
}

/** Candidates of one session from the lines between `from` and `to`. */
function scanCandidates(fd: number, sessionId: string, from: number, to: number): Candidate<Handle>[] {
  const needle = sessionNeedle(sessionId);
  const out: Candidate<Handle>[] = [];
  forEachLine(
    fd,
    (line) => {
      if (!line.complete || !line.text.includes(needle)) return;
      const rec = parseLine(line.text);
      if (!rec || rec.sessionId !== sessionId) return;
      const e = entryOf(rec, line.offset, line.length);
      if (e) out.push({ seq: e.entry.seq, kind: e.entry.kind, tag: e.entry.tag, item: { rec } });
    },
    from,
    to,
  );
  return out;
}

class StaleIndex extends Error {}

/** Reads the record an index entry points to, checking it is the record the entry describes. */
function loadEntry(fd: number, sessionId: string, c: Candidate<Handle>): Rec {
  if ('rec' in c.item) return c.item.rec;
  const { entry } = c.item;
  if (entry.length > MAX_RECORD_BYTES + 1) throw new StaleIndex();
  const buf = Buffer.allocUnsafe(entry.length);
  const n = readSync(fd, buf, 0, entry.length, entry.offset);
  if (n !== entry.length || buf[n - 1] !== 0x0a) throw new StaleIndex();
  const rec = parseLine(buf.toString('utf8', 0, n - 1));
  if (!rec || rec.seq !== entry.seq || rec.sessionId !== sessionId) throw new StaleIndex();
  const again = entryOf(rec, entry.offset, entry.length);
  if (!again || again.entry.kind !== entry.kind || again.entry.tag !== entry.tag) throw new StaleIndex();
  return rec;
}

/** Candidates of one family of a session from the index, or undefined when the index is unusable. */
function indexCandidates(
  fd: number,
  ledgerPath: string,
  sessionId: string,
  family: 'evidence' | 'activity',
): Candidate<Handle>[] | undefined {
  const { indexDir } = sidecarPaths(ledgerPath);
  // Order matters: `covered`, then entries, then the file size. Writers append the record, then
  // its entries, then `covered`, so everything read here points inside the size read last.
  const covered = readCovered(indexDir);
  const text = readText(indexFile(indexDir, family, sessionId));
  const size = fstatSync(fd).size;
  if (!coveredMatches(covered, fd, inodeOf(fd), size)) return undefined;
  const bySeq = new Map<number, Candidate<Handle>>();
  for (const entry of parseEntries(text)) {
    if (entry.offset + entry.length > size) return undefined;
    bySeq.set(entry.seq, { seq: entry.seq, kind: entry.kind, tag: entry.tag, item: { entry } });
  }
  for (const c of scanCandidates(fd, sessionId, covered.end, size)) {
    if (family === 'activity' ? c.kind === 'activity' : c.kind !== 'activity') bySeq.set(c.seq, c);
  }
  return [...bySeq.values()].sort((a, b) => a.seq - b.seq);
}

function evidenceFrom(
  fd: number,
  sessionId: string,
  candidates: Candidate<Handle>[],
): BoundaryEvidence | null {
  const sel = new BoundarySelector<Handle>();
  for (const c of candidates) sel.feed(c);
  return buildEvidence(sessionId, sel, (c) => loadEntry(fd, sessionId, c));
}

/**
 * The evidence of `sessionId`'s latest boundary in the ledger at `ledgerPath`, or null when the
 * ledger or the session has no boundary. Lock-free: safe beside concurrent appends (it sees
 * whole records only).
 */
export function readLatestBoundary(
  ledgerPath: string,
  sessionId: string,
  options: LatestOptions = {},
): BoundaryEvidence | null {
  const fd = openForRead(ledgerPath);
  if (fd === undefined) return null;
  try {
    if (!options.forceScan) {
      const candidates = indexCandidates(fd, ledgerPath, sessionId, 'evidence');
      if (candidates) {
        try {
          const ev = evidenceFrom(fd, sessionId, candidates);
          options.onPath?.('index');
          return ev;
        } catch (e) {
          if (!(e instanceof StaleIndex)) throw e;
        }
      }
    }
    const ev = evidenceFrom(fd, sessionId, scanCandidates(fd, sessionId, 0, fstatSync(fd).size));
    options.onPath?.('scan');
    return ev;
  } finally {
    closeSync(fd);
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
    const fromIndex = options.forceScan ? undefined : indexCandidates(fd, ledgerPath, sessionId, 'activity');
    const candidates = fromIndex ?? scanCandidates(fd, sessionId, 0, fstatSync(fd).size);
    for (let i = candidates.length - 1; i >= 0; i--) {
      const c = candidates[i]!;
      if (c.kind !== 'activity') continue;
      try {
        const rec = loadEntry(fd, sessionId, c);
        if (typeof rec.at === 'string') {
          return { seq: c.seq, state: rec.state as ActivityEvidence['state'], at: rec.at };
        }
      } catch (e) {
        if (!(e instanceof StaleIndex)) throw e;
        return readLatestActivity(ledgerPath, sessionId, { ...options, forceScan: true });
      }
    }
    return null;
  } finally {
    closeSync(fd);
  }
}

/**
 * Every session's latest boundary evidence (full scan; for `status` without `--session`).
 * Sessions are returned in the order their latest boundary appeared.
 */
export function readAllLatestBoundaries(ledgerPath: string): BoundaryEvidence[] {
  const fd = openForRead(ledgerPath);
  if (fd === undefined) return [];
  try {
    const sessions = new Map<string, BoundarySelector<Handle>>();
    forEachLine(fd, (line) => {
      if (!line.complete) return;
      const rec = parseLine(line.text);
      if (!rec) return;
      const e = entryOf(rec, line.offset, line.length);
      if (!e) return;
      let sel = sessions.get(e.sessionId);
      if (!sel) {
        sel = new BoundarySelector<Handle>();
        sessions.set(e.sessionId, sel);
      }
      sel.feed({ seq: e.entry.seq, kind: e.entry.kind, tag: e.entry.tag, item: { rec } });
    });
    const out: BoundaryEvidence[] = [];
    for (const [sessionId, sel] of sessions) {
      const ev = buildEvidence(sessionId, sel, (c) => loadEntry(fd, sessionId, c));
      if (ev) out.push(ev);
    }
    return out.sort((a, b) => firstSeq(a) - firstSeq(b));
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
