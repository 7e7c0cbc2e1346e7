/**
 * The correlator: pairs the pre and post compaction events of each session into boundaries and
 * classifies each with the core classifier. Pure: no timers, no I/O; the clock is a parameter.
 * Used by the in-process {@link ContinuityProcessor} (SDK spans) and by `continuity serve`
 * (decoded OTLP spans), so both give the same answer as the library and the CLI.
 *
 * Correlation rules (per session):
 * - A pre opens a boundary. A later pre opens a new one; the previous one, if still pending,
 *   resolves `superseded` → `unverified` / `post_observation_missing`. A pre with the same
 *   boundary id as the pending one is a re-capture: it replaces the snapshot, keeps the approvals.
 * - Approvals seen while a boundary is pending count toward it. Approvals seen with nothing
 *   pending are held for the reorder grace and count toward the next pre that arrives within it
 *   (arrival order is not causal order in OTLP batches); they also count toward the latest
 *   resolved boundary, so approve-then-re-observe works.
 * - A post resolves the pending boundary (when both carry a boundary id, the ids must match).
 * - A post with no pending pre is held for `reorderGraceMs`. A pre arriving within the grace pairs
 *   with it (`late_pre`) when the boundary ids agree (or either is absent) and, when both start
 *   times are known, the pre did not start after the post. Otherwise, when the grace passes (or at
 *   once with grace 0), it resolves `orphan_post` → `unverified` / `pre_snapshot_missing`.
 * - After a boundary resolved, a later post for it (same boundary id, or no id) within its
 *   runtime's post window re-classifies it against the same pre (`reobserved`): this is how an
 *   `unverified`, `dropped` or `conflicting` boundary clears after the agent re-observes.
 * - A boundary with no post within its runtime's window resolves `post_window_expired`
 *   (`unverified` / `post_observation_missing`) on {@link Correlator.expire}.
 * - At most `maxPendingBoundaries` are pending; the oldest is evicted (`evicted`, `unverified`).
 * - The same span seen twice (OTLP retries) is ignored.
 */

import type { KeyObject } from 'node:crypto';
import { keyIdOfHex, publicKeyFromHex } from '../authority/signing.js';
import { judgeApproval, type TrustedKeys } from '../authority/trust.js';
import { approvalCountsTowardPre } from '../classify/approval-rule.js';
import { type Classification, classify } from '../classify/classify.js';
import type { ContinuityReason, ContinuityState } from '../classify/states.js';
import type { ActivityState, Approval, Snapshot } from '../decision/model.js';
import { parseRfc3339Utc } from '../decision/time.js';
import type {
  CompactionEvent,
  PostCompactionEvent,
  PreCompactionEvent,
  SpanRef,
} from '../otel/attributes.js';
import { ACTIVITY_STATE_UNKNOWN, type CompactionTrigger, EVIDENCE_MISSING_REASONS } from '../otel/semconv.js';
import { resolveCorrelatorOptions } from './options.js';
import type {
  CheckedPendingState,
  PendingEntry,
  PendingState,
  PersistedBoundary,
  PersistedHeldPost,
} from './persist.js';
import { PENDING_STATE_VERSION } from './persist-version.js';
import type {
  CorrelatorOptions,
  CorrelatorStats,
  NeedsHumanEntry,
  Resolution,
  ResolutionCause,
  ResolvedCorrelatorOptions,
  SessionSummaryEntry,
  SessionView,
} from './types.js';

type Activity = ActivityState | typeof ACTIVITY_STATE_UNKNOWN;

/** A boundary waiting for its post (or, once resolved, re-observable until `reobserveUntilMs`). */
interface Boundary {
  sessionId: string;
  boundaryId: string | null;
  runtime: string | null;
  trigger: CompactionTrigger | null;
  pre: Snapshot | null;
  evidenceMissing: string | null;
  preTimeNs: bigint | null;
  preSpan: SpanRef | null;
  approvals: Approval[];
  openedAtMs: number;
  deadlineMs: number;
  reobserveUntilMs: number;
}

interface HeldPost {
  event: PostCompactionEvent;
  heldAtMs: number;
  deadlineMs: number;
}

interface Latest {
  boundaryId: string | null;
  state: ContinuityState;
  reason: ContinuityReason;
  primaryDecision: string | null;
  runtime: string | null;
  postSpanId: string | null;
}

interface Session {
  id: string;
  pending: Boundary | null;
  held: HeldPost | null;
  reobservable: Boundary | null;
  early: Array<{ approval: Approval; atMs: number }>;
  latest: Latest | null;
  activity: Activity;
  touchedAtMs: number;
}

