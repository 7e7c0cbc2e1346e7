/**
 * What the continuity page reads from the ledger the CLI and the hooks write: each session's
 * latest boundary, classified from its evidence by the core classifier (as `continuity status`
 * does), and its latest activity. Lock-free reads of whole records only; the scan runs again only
 * when the ledger file changed (its inode, size or modification time).
 *
 * A ledger that cannot be read is reported by a code, never by its path.
 */
import { statSync } from 'node:fs';
import type { Classification } from '../classify/classify.js';
import type { ActivityEvidence, BoundaryEvidence } from '../ledger/evidence.js';
import { RecordShapeError } from '../ledger/evidence.js';
import { readAllLatestBoundaries, readLatestActivity } from '../ledger/latest.js';
import { classifyEvidence } from '../ledger/receipt.js';

/** One session's latest boundary as the ledger records it. */
export interface LedgerSession {
  sessionId: string;
  evidence: BoundaryEvidence;
  classification: Classification;
  activity: ActivityEvidence | null;
  /** The latest time in the evidence (ms since the epoch), to order sessions. */
  latestMs: number;
}

/** The ledger's sessions, or why they could not be read. */
export type LedgerRead =
  | { ok: true; sessions: readonly LedgerSession[]; problem?: never }
  | { ok: false; sessions?: never; problem: string };

function latestMs(e: BoundaryEvidence, a: ActivityEvidence | null): number {
  const times = [
    e.pre?.capturedAt,
    e.post?.capturedAt,
    e.compactedAt,
    a?.at,
    ...e.evidenceMissing.map((m) => m.at),
  ];
  let best = 0;
  for (const t of times) {
    const ms = t === undefined ? Number.NaN : Date.parse(t);
    if (Number.isFinite(ms) && ms > best) best = ms;
  }
  return best;
}

/** A cached reader of one ledger file (see the module comment). */
export class LedgerView {
  private readonly _path: string;
  private _stamp = '';
  private _last: LedgerRead = { ok: true, sessions: [] };

  constructor(path: string) {
    this._path = path;
  }

  /** True when the file changed since the last {@link LedgerView.read} (one stat). */
  changed(): boolean {
    return this._stampNow() !== this._stamp;
  }

  /** The ledger's sessions (cached while the file is unchanged). */
  read(): LedgerRead {
    const stamp = this._stampNow();
    if (stamp === this._stamp) return this._last;
    this._stamp = stamp;
    if (stamp === 'ENOENT') {
      this._last = { ok: true, sessions: [] };
      return this._last;
    }
    if (stamp.startsWith('error:')) {
      this._last = { ok: false, problem: `ledger unreadable (${stamp.slice(6)})` };
      return this._last;
    }
    try {
      const sessions = readAllLatestBoundaries(this._path).map((evidence) => {
        const activity = readLatestActivity(this._path, evidence.sessionId);
        return {
          sessionId: evidence.sessionId,
          evidence,
          classification: classifyEvidence(evidence),
          activity,
          latestMs: latestMs(evidence, activity),
        };
      });
      this._last = { ok: true, sessions };
    } catch (e) {
      this._last = {
        ok: false,
        problem:
          e instanceof RecordShapeError
            ? `ledger record seq ${e.seq} does not fit its type; run continuity ledger verify`
            : `ledger unreadable (${(e as NodeJS.ErrnoException).code ?? 'error'})`,
      };
    }
    return this._last;
  }

  private _stampNow(): string {
    try {
      const s = statSync(this._path);
      return `${s.ino}:${s.size}:${s.mtimeMs}`;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      return code === 'ENOENT' ? 'ENOENT' : `error:${code ?? 'error'}`;
    }
  }
}
