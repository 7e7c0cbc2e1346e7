/**
 * What the continuity page remembers beyond the correlator's latest state: every resolution of
 * each session's boundaries since the service started (a re-observation that clears a conflict
 * is a second resolution of the same boundary), bounded in sessions and entries per session.
 * Pure bookkeeping: no I/O, the clock is a parameter.
 */
import type { Resolution } from '../correlate/types.js';

/** One resolution as the page keeps it. */
export interface HistoryEntry {
  /** Order of arrival in this service (1, 2, …), so the page can tell what changed. */
  seq: number;
  /** When the service resolved it (ms since the epoch). */
  resolvedAtMs: number;
  resolution: Resolution;
}

/** Bounds of the history. */
export interface HistoryOptions {
  /** Sessions remembered; the least recently resolved is forgotten first. Default 1 000. */
  maxSessions?: number;
  /** Resolutions kept per session; the oldest goes first. Default 50. */
  maxEntriesPerSession?: number;
}

/** The resolutions of each session since the service started, oldest first. */
export class BoundaryHistory {
  private readonly _sessions = new Map<string, HistoryEntry[]>();
  private readonly _maxSessions: number;
  private readonly _maxEntries: number;
  private _seq = 0;

  constructor(options: HistoryOptions = {}) {
    this._maxSessions = Math.max(1, Math.floor(options.maxSessions ?? 1_000));
    this._maxEntries = Math.max(1, Math.floor(options.maxEntriesPerSession ?? 50));
  }

  /** The sequence number of the latest resolution recorded (0 before the first). */
  get version(): number {
    return this._seq;
  }

  /** Records resolutions made at `nowMs`. */
  record(resolutions: readonly Resolution[], nowMs: number): void {
    for (const resolution of resolutions) {
      const id = resolution.sessionId;
      const list = this._sessions.get(id) ?? [];
      // Most recently resolved last, so the first key is the one to forget.
      this._sessions.delete(id);
      this._sessions.set(id, list);
      list.push({ seq: ++this._seq, resolvedAtMs: nowMs, resolution });
      if (list.length > this._maxEntries) list.shift();
      while (this._sessions.size > this._maxSessions) {
        this._sessions.delete(this._sessions.keys().next().value!);
      }
    }
  }

  /** One session's resolutions, oldest first (empty when none is remembered). */
  of(sessionId: string): readonly HistoryEntry[] {
    return this._sessions.get(sessionId) ?? [];
  }
}