/** The trusted keys of a list of approver public keys (hex), or null when approvals are not verified. */
function trustOf(hexes: readonly string[] | null): TrustedKeys | null {
  if (hexes === null) return null;
  const keys = new Map<string, KeyObject>();
  for (const hex of hexes) {
    const key = publicKeyFromHex(hex);
    if (key) keys.set(keyIdOfHex(hex), key);
  }
  return { keys, current: null };
}

const NEEDS_HUMAN: ReadonlySet<ContinuityState> = new Set<ContinuityState>(['dropped', 'conflicting']);

/** Correlates compaction events per session into classified boundaries. See the module comment. */
export class Correlator {
  /** The options after defaults and clamping. */
  readonly options: ResolvedCorrelatorOptions;
  /** Warnings about clamped options, for the caller to log (the correlator does no I/O). */
  readonly warnings: readonly string[];
  private readonly _sessions = new Map<string, Session>();
  // Insertion order is opening order, so the oldest is first (eviction) and a scan can stop early.
  private readonly _pending = new Map<string, Boundary>();
  private readonly _held = new Map<string, HeldPost>();
  private readonly _reobservable = new Map<string, Boundary>();
  private readonly _minWindowMs: number;
  private _nextDeadlineMs = Number.POSITIVE_INFINITY;
  private readonly _stats: CorrelatorStats = {
    evicted: 0,
    approvalsDropped: 0,
    malformedApprovals: 0,
    approvalAttempts: { unsigned: 0, bad_signature: 0, unknown_key: 0, other_boundary: 0 },
    duplicates: 0,
    unrecoverable: 0,
  };
  /** The approver keys approvals are verified with, or null when they are not verified. */
  private readonly _trust: TrustedKeys | null;

  /** Creates a correlator; bad options are clamped and listed in {@link Correlator.warnings}. */
  constructor(options: CorrelatorOptions = {}) {
    const resolved = resolveCorrelatorOptions(options);
    this.options = resolved.options;
    this.warnings = resolved.warnings;
    this._minWindowMs = Math.min(...Object.values(this.options.postWindowsMs));
    this._trust = trustOf(this.options.approverKeys);
  }

  /** Boundaries waiting for their post observation, plus posts waiting for their pre. */
  get pendingCount(): number {
    return this._pending.size + this._held.size;
  }

  /** Sessions remembered (for the summary). */
  get sessionCount(): number {
    return this._sessions.size;
  }

  /** Self-observability counters (a copy). */
  get stats(): CorrelatorStats {
    return { ...this._stats, approvalAttempts: { ...this._stats.approvalAttempts } };
  }

  /** The post window of a runtime, in milliseconds. */
  postWindowMs(runtime: string | null): number {
    const w = this.options.postWindowsMs;
    return (runtime !== null ? w[runtime] : undefined) ?? w.default!;
  }

  /** Feeds one event observed at `nowMs`; returns the boundaries it resolved (often none). */
  observe(event: CompactionEvent, nowMs: number): Resolution[] {
    const out: Resolution[] = [];
    const s = this._touch(event.sessionId, nowMs, out);
    switch (event.kind) {
      case 'activity':
        s.activity = event.state;
        break;
      case 'approval':
        if (event.approval === null) this._stats.malformedApprovals++;
        else if (this._counts(event.sessionId, event.approval, s))
          this._addApproval(s, event.approval, nowMs);
        break;
      case 'pre':
        this._observePre(s, event, nowMs, out);
        break;
      case 'post':
        this._observePost(s, event, nowMs, out);
        break;
    }
    this._enforcePendingLimit(out);
    return out;
  }

