/**
 * The continuity page's model: what the correlator knows now (each session's latest state,
 * activity and pending boundary) and the page's own history of resolutions, turned into the rows
 * and boundaries the page shows and the JSON endpoints serve. Pure: no I/O, the clock is an input.
 *
 * Everything here is a digest, an id, a decision name, a state or reason code, a time, or our own
 * words. Ids pass through {@link shownId}; nothing reads a span attribute the codec did not.
 */
import type { Classification } from '../classify/classify.js';
import type { ContinuityReason, ContinuityState } from '../classify/states.js';
import { CONTINUITY_STATES, severity } from '../classify/states.js';
import type { ResolutionCause, SessionView } from '../correlate/types.js';
import type { Approval, Snapshot } from '../decision/model.js';
import { formatRfc3339Utc } from '../decision/time.js';
import type { SpanRef } from '../otel/attributes.js';
import type { HistoryEntry } from './history.js';
import type { LedgerRead, LedgerSession } from './ledger-view.js';
import { type NextStep, nextStep } from './next-step.js';
import { sessionKey, shownId } from './shown.js';

/** A session's state column: one of the five states, or a boundary still waiting for its post. */
export type RowState = ContinuityState | 'pending';

/** States whose session is listed under "needs a human". */
export const NEEDS_HUMAN_STATES: ReadonlySet<ContinuityState> = new Set<ContinuityState>([
  'conflicting',
  'dropped',
]);

/** A link to a trace in the configured trace UI. */
export interface TraceLink {
  /** `pre` or `post`: whose trace. */
  side: 'pre' | 'post';
  traceId: string;
  href: string;
}

/** Builds the link to a span's trace, or undefined when no trace UI is configured. */
export type TraceLinker = (span: SpanRef) => string | undefined;

/** One session in the overview. */
export interface SessionRow {
  /** The page's address for the session (`/ui/session?key=`). */
  key: string;
  sessionId: string;
  state: RowState;
  reason: ContinuityReason | 'post_observation_pending' | null;
  primaryDecision: string | null;
  activity: string;
  runtime: string | null;
  boundaryId: string | null;
  /** When the service last saw an event of the session (or the ledger's latest time). */
  lastSeenAt: string;
  needsHuman: boolean;
  nextStep: NextStep;
  /** Who knows the session: the service (spans), the ledger, or both. */
  source: 'service' | 'ledger' | 'both';
}

/** One decision's verdict in one resolution. */
export interface DecisionRow {
  name: string;
  verdict: string;
  reason: string;
  preDigest: string | null;
  postDigest: string | null;
  /** The approval refs of the chain, for `approved_change`. */
  approvalRefs: string[];
}

/** One approval counted toward a boundary. */
export interface ApprovalRow {
  decision: string;
  fromDigest: string;
  toDigest: string;
  ref: string;
  by: string;
  at: string;
  /** True when the classifier used it in an approval chain. */
  inChain: boolean;
}

/** One resolution of a boundary (a boundary re-observed later has several). */
export interface ResolutionRow {
  resolvedAt: string;
  cause: ResolutionCause;
  state: ContinuityState;
  action: string;
  reason: ContinuityReason;
  primaryDecision: string | null;
  /** Seconds from the boundary to the post observation. */
  reobservationSeconds: number | null;
  activity: string;
  decisions: DecisionRow[];
  approvals: ApprovalRow[];
  /** Evidence that was missing, and why, when some was. */
  evidenceMissing: { code: string; why: string } | null;
  traces: TraceLink[];
}

/** One boundary of a session: its resolutions over time, newest first, or still pending. */
export interface BoundaryRow {
  boundaryId: string | null;
  runtime: string | null;
  trigger: string | null;
  pending: {
    since: string;
    resolvesBy: string;
    evidenceMissing: { code: string; why: string } | null;
  } | null;
  resolutions: ResolutionRow[];
  traces: TraceLink[];
}

