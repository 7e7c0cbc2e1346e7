/**
 * Boundary assembly, pure and order-proof: from the events seen so far, which compaction boundary
 * each new event belongs to. No I/O, no clock (times come with the events), no randomness (ids
 * come with the events).
 *
 * The rules, measured against the real runtimes (test/adapter-core/boundary.test.ts replays every
 * order recorded from them):
 *
 * 1. A `pre` event opens a **pending** capture, not a boundary. A pre that no compaction confirms
 *    (Claude Code's lone `PreCompact(auto)` when there is nothing to summarise, a PreCompact hook
 *    that blocks, a background compaction that is discarded, the Agent SDK's `too_few_groups`)
 *    never becomes a boundary and never blocks writes. A newer `pre` replaces an older pending one.
 * 2. The first `compacted` signal after a pending pre **confirms** it: the boundary now exists,
 *    with its pre capture. Which signal comes first does not matter (Claude Code: SessionStart
 *    before PostCompact; Codex: PostCompact, then SessionStart(compact) on the next turn or never;
 *    OpenCode: one `session.compacted`; Agent SDK: SessionStart, PostCompact, `compact_boundary`).
 * 3. A later signal of a kind the current boundary has not seen yet **joins** it: the signals of one
 *    compaction may come in any order, and any of them may be missing.
 * 4. A signal of a kind the current boundary has already seen is a **duplicate** when it comes within
 *    {@link DUPLICATE_WINDOW_MS} of the first one (the same event delivered to two registrations
 *    of the hook, which run in parallel), else it is **a new compaction** whose pre capture never
 *    ran: a boundary of its own with the pre missing. A `repeatable` signal (fired once per
 *    instruction file) never opens a boundary while one exists.
 * 5. A signal with neither a pending pre nor a current boundary opens a **pre-missing** boundary.
 *
 * What the gate does between a pre and its confirmation: nothing new. It keeps answering from
 * the session's current (confirmed) boundary. In every runtime observed, the confirmation arrives
 * before the next model request, so a tool call in between belongs to a turn that was not
 * compacted (or runs beside a background compaction that has not replaced the context yet).
 */
import type { BoundaryEvent, TokenCounts, Trigger } from './events.js';

/** Two arrivals of one signal kind this close together are one event delivered twice. */
export const DUPLICATE_WINDOW_MS = 5_000;

/** A pre capture no compaction has confirmed yet. `C` is what the capture holds (digests, or why none). */
export interface PendingPre<C = unknown> {
  boundaryId: string;
  at: string;
  trigger?: Trigger;
  tokensBefore?: number;
  capture: C;
}

/** The first arrival of one kind of signal. */
export interface SignalSeen {
  signal: string;
  at: string;
}

/** A confirmed compaction boundary. */
export interface TrackedBoundary<C = unknown> {
  boundaryId: string;
  /** When the first signal arrived: the boundary's compaction time. */
  compactedAt: string;
  trigger?: Trigger;
  /** The pre capture that opened it; `null` when no pre capture ran before the compaction. */
  pre: PendingPre<C> | null;
  signals: SignalSeen[];
  tokens: TokenCounts;
}

/** The assembly state of one session. */
export interface BoundaryTrack<C = unknown> {
  pending: PendingPre<C> | null;
  current: TrackedBoundary<C> | null;
}

/** The empty state of a new session. */
export function emptyTrack<C = unknown>(): BoundaryTrack<C> {
  return { pending: null, current: null };
}

/** What an event did. */
export type AssemblyOutcome =
  /** A pre capture is pending; `discarded` names the older pending one it replaced, if any. */
  | { kind: 'pending'; boundaryId: string; discarded: string | null }
  /** The pending pre was confirmed: a new boundary with its pre capture. */
  | { kind: 'confirmed'; boundaryId: string }
  /** A compaction with no pre capture before it: a new boundary whose pre is missing. */
  | { kind: 'opened_pre_missing'; boundaryId: string }
  /** Another signal of the current boundary. */
  | { kind: 'joined'; boundaryId: string }
  /** The same signal again, delivered twice. */
  | { kind: 'duplicate'; boundaryId: string }
  /** New context-fill numbers for the current boundary (`changed` false when they added nothing). */
  | { kind: 'measured'; boundaryId: string | null; changed: boolean };

/** The new state and what happened. */
export interface Assembly<C = unknown> {
  track: BoundaryTrack<C>;
  outcome: AssemblyOutcome;
}