  /**
   * Resolves what has waited too long at `nowMs`: boundaries past their runtime's post window
   * (`post_window_expired`) and posts past the reorder grace (`orphan_post`). Also forgets idle
   * sessions. Cheap when nothing is due: call it as often as you like.
   */
  expire(nowMs: number): Resolution[] {
    const out: Resolution[] = [];
    if (nowMs >= this._nextDeadlineMs) {
      let next = Number.POSITIVE_INFINITY;
      for (const [id, b] of this._pending) {
        if (b.deadlineMs <= nowMs) {
          const s = this._sessions.get(id)!;
          this._dropPending(s);
          out.push(this._resolveMissing(s, b, 'post_window_expired', nowMs));
        } else if (b.openedAtMs + this._minWindowMs > nowMs) {
          // Opened in order: nothing from here on is due before this one's shortest window.
          next = Math.min(next, b.openedAtMs + this._minWindowMs);
          break;
        } else {
          next = Math.min(next, b.deadlineMs);
        }
      }
      for (const [id, h] of this._held) {
        if (h.deadlineMs <= nowMs) {
          const s = this._sessions.get(id)!;
          this._dropHeld(s);
          out.push(this._resolveOrphan(s, h.event, false));
        } else {
          next = Math.min(next, h.deadlineMs);
          break; // held in order with one grace for all
        }
      }
      this._nextDeadlineMs = next;
    }
    for (const [id, b] of this._reobservable) {
      if (b.reobserveUntilMs > nowMs) break; // resolved in order; windows differ, so this is lazy
      const s = this._sessions.get(id);
      if (s) s.reobservable = null;
      this._reobservable.delete(id);
    }
    this._forgetIdleSessions(nowMs);
    return out;
  }

  /** Resolves everything pending now (`drained`), e.g. at shutdown. */
  drain(): Resolution[] {
    const out: Resolution[] = [];
    for (const [id, b] of [...this._pending]) {
      const s = this._sessions.get(id)!;
      this._dropPending(s);
      out.push(this._resolveMissing(s, b, 'drained', null));
    }
    for (const [id, h] of [...this._held]) {
      const s = this._sessions.get(id)!;
      this._dropHeld(s);
      out.push(this._resolveOrphan(s, h.event, false, 'drained'));
    }
    this._nextDeadlineMs = Number.POSITIVE_INFINITY;
    return out;
  }

  /** Sessions by latest continuity state × activity state (sessions with a resolved boundary). */
  sessionSummary(): SessionSummaryEntry[] {
    const cells = new Map<string, SessionSummaryEntry>();
    for (const s of this._sessions.values()) {
      if (!s.latest) continue;
      const key = `${s.latest.state}\u0000${s.activity}`;
      const cell = cells.get(key);
      if (cell) cell.sessions++;
      else cells.set(key, { state: s.latest.state, activity: s.activity, sessions: 1 });
    }
    return [...cells.values()];
  }

  /** Sessions whose latest boundary is `dropped` or `conflicting`, the `limit` most recently active. */
  needsHuman(limit = 1_000): NeedsHumanEntry[] {
    const out: NeedsHumanEntry[] = [];
    for (const s of this._sessions.values()) {
      if (s.latest && NEEDS_HUMAN.has(s.latest.state)) {
        out.push({
          sessionId: s.id,
          boundaryId: s.latest.boundaryId,
          state: s.latest.state,
          reason: s.latest.reason,
          primaryDecision: s.latest.primaryDecision,
          runtime: s.latest.runtime,
        });
      }
    }
    return out.length > limit ? out.slice(out.length - limit) : out;
  }

  /**
   * The `limit` most recently active sessions, most recent first: latest state, activity and the
   * pending boundary. Read-only views for the continuity page; nothing here changes state.
   */
  sessions(limit = 1_000): SessionView[] {
    const all = [...this._sessions.values()];
    const out: SessionView[] = [];
    for (let i = all.length - 1; i >= 0 && out.length < limit; i--) {
      const s = all[i]!;
      const p = s.pending;
      out.push({
        sessionId: s.id,
        activity: s.activity,
        touchedAtMs: s.touchedAtMs,
        latest: s.latest
          ? {
              boundaryId: s.latest.boundaryId,
              state: s.latest.state,
              reason: s.latest.reason,
              primaryDecision: s.latest.primaryDecision,
              runtime: s.latest.runtime,
            }
          : null,
        pending: p
          ? {
              boundaryId: p.boundaryId,
              runtime: p.runtime,
              trigger: p.trigger,
              pre: p.pre,
              evidenceMissing: p.evidenceMissing,
              preSpan: p.preSpan,
              openedAtMs: p.openedAtMs,
              deadlineMs: p.deadlineMs,
            }
          : null,
      });
    }
    return out;
  }

  /** The pending state as plain JSON, for {@link Correlator.importPending} after a restart. */
  exportPending(): PendingState {
    const state: PendingState = {
      version: PENDING_STATE_VERSION,
      boundaries: [],
      heldPosts: [],
      reobservable: [],
      sessions: [],
    };
    for (const { k, v } of this.pendingEntries()) (state[k] as unknown[]).push(v);
    return state;
  }