/** A session's latest boundary as the ledger records it, classified from its evidence. */
export interface LedgerBoundaryRow {
  boundaryId: string;
  runtime: string | null;
  trigger: string | null;
  compactedAt: string | null;
  state: ContinuityState;
  action: string;
  reason: ContinuityReason;
  primaryDecision: string | null;
  decisions: DecisionRow[];
  /** Every approval the ledger holds for the session. */
  approvals: ApprovalRow[];
  /** Snapshots that could not be taken for this boundary, and why. */
  evidenceMissing: Array<{ phase: string; code: string; why: string; at: string }>;
  activity: { state: string; at: string } | null;
  /**
   * Where the latest restatement came from: `context` (survived the summary) or `record` (the
   * agent read the task record or the ledger after the compaction first); null when none says.
   */
  provenance: 'context' | 'record' | null;
}

/** One session with its boundaries, for the session page. */
export interface SessionDetail extends SessionRow {
  boundaries: BoundaryRow[];
  /** The ledger's view of its latest boundary, when a ledger is read and holds the session. */
  ledger: LedgerBoundaryRow | null;
}

/** The overview: every session, those needing a human first, and counts. */
export interface Overview {
  generatedAt: string;
  /** Changes whenever the model may have changed (the page's live updates compare it). */
  version: number;
  counts: { sessions: number; needsHuman: number; pending: number; byState: Record<ContinuityState, number> };
  needsHuman: SessionRow[];
  sessions: SessionRow[];
  /** Whether a ledger is read beside the service's state, and why not when it cannot be. */
  ledger: { read: boolean; problem: string | null };
  /** The filter applied to `needsHuman` and `sessions` (counts are of every session). */
  filter: OverviewFilter;
  /** Every runtime a session was recorded by, for the filter's choices. */
  runtimes: string[];
}

/** Which sessions the overview lists: by state, by runtime, or all (`null`). */
export interface OverviewFilter {
  state: RowState | null;
  runtime: string | null;
}

const RUNTIME_FILTER_PATTERN = /^[a-z0-9][a-z0-9._-]{0,63}$/;

/**
 * The filter from the page's query (`?state=conflicting&runtime=sdk`): an unknown state or a
 * runtime that is not a runtime name is no filter (never echoed back).
 */
export function parseOverviewFilter(params: URLSearchParams): OverviewFilter {
  const state = params.get('state');
  const runtime = params.get('runtime');
  return {
    state:
      state !== null && (state === 'pending' || (CONTINUITY_STATES as readonly string[]).includes(state))
        ? (state as RowState)
        : null,
    runtime: runtime !== null && RUNTIME_FILTER_PATTERN.test(runtime) ? runtime : null,
  };
}

/** The filter as a query string (`?state=…&runtime=…`, or '' for none). */
export function overviewFilterQuery(filter: OverviewFilter): string {
  const q = new URLSearchParams();
  if (filter.state) q.set('state', filter.state);
  if (filter.runtime) q.set('runtime', filter.runtime);
  const text = q.toString();
  return text ? `?${text}` : '';
}

/** What the model is built from. */
export interface ModelSource {
  /** The correlator's sessions, most recently active first. */
  sessions(): readonly SessionView[];
  /** The page's history of one session, oldest first. */
  history(sessionId: string): readonly HistoryEntry[];
  /** The version to report. */
  version(): number;
  /** The ledger's sessions, when the page reads a ledger. */
  ledger?: () => LedgerRead;
}

/** Why evidence is missing, per reason code (the codes in semconv's EVIDENCE_MISSING_REASONS). */
const EVIDENCE_WHY: Readonly<Record<string, string>> = {
  capture_failed: 'the snapshot could not be captured (the extension or hook failed)',
  invalid_decision: 'a decision could not be digested or was out of bounds',
  ledger_write_failed: 'the snapshot could not be written to the ledger',
  invalid_attributes: "the span's continuity attributes were malformed",
  unrecoverable: 'the pending boundary could not be recovered after a restart',
  task_record_unreadable:
    'the task record is not a regular file (a FIFO, a device, a link to one) or is too large',
  config_unreadable: 'the configuration file could not be read as one, so no task record was captured',
  task_record_changed:
    'the task record changed since the human sealed it; the sealed decisions were captured',
  config_changed:
    "the configuration relaxes the write gate without the human's seal; the gate kept its strict defaults",
};