/** The inputs of one assembly step: the event and, for a pre, its capture and fresh id. */
export type AssemblyInput<C = unknown> =
  | { event: Extract<BoundaryEvent, { type: 'pre' }>; boundaryId: string; capture: C }
  /** `boundaryId` is used only if the signal opens a pre-missing boundary. */
  | { event: Extract<BoundaryEvent, { type: 'compacted' }>; boundaryId: string }
  | { event: Extract<BoundaryEvent, { type: 'measured' }> };

function mergeTokens(into: TokenCounts, add: TokenCounts | undefined): TokenCounts {
  if (!add) return into;
  const out: TokenCounts = { ...into };
  // The runtime's own later report wins over an earlier estimate.
  if (isCount(add.before)) out.before = add.before;
  if (isCount(add.after)) out.after = add.after;
  return out;
}

/** True for a token count worth recording: a non-negative safe integer. */
export function isCount(n: unknown): n is number {
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
}

function ms(rfc3339: string): number {
  const t = Date.parse(rfc3339);
  return Number.isFinite(t) ? t : 0;
}

function open<C>(
  boundaryId: string,
  at: string,
  pre: PendingPre<C> | null,
  signal: string,
  trigger: Trigger | undefined,
  tokens: TokenCounts | undefined,
): TrackedBoundary<C> {
  const t = trigger ?? pre?.trigger;
  const base: TokenCounts = isCount(pre?.tokensBefore) ? { before: pre!.tokensBefore } : {};
  return {
    boundaryId,
    compactedAt: at,
    ...(t ? { trigger: t } : {}),
    pre,
    signals: [{ signal, at }],
    tokens: mergeTokens(base, tokens),
  };
}

/** One step of the assembly: the state after `input`, and what it did. Pure. */
export function assemble<C>(track: BoundaryTrack<C>, input: AssemblyInput<C>): Assembly<C> {
  const e = input.event;
  if (e.type === 'pre') {
    const { boundaryId, capture } = input as Extract<AssemblyInput<C>, { capture: C }>;
    const pending: PendingPre<C> = {
      boundaryId,
      at: e.at,
      ...(e.trigger ? { trigger: e.trigger } : {}),
      ...(isCount(e.tokensBefore) ? { tokensBefore: e.tokensBefore } : {}),
      capture,
    };
    return {
      track: { ...track, pending },
      outcome: { kind: 'pending', boundaryId, discarded: track.pending?.boundaryId ?? null },
    };
  }
  if (e.type === 'measured') {
    const cur = track.current;
    if (!cur) return { track, outcome: { kind: 'measured', boundaryId: null, changed: false } };
    const tokens = mergeTokens(cur.tokens, e.tokens);
    const changed = tokens.before !== cur.tokens.before || tokens.after !== cur.tokens.after;
    return {
      track: changed ? { ...track, current: { ...cur, tokens } } : track,
      outcome: { kind: 'measured', boundaryId: cur.boundaryId, changed },
    };
  }
  const { boundaryId: freshId } = input as Extract<AssemblyInput<C>, { event: { type: 'compacted' } }>;
  if (track.pending) {
    const p = track.pending;
    const current = open(p.boundaryId, e.at, p, e.signal, e.trigger, e.tokens);
    return { track: { pending: null, current }, outcome: { kind: 'confirmed', boundaryId: p.boundaryId } };
  }
  const cur = track.current;
  if (cur) {
    const seen = cur.signals.find((s) => s.signal === e.signal);
    const joined = (kind: 'joined' | 'duplicate'): Assembly<C> => ({
      track: {
        ...track,
        current: {
          ...cur,
          ...(!cur.trigger && e.trigger ? { trigger: e.trigger } : {}),
          signals: seen ? cur.signals : [...cur.signals, { signal: e.signal, at: e.at }],
          tokens: mergeTokens(cur.tokens, e.tokens),
        },
      },
      outcome: { kind, boundaryId: cur.boundaryId },
    });
    if (!seen) return joined('joined');
    if (e.repeatable) return joined('joined');
    if (Math.abs(ms(e.at) - ms(seen.at)) <= DUPLICATE_WINDOW_MS) return joined('duplicate');
  }
  const current = open<C>(freshId, e.at, null, e.signal, e.trigger, e.tokens);
  return { track: { ...track, current }, outcome: { kind: 'opened_pre_missing', boundaryId: freshId } };
}