  /**
   * The same state as {@link Correlator.exportPending}, one entry at a time (`k` names the list
   * of the export it belongs to), so a large state can be written as a stream. Do not change the
   * correlator while iterating.
   */
  *pendingEntries(): Generator<PendingEntry> {
    for (const s of this._sessions.values()) {
      yield {
        k: 'sessions',
        v: { sessionId: s.id, activity: s.activity, touchedAtMs: s.touchedAtMs, latest: s.latest },
      };
    }
    for (const b of this._reobservable.values()) yield { k: 'reobservable', v: persistBoundary(b, true) };
    for (const b of this._pending.values()) yield { k: 'boundaries', v: persistBoundary(b, false) };
    for (const h of this._held.values()) yield { k: 'heldPosts', v: persistHeld(h) };
  }

  /**
   * Restores state written by {@link Correlator.exportPending}, as `readPendingState` (in
   * `correlate/persist`, where the schemas live) checked it; `undefined` is a document of another
   * version or shape. Entries that do not validate are
   * unrecoverable: a boundary or held post whose session is still readable resolves now to
   * `unverified` (cause `unrecoverable`), never to a match; the rest are counted in
   * `stats.unrecoverable`. Windows are recomputed with this correlator's options, so boundaries
   * already past their window resolve on the next {@link Correlator.expire}.
   */
  importPending(state: CheckedPendingState | undefined, nowMs: number): Resolution[] {
    const out: Resolution[] = [];
    if (!state) {
      this._stats.unrecoverable++;
      return out;
    }
    for (const p of state.sessions) {
      if (!p.ok) {
        this._stats.unrecoverable++;
        continue;
      }
      const s = this._touch(p.value.sessionId, p.value.touchedAtMs, out);
      s.activity = p.value.activity;
      if (p.value.latest && !s.latest) s.latest = p.value.latest;
    }
    for (const p of state.reobservable) {
      if (!p.ok) continue; // losing a re-observable boundary only loses re-classification
      const b = restoreBoundary(p.value, this.postWindowMs(p.value.runtime ?? null));
      const s = this._touch(b.sessionId, nowMs, out);
      if (!s.reobservable) this._setReobservable(s, b);
    }
    for (const p of state.boundaries) {
      if (!p.ok) {
        this._stats.unrecoverable++;
        if (p.sessionId !== undefined)
          out.push(this._unrecoverable(this._touch(p.sessionId, nowMs, out), nowMs));
        continue;
      }
      const b = restoreBoundary(p.value, this.postWindowMs(p.value.runtime ?? null));
      const s = this._touch(b.sessionId, nowMs, out);
      if (s.pending && s.pending.openedAtMs >= b.openedAtMs) {
        out.push(this._resolveMissing(s, b, 'superseded', nowMs));
        continue;
      }
      if (s.pending) {
        const old = s.pending;
        this._dropPending(s);
        out.push(this._resolveMissing(s, old, 'superseded', nowMs));
      }
      this._setPending(s, b);
    }
    for (const p of state.heldPosts) {
      const event = p.ok ? restoreHeldEvent(p.value) : undefined;
      if (!p.ok || !event) {
        this._stats.unrecoverable++;
        const id = p.ok ? p.value.sessionId : p.sessionId;
        if (id !== undefined) out.push(this._unrecoverable(this._touch(id, nowMs, out), nowMs));
        continue;
      }
      const s = this._touch(event.sessionId, nowMs, out);
      if (s.held) out.push(this._resolveOrphan(s, event, false));
      else this._setHeld(s, event, p.value.heldAtMs);
    }
    this._reorder();
    this._enforcePendingLimit(out);
    return out;
  }

  // ── Events ─────────────────────────────────────────────────────────────────────────────────

  private _observePre(s: Session, ev: PreCompactionEvent, nowMs: number, out: Resolution[]): void {
    const open = s.pending;
    if (open && ev.span && open.preSpan && sameSpan(open.preSpan, ev.span)) {
      this._stats.duplicates++;
      return;
    }
    if (open && ev.boundaryId !== null && open.boundaryId === ev.boundaryId) {
      // A re-capture of the same boundary: newer evidence, same approvals and window.
      open.pre = ev.snapshot;
      open.evidenceMissing = ev.evidenceMissing ?? null;
      open.preTimeNs = ev.timeNs;
      open.preSpan = ev.span ?? open.preSpan;
      return;
    }
    const held = s.held;
    if (held && preMatchesPost(ev, held.event)) {
      this._dropHeld(s);
      const b = this._newBoundary(ev, nowMs);
      b.approvals = this._takeEarlyApprovals(s, nowMs);
      out.push(this._resolveWithPost(s, b, held.event, 'late_pre', false, nowMs));
      return;
    }
    if (held) {
      this._dropHeld(s);
      out.push(this._resolveOrphan(s, held.event, false));
    }
    if (open) {
      this._dropPending(s);
      out.push(this._resolveMissing(s, open, 'superseded', nowMs));
    }
    const b = this._newBoundary(ev, nowMs);
    b.approvals = this._takeEarlyApprovals(s, nowMs);
    this._setPending(s, b);
  }