function evidenceWhy(code: string): { code: string; why: string } {
  return { code, why: EVIDENCE_WHY[code] ?? 'reported by the runtime with this reason code' };
}

/** Sort rank: needs a human first (conflicting, dropped), then unverified, pending, the rest. */
function rank(state: RowState): number {
  if (state === 'pending') return severity('unverified') + 0.5;
  return severity(state);
}

function traceLinks(linker: TraceLinker | undefined, pre: SpanRef | null, post: SpanRef | null): TraceLink[] {
  if (!linker) return [];
  const out: TraceLink[] = [];
  for (const [side, span] of [
    ['pre', pre],
    ['post', post],
  ] as const) {
    if (!span || out.some((l) => l.traceId === span.traceId)) continue;
    const href = linker(span);
    if (href) out.push({ side, traceId: span.traceId, href });
  }
  return out;
}

function optId(id: string | null): string | null {
  return id === null ? null : shownId(id);
}

function decisionRows(c: Classification, pre: Snapshot | null, post: Snapshot | null): DecisionRow[] {
  return Object.entries(c.decisions).map(([name, d]) => ({
    name,
    verdict: d.verdict,
    reason: d.reason,
    preDigest: pre?.decisions[name]?.digest ?? null,
    postDigest: post?.decisions[name]?.digest ?? null,
    approvalRefs: (d.approvalRefs ?? []).map(shownId),
  }));
}

function approvalRows(c: Classification, approvals: readonly Approval[]): ApprovalRow[] {
  const chained = new Set<string>();
  for (const [name, d] of Object.entries(c.decisions))
    for (const ref of d.approvalRefs ?? []) chained.add(`${name}\u0000${ref}`);
  return approvals.map((a) => ({
    decision: a.decision,
    fromDigest: a.fromDigest,
    toDigest: a.toDigest,
    ref: shownId(a.approvalRef),
    by: shownId(a.approvedBy),
    at: a.approvedAt,
    inChain: chained.has(`${a.decision}\u0000${a.approvalRef}`),
  }));
}

function resolutionRow(entry: HistoryEntry, linker: TraceLinker | undefined): ResolutionRow {
  const r = entry.resolution;
  const c = r.classification;
  const { pre, post, approvals } = r.evidence;
  return {
    resolvedAt: formatRfc3339Utc(entry.resolvedAtMs),
    cause: r.cause,
    state: c.state,
    action: c.action,
    reason: c.reason,
    primaryDecision: c.primaryDecision,
    reobservationSeconds: r.reobservationSeconds,
    activity: r.activity,
    decisions: decisionRows(c, pre, post),
    approvals: approvalRows(c, approvals),
    evidenceMissing: r.evidenceMissing === null ? null : evidenceWhy(r.evidenceMissing),
    traces: traceLinks(linker, r.preSpan, r.postSpan),
  };
}

function ledgerBoundaryRow(l: LedgerSession): LedgerBoundaryRow {
  const e = l.evidence;
  const c = l.classification;
  return {
    boundaryId: shownId(e.boundaryId),
    runtime: e.runtime ?? null,
    trigger: e.trigger ?? null,
    compactedAt: e.compactedAt ?? null,
    state: c.state,
    action: c.action,
    reason: c.reason,
    primaryDecision: c.primaryDecision,
    decisions: decisionRows(c, e.pre, e.post),
    approvals: approvalRows(c, e.approvals),
    evidenceMissing: e.evidenceMissing.map((m) => ({ phase: m.phase, ...evidenceWhy(m.reason), at: m.at })),
    activity: l.activity ? { state: l.activity.state, at: l.activity.at } : null,
    provenance: e.provenance ?? null,
  };
}