  private _observePost(s: Session, ev: PostCompactionEvent, nowMs: number, out: Resolution[]): void {
    if (ev.span && s.latest?.postSpanId === ev.span.spanId) {
      this._stats.duplicates++;
      return;
    }
    const open = s.pending;
    if (open && idsAgree(open.boundaryId, ev.boundaryId)) {
      this._dropPending(s);
      out.push(this._resolveWithPost(s, open, ev, 'post', true, nowMs));
      return;
    }
    const again = s.reobservable;
    if (!open && again && again.reobserveUntilMs > nowMs && idsAgree(again.boundaryId, ev.boundaryId)) {
      out.push(this._resolveWithPost(s, again, ev, 'reobserved', true, nowMs));
      return;
    }
    if (this.options.reorderGraceMs === 0) {
      out.push(this._resolveOrphan(s, ev, true));
      return;
    }
    if (s.held) {
      const older = s.held.event;
      this._dropHeld(s);
      out.push(this._resolveOrphan(s, older, false));
    }
    this._setHeld(s, ev, nowMs);
  }

  /**
   * True when the approval counts: always without approver keys; with them, only with a valid
   * signature by one of them (for the pending boundary, when one is pending). Else the attempt is
   * counted by its result and the approval is kept out of every classification.
   */
  private _counts(sessionId: string, approval: Approval, s: Session): boolean {
    if (this._trust === null) return true;
    const result = judgeApproval({ ...approval, sessionId }, this._trust, s.pending?.boundaryId ?? undefined);
    if (result === 'signed') return true;
    this._stats.approvalAttempts[result]++;
    return false;
  }

  private _addApproval(s: Session, approval: Approval, nowMs: number): void {
    const max = this.options.maxApprovalsPerBoundary;
    const push = (list: Approval[]) => {
      list.push(approval);
      if (list.length > max) {
        list.shift();
        this._stats.approvalsDropped++;
      }
    };
    if (s.pending) {
      push(s.pending.approvals);
      return;
    }
    if (s.reobservable) push(s.reobservable.approvals);
    const grace = this.options.reorderGraceMs;
    if (grace === 0) return; // nothing waits for a late pre
    // Held only for the grace: drop what a pre arriving now could no longer claim.
    while (s.early.length > 0 && s.early[0]!.atMs < nowMs - grace) s.early.shift();
    s.early.push({ approval, atMs: nowMs });
    if (s.early.length > max) s.early.shift();
  }

  private _takeEarlyApprovals(s: Session, nowMs: number): Approval[] {
    const since = nowMs - this.options.reorderGraceMs;
    const taken = s.early.filter((e) => e.atMs >= since).map((e) => e.approval);
    s.early = [];
    return taken;
  }

  // ── Resolutions ────────────────────────────────────────────────────────────────────────────

  private _resolveWithPost(
    s: Session,
    b: Boundary,
    post: PostCompactionEvent,
    cause: ResolutionCause,
    resolvedAtPost: boolean,
    nowMs: number,
  ): Resolution {
    const compactedAt = boundaryTime(b.pre, post.compactedAt);
    const classification = safeClassify(b.pre, post.snapshot, countedApprovals(b), compactedAt);
    const boundaryNs =
      (compactedAt !== undefined ? parseRfc3339Utc(compactedAt) : undefined) ??
      (b.pre ? parseRfc3339Utc(b.pre.capturedAt) : undefined) ??
      b.preTimeNs;
    const postNs = (post.snapshot ? parseRfc3339Utc(post.snapshot.capturedAt) : undefined) ?? post.timeNs;
    let reobservationSeconds: number | null = null;
    if (boundaryNs !== null && boundaryNs !== undefined && postNs !== null && postNs >= boundaryNs) {
      reobservationSeconds = Number(postNs - boundaryNs) / 1e9;
    }
    const merged: Boundary = {
      ...b,
      boundaryId: b.boundaryId ?? post.boundaryId,
      runtime: b.runtime ?? post.runtime,
      trigger: b.trigger ?? post.trigger,
    };
    const r = this._resolution(s, merged, classification, cause, {
      resolvedAtPost,
      postSpan: post.span ?? null,
      reobservationSeconds,
      evidenceMissing: b.evidenceMissing ?? post.evidenceMissing ?? null,
      post: post.snapshot,
    });
    merged.reobserveUntilMs = nowMs + this.postWindowMs(merged.runtime);
    this._setReobservable(s, merged);
    return r;
  }

  /** A boundary that resolves without its post: `unverified`, via the classifier. */
  private _resolveMissing(s: Session, b: Boundary, cause: ResolutionCause, nowMs: number | null): Resolution {
    const r = this._resolution(s, b, safeClassify(b.pre, null, countedApprovals(b), undefined), cause, {
      resolvedAtPost: false,
      postSpan: null,
      reobservationSeconds: null,
      evidenceMissing: b.evidenceMissing,
      post: null,
    });
    if (cause === 'evicted') this._stats.evicted++;
    // A post that arrives after its window can still be classified against the pre.
    if (nowMs !== null && (cause === 'post_window_expired' || cause === 'superseded') && !s.pending) {
      this._setReobservable(s, { ...b, reobserveUntilMs: nowMs + this.postWindowMs(b.runtime) });
    }
    return r;
  }

  private _resolveOrphan(
    s: Session,
    post: PostCompactionEvent,
    resolvedAtPost: boolean,
    cause: ResolutionCause = 'orphan_post',
  ): Resolution {
    const b: Boundary = {
      sessionId: s.id,
      boundaryId: post.boundaryId,
      runtime: post.runtime,
      trigger: post.trigger,
      pre: null,
      evidenceMissing: null,
      preTimeNs: null,
      preSpan: null,
      approvals: [],
      openedAtMs: 0,
      deadlineMs: 0,
      reobserveUntilMs: 0,
    };
    if (cause === 'evicted') this._stats.evicted++;
    return this._resolution(s, b, safeClassify(null, post.snapshot, [], undefined), cause, {
      resolvedAtPost,
      postSpan: post.span ?? null,
      reobservationSeconds: null,
      evidenceMissing: post.evidenceMissing ?? null,
      post: post.snapshot,
    });
  }

  private _unrecoverable(s: Session, nowMs: number): Resolution {
    const b = this._newBoundary(undefined, nowMs, s.id);
    return this._resolution(s, b, safeClassify(null, null, [], undefined), 'unrecoverable', {
      resolvedAtPost: false,
      postSpan: null,
      reobservationSeconds: null,
      evidenceMissing: EVIDENCE_MISSING_REASONS.unrecoverable,
      post: null,
    });
  }

  private _resolution(
    s: Session,
    b: Boundary,
    classification: Classification,
    cause: ResolutionCause,
    extra: Pick<Resolution, 'resolvedAtPost' | 'postSpan' | 'reobservationSeconds' | 'evidenceMissing'> & {
      post: Snapshot | null;
    },
  ): Resolution {
    s.latest = {
      boundaryId: b.boundaryId,
      state: classification.state,
      reason: classification.reason,
      primaryDecision: classification.primaryDecision,
      runtime: b.runtime,
      postSpanId: extra.postSpan?.spanId ?? null,
    };
    return {
      sessionId: s.id,
      boundaryId: b.boundaryId,
      runtime: b.runtime,
      trigger: b.trigger,
      classification,
      cause,
      resolvedAtPost: extra.resolvedAtPost,
      preSpan: b.preSpan,
      postSpan: extra.postSpan,
      reobservationSeconds: extra.reobservationSeconds,
      approvalCount: countedApprovals(b).length,
      evidenceMissing: extra.evidenceMissing,
      activity: s.activity,
      // A copy of the approvals: a re-observable boundary keeps collecting them.
      evidence: { pre: b.pre, post: extra.post, approvals: countedApprovals(b) },
    };
  }

  // ── Bookkeeping ────────────────────────────────────────────────────────────────────────────

  private _newBoundary(ev: PreCompactionEvent | undefined, nowMs: number, sessionId?: string): Boundary {
    const runtime = ev?.runtime ?? null;
    return {
      sessionId: ev?.sessionId ?? sessionId!,
      boundaryId: ev?.boundaryId ?? null,
      runtime,
      trigger: ev?.trigger ?? null,
      pre: ev?.snapshot ?? null,
      evidenceMissing: ev ? (ev.evidenceMissing ?? null) : EVIDENCE_MISSING_REASONS.unrecoverable,
      preTimeNs: ev?.timeNs ?? null,
      preSpan: ev?.span ?? null,
      approvals: [],
      openedAtMs: nowMs,
      deadlineMs: nowMs + this.postWindowMs(runtime),
      reobserveUntilMs: 0,
    };
  }