/** A session only the ledger knows (or whose latest boundary the service has not seen). */
function ledgerRow(l: LedgerSession): SessionRow {
  const c = l.classification;
  return {
    key: sessionKey(l.sessionId),
    sessionId: shownId(l.sessionId),
    state: c.state,
    reason: c.reason,
    primaryDecision: c.primaryDecision,
    activity: l.activity?.state ?? 'unknown',
    runtime: l.evidence.runtime ?? null,
    boundaryId: shownId(l.evidence.boundaryId),
    lastSeenAt: formatRfc3339Utc(l.latestMs),
    needsHuman: NEEDS_HUMAN_STATES.has(c.state),
    nextStep: nextStep({
      sessionId: l.sessionId,
      inLedger: true,
      runtime: l.evidence.runtime ?? null,
      boundaryId: l.evidence.boundaryId ?? null,
      latest: { classification: c, pre: l.evidence.pre, post: l.evidence.post },
    }),
    source: 'ledger',
  };
}

function row(view: SessionView, history: readonly HistoryEntry[], inLedger?: boolean): SessionRow {
  const last = history.at(-1)?.resolution;
  const latest = view.latest;
  const state: RowState = view.pending ? 'pending' : (latest?.state ?? 'pending');
  const reason = view.pending ? 'post_observation_pending' : (latest?.reason ?? null);
  return {
    key: sessionKey(view.sessionId),
    sessionId: shownId(view.sessionId),
    state,
    reason,
    primaryDecision: view.pending ? null : (latest?.primaryDecision ?? null),
    activity: view.activity,
    runtime: view.pending?.runtime ?? latest?.runtime ?? null,
    boundaryId: optId(view.pending?.boundaryId ?? latest?.boundaryId ?? null),
    lastSeenAt: formatRfc3339Utc(view.touchedAtMs),
    needsHuman: !view.pending && latest !== null && NEEDS_HUMAN_STATES.has(latest.state),
    nextStep: nextStep({
      sessionId: view.sessionId,
      inLedger,
      runtime: view.pending?.runtime ?? latest?.runtime ?? null,
      boundaryId: latest?.boundaryId ?? null,
      pending: view.pending ? { pre: view.pending.pre } : undefined,
      latest:
        last && latest && last.boundaryId === latest.boundaryId && last.classification.state === latest.state
          ? { classification: last.classification, pre: last.evidence.pre, post: last.evidence.post }
          : undefined,
      state: latest ? { state: latest.state, reason: latest.reason } : undefined,
    }),
    source: 'service',
  };
}

/**
 * The row of a session both know: the service's, unless the ledger's latest boundary is one the
 * service has not seen and is newer (its spans did not arrive, or arrived before a restart).
 */
function mergedRow(
  view: SessionView,
  history: readonly HistoryEntry[],
  l: LedgerSession | undefined,
  ledgerRead: boolean,
): SessionRow {
  const own = row(view, history, ledgerRead ? l !== undefined : undefined);
  if (!l) return own;
  const known = [
    view.pending?.boundaryId,
    view.latest?.boundaryId,
    ...history.map((h) => h.resolution.boundaryId),
  ];
  if (!known.includes(l.evidence.boundaryId) && l.latestMs > view.touchedAtMs) return ledgerRow(l);
  return { ...own, source: 'both' };
}

/**
 * The ledger's sessions by id. `complete` when the ledger was read whole, so that a session it
 * lacks is one it does not hold (not one it could not be asked about).
 */
function ledgerSessions(source: ModelSource): {
  byId: Map<string, LedgerSession>;
  read: Overview['ledger'];
  complete: boolean;
} {
  const read = source.ledger?.();
  if (!read) return { byId: new Map(), read: { read: false, problem: null }, complete: false };
  if (!read.ok) return { byId: new Map(), read: { read: true, problem: read.problem }, complete: false };
  return {
    byId: new Map(read.sessions.map((l) => [l.sessionId, l])),
    read: { read: true, problem: null },
    complete: true,
  };
}