  private _touch(id: string, nowMs: number, out: Resolution[]): Session {
    let s = this._sessions.get(id);
    if (s) {
      // Most recently active last: the oldest session is the first key.
      this._sessions.delete(id);
    } else {
      s = {
        id,
        pending: null,
        held: null,
        reobservable: null,
        early: [],
        latest: null,
        activity: ACTIVITY_STATE_UNKNOWN,
        touchedAtMs: nowMs,
      };
    }
    s.touchedAtMs = Math.max(s.touchedAtMs, nowMs);
    this._sessions.set(id, s);
    while (this._sessions.size > this.options.maxSessions) {
      const oldest = this._sessions.values().next().value!;
      if (oldest === s) break;
      this._forgetSession(oldest, out);
    }
    return s;
  }

  private _forgetSession(s: Session, out: Resolution[]): void {
    if (s.pending) {
      const b = s.pending;
      this._dropPending(s);
      out.push(this._resolveMissing(s, b, 'evicted', null));
    }
    if (s.held) {
      const h = s.held;
      this._dropHeld(s);
      out.push(this._resolveOrphan(s, h.event, false, 'evicted'));
    }
    this._reobservable.delete(s.id);
    this._sessions.delete(s.id);
  }

  private _forgetIdleSessions(nowMs: number): void {
    const cutoff = nowMs - this.options.sessionTtlMs;
    for (const s of this._sessions.values()) {
      if (s.touchedAtMs > cutoff) break; // least recently active first
      if (s.pending || s.held) continue;
      this._reobservable.delete(s.id);
      this._sessions.delete(s.id);
    }
  }

  private _enforcePendingLimit(out: Resolution[]): void {
    while (this.pendingCount > this.options.maxPendingBoundaries) {
      const b = this._pending.values().next().value;
      const h = this._held.values().next().value;
      if (b && (!h || b.openedAtMs <= h.heldAtMs)) {
        const s = this._sessions.get(b.sessionId)!;
        this._dropPending(s);
        out.push(this._resolveMissing(s, b, 'evicted', null));
      } else if (h) {
        const s = this._sessions.get(h.event.sessionId)!;
        this._dropHeld(s);
        out.push(this._resolveOrphan(s, h.event, false, 'evicted'));
      }
    }
  }

  private _setPending(s: Session, b: Boundary): void {
    s.pending = b;
    this._pending.set(s.id, b);
    this._nextDeadlineMs = Math.min(this._nextDeadlineMs, b.deadlineMs);
  }

  private _dropPending(s: Session): void {
    s.pending = null;
    this._pending.delete(s.id);
  }

  private _setHeld(s: Session, event: PostCompactionEvent, heldAtMs: number): void {
    const h = { event, heldAtMs, deadlineMs: heldAtMs + this.options.reorderGraceMs };
    s.held = h;
    this._held.set(s.id, h);
    this._nextDeadlineMs = Math.min(this._nextDeadlineMs, h.deadlineMs);
  }

  private _dropHeld(s: Session): void {
    s.held = null;
    this._held.delete(s.id);
  }

  private _setReobservable(s: Session, b: Boundary): void {
    s.reobservable = b;
    this._reobservable.delete(s.id);
    this._reobservable.set(s.id, b);
  }

  /** After an import, puts every ordered map back in time order. */
  private _reorder(): void {
    const sortInto = <T>(map: Map<string, T>, key: (v: T) => number) => {
      const entries = [...map].sort((a, b) => key(a[1]) - key(b[1]));
      map.clear();
      for (const [k, v] of entries) map.set(k, v);
    };
    sortInto(this._pending, (b) => b.openedAtMs);
    sortInto(this._held, (h) => h.heldAtMs);
    sortInto(this._reobservable, (b) => b.reobserveUntilMs);
    this._nextDeadlineMs = Number.NEGATIVE_INFINITY; // next expire() rescans
  }
}

// ── Helpers ──────────────────────────────────────────────────────────────────────────────────

function sameSpan(a: SpanRef, b: SpanRef): boolean {
  return a.spanId === b.spanId && a.traceId === b.traceId;
}

/** Boundary ids agree when either is absent or both are equal. */
function idsAgree(a: string | null, b: string | null): boolean {
  return a === null || b === null || a === b;
}

function preMatchesPost(pre: PreCompactionEvent, post: PostCompactionEvent): boolean {
  if (!idsAgree(pre.boundaryId, post.boundaryId)) return false;
  // Without ids, a pre that started after the post belongs to the next boundary.
  if (pre.boundaryId === null || post.boundaryId === null) {
    if (pre.timeNs !== null && post.timeNs !== null && pre.timeNs > post.timeNs) return false;
  }
  return true;
}

/**
 * The compaction time given to the classifier: the runtime's `compactedAt` only when it is not
 * before the pre capture. An earlier one would make a stale observation look fresh.
 */
function boundaryTime(pre: Snapshot | null, compactedAt: string | null): string | undefined {
  if (!pre || compactedAt === null) return undefined;
  const at = parseRfc3339Utc(compactedAt);
  const captured = parseRfc3339Utc(pre.capturedAt);
  return at !== undefined && captured !== undefined && at >= captured ? compactedAt : undefined;
}

/**
 * The approvals that count toward `b`: those recorded after its pre snapshot, the ledger's rule
 * (`approval-rule.ts`). Arrival order is not record order, so those taken early (or held) are
 * filtered here, against the pre the boundary is classified with. A new array.
 */
function countedApprovals(b: Pick<Boundary, 'pre' | 'approvals'>): Approval[] {
  const captured = b.pre?.capturedAt ?? null;
  return b.approvals.filter((a) => approvalCountsTowardPre(a.approvedAt, captured));
}

/** The core classifier; anything unexpected becomes `unverified`, never a match. */
function safeClassify(
  pre: Snapshot | null,
  post: Snapshot | null,
  approvals: readonly Approval[],
  compactedAt: string | undefined,
): Classification {
  try {
    return classify({ pre, post, approvals, ...(compactedAt !== undefined && { compactedAt }) });
  } catch {
    return classify({ pre: null, post: null });
  }
}

function persistBoundary(b: Boundary, reobservable: boolean): PersistedBoundary {
  return {
    sessionId: b.sessionId,
    boundaryId: b.boundaryId,
    runtime: b.runtime,
    trigger: b.trigger,
    pre: b.pre,
    evidenceMissing: b.evidenceMissing,
    preTimeNs: b.preTimeNs === null ? null : b.preTimeNs.toString(),
    preSpan: b.preSpan,
    approvals: b.approvals,
    openedAtMs: b.openedAtMs,
    ...(reobservable && { reobserveUntilMs: b.reobserveUntilMs }),
  };
}

function persistHeld(h: HeldPost): PersistedHeldPost {
  const e = h.event;
  return {
    sessionId: e.sessionId,
    boundaryId: e.boundaryId,
    runtime: e.runtime,
    trigger: e.trigger,
    snapshot: e.snapshot,
    evidenceMissing: e.evidenceMissing ?? null,
    compactedAt: e.compactedAt,
    timeNs: e.timeNs === null ? null : e.timeNs.toString(),
    span: e.span ?? null,
    heldAtMs: h.heldAtMs,
  };
}

function restoreBoundary(p: PersistedBoundary, windowMs: number): Boundary {
  return {
    sessionId: p.sessionId,
    boundaryId: p.boundaryId,
    runtime: p.runtime,
    trigger: p.trigger,
    pre: p.pre,
    // A restored pre without its snapshot and without a reason lost its evidence somewhere.
    evidenceMissing: p.pre === null ? (p.evidenceMissing ?? EVIDENCE_MISSING_REASONS.unrecoverable) : null,
    preTimeNs: p.preTimeNs === null ? null : BigInt(p.preTimeNs),
    preSpan: p.preSpan,
    approvals: p.approvals,
    openedAtMs: p.openedAtMs,
    deadlineMs: p.openedAtMs + windowMs,
    reobserveUntilMs: p.reobserveUntilMs ?? 0,
  };
}

function restoreHeldEvent(p: PersistedHeldPost): PostCompactionEvent | undefined {
  // Exactly one of snapshot / evidenceMissing, as on a freshly read span.
  const evidence =
    p.snapshot !== null
      ? { snapshot: p.snapshot }
      : { snapshot: null, evidenceMissing: p.evidenceMissing ?? EVIDENCE_MISSING_REASONS.unrecoverable };
  if (p.snapshot !== null && p.evidenceMissing !== null) return undefined;
  return {
    kind: 'post',
    sessionId: p.sessionId,
    timeNs: p.timeNs === null ? null : BigInt(p.timeNs),
    ...(p.span !== null && { span: p.span }),
    boundaryId: p.boundaryId,
    runtime: p.runtime,
    trigger: p.trigger,
    compactedAt: p.compactedAt,
    ...evidence,
  };
}