function sortRows(rows: SessionRow[]): SessionRow[] {
  // Stable: within a rank the sessions keep the correlator's most-recent-first order.
  return rows.sort((a, b) => rank(a.state) - rank(b.state));
}

/** Builds the overview at `nowMs`. */
export function buildOverview(
  source: ModelSource,
  nowMs: number,
  filter: OverviewFilter = { state: null, runtime: null },
): Overview {
  const views = source.sessions();
  const ledger = ledgerSessions(source);
  const seen = new Set(views.map((v) => v.sessionId));
  const onlyLedger = [...ledger.byId.values()]
    .filter((l) => !seen.has(l.sessionId))
    .sort((a, b) => b.latestMs - a.latestMs);
  const rows = sortRows([
    ...views.map((v) =>
      mergedRow(v, source.history(v.sessionId), ledger.byId.get(v.sessionId), ledger.complete),
    ),
    ...onlyLedger.map(ledgerRow),
  ]);
  const byState = Object.fromEntries(CONTINUITY_STATES.map((s) => [s, 0])) as Record<ContinuityState, number>;
  let pending = 0;
  for (const r of rows) {
    if (r.state === 'pending') pending++;
    else byState[r.state]++;
  }
  const shown = rows.filter(
    (r) =>
      (filter.state === null || r.state === filter.state) &&
      (filter.runtime === null || r.runtime === filter.runtime),
  );
  const runtimes = [...new Set(rows.map((r) => r.runtime).filter((r): r is string => r !== null))].sort();
  return {
    generatedAt: formatRfc3339Utc(nowMs),
    version: source.version(),
    counts: { sessions: rows.length, needsHuman: rows.filter((r) => r.needsHuman).length, pending, byState },
    needsHuman: shown.filter((r) => r.needsHuman),
    sessions: shown,
    ledger: ledger.read,
    filter,
    runtimes,
  };
}

/** Builds one session's page, or undefined when no session has this key. */
export function buildSessionDetail(
  source: ModelSource,
  key: string,
  linker: TraceLinker | undefined,
): SessionDetail | undefined {
  const view = source.sessions().find((v) => sessionKey(v.sessionId) === key);
  const ledger = ledgerSessions(source);
  const inLedger = [...ledger.byId.values()].find((l) => sessionKey(l.sessionId) === key);
  if (!view)
    return inLedger
      ? { ...ledgerRow(inLedger), boundaries: [], ledger: ledgerBoundaryRow(inLedger) }
      : undefined;
  const history = source.history(view.sessionId);
  const boundaries: BoundaryRow[] = [];
  const byId = new Map<string, BoundaryRow>();
  // Newest first: walk the history backwards, grouping resolutions of the same boundary.
  for (let i = history.length - 1; i >= 0; i--) {
    const entry = history[i]!;
    const r = entry.resolution;
    const id = r.boundaryId ?? `(no id #${entry.seq})`;
    let b = byId.get(id);
    if (!b) {
      b = {
        boundaryId: optId(r.boundaryId),
        runtime: r.runtime,
        trigger: r.trigger,
        pending: null,
        resolutions: [],
        traces: [],
      };
      byId.set(id, b);
      boundaries.push(b);
    }
    const res = resolutionRow(entry, linker);
    b.resolutions.push(res);
    for (const t of res.traces) if (!b.traces.some((x) => x.traceId === t.traceId)) b.traces.push(t);
  }
  const p = view.pending;
  if (p) {
    boundaries.unshift({
      boundaryId: optId(p.boundaryId),
      runtime: p.runtime,
      trigger: p.trigger,
      pending: {
        since: formatRfc3339Utc(p.openedAtMs),
        resolvesBy: formatRfc3339Utc(p.deadlineMs),
        evidenceMissing: p.evidenceMissing === null ? null : evidenceWhy(p.evidenceMissing),
      },
      resolutions: [],
      traces: traceLinks(linker, p.preSpan, null),
    });
  }
  return {
    ...mergedRow(view, history, inLedger, ledger.complete),
    boundaries,
    ledger: inLedger ? ledgerBoundaryRow(inLedger) : null,
  };
}
