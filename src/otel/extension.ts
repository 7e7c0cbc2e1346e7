/**
 * The SDK extension: what an agent already traced with OpenTelemetry calls at its compaction
 * points. Values go in, digests come out; the spans carry digests, identifiers, integers and
 * timestamps only.
 *
 * Never put a raw decision value, prompt, response, tool payload, transcript path, compaction
 * summary or key anywhere else than the `value` fields of the calls below: those are digested
 * at once and dropped. The digest key stays in its {@link DigestKey} object.
 *
 * Nothing here throws into the agent. A capture that cannot produce evidence (a value the
 * normalizer refuses, a bad decision name, a ledger write that fails or times out) is recorded
 * as `continuity.evidence_missing` on the span (and as an `evidence_missing` ledger record
 * when a ledger is configured), so the boundary resolves to `unverified`, never to a match.
 */
import {
  type Attributes,
  type AttributeValue,
  context,
  diag,
  type HrTime,
  type Span,
  type SpanContext,
  TraceFlags,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import type { ApproverSignerOptions } from '../authority/app-signer.js';
import { nodeCrypto } from '../authority/builtins.js';
import { KEY_ID_PATTERN, SIGNATURE_PATTERN } from '../authority/patterns.js';
import { approvalStatement } from '../authority/statement.js';
import type { ContinuityState } from '../classify/states.js';
import { CONTINUITY_STATES } from '../classify/states.js';
import { DEFAULT_POST_WINDOWS_MS } from '../correlate/types.js';
import type { Approval, DecisionMap, Snapshot } from '../decision/model.js';
import { DECISION_NAME_PATTERN } from '../decision/names.js';
import {
  ACTIVITY_STATES,
  type ActivityState,
  checkDecisionCount,
  DEFAULT_DECISION_BOUNDS,
  type DecisionBounds,
  DIGEST_PATTERN,
  NORMALIZER_VERSION,
  OPAQUE_ID_PATTERN,
} from '../decision/rules.js';
import { isRfc3339Utc, parseRfc3339Utc } from '../decision/time.js';
import type { DigestKey } from '../digest/digest.js';
import {
  activityAttributes,
  approvalAttributes,
  evidenceMissingAttributes,
  formatNs,
  snapshotAttributes,
} from './attributes.js';
import { boundarySpanId, boundaryTraceId } from './boundary-trace.js';
import { recallEndedState } from './ended-state.js';
import { type Placement, startPlacedSpan } from './placement.js';
import {
  ATTR_CONTINUITY_STATE,
  ATTR_EVIDENCE_MISSING,
  ATTR_SESSION_ID,
  type CompactionTrigger,
  EVIDENCE_MISSING_REASONS,
  INSTRUMENTATION_SCOPE,
  SPAN_ACTIVITY,
  SPAN_COMPACTION_POST,
  SPAN_COMPACTION_PRE,
  SPAN_DECISION_APPROVAL,
} from './semconv.js';
import type {
  ApprovalInput,
  ApprovalSigner,
  CaptureOptions,
  CaptureResult,
  Continuity,
  ContinuityLedgerRecord,
  ContinuityLedgerSink,
  ContinuityOptions,
  ContinuityProblem,
  DecisionInput,
  ObserveOptions,
  ObserveResult,
  RecordResult,
  SessionContinuity,
} from './types.js';

/** Default of {@link ContinuityOptions.runtime}. */
export const DEFAULT_RUNTIME = 'sdk';
/** Default of {@link ContinuityOptions.ledgerTimeoutMs}. */
export const DEFAULT_LEDGER_TIMEOUT_MS = 2_000;
/** Default of {@link ContinuityOptions.maxOpenBoundaries}. */
export const DEFAULT_MAX_OPEN_BOUNDARIES = 10_000;

/** Runtime names become metric attributes, so they stay short and plain (as the reader expects). */
const RUNTIME_PATTERN = /^[a-z0-9][a-z0-9._-]{0,63}$/;
const PACKAGE_VERSION = '0.1.0';

type Phase = 'pre' | 'post';

/** What the extension remembers of a session's last boundary. */
interface LastBoundary {
  boundaryId: string;
  trigger?: CompactionTrigger;
  /** True until its post is observed. */
  open: boolean;
  /** Its first pre span, when it was sampled: the parent of the boundary's later spans. */
  pre?: SpanContext;
  /** When its pre was captured (the extension's clock). */
  preAtMs: number;
}

/** A failure that becomes an evidence-missing mark; carries no value. */
class CaptureFailure {
  constructor(
    readonly reason: string,
    readonly detail: string,
    readonly decision?: string,
  ) {}
}

/**
 * Creates the SDK extension. The spans go to `options.tracer`, by default the global tracer
 * provider's (the one NodeSDK registers), one trace per boundary: the pre span joins the agent's
 * trace as a child of the active span (else it is a root), the boundary's later spans are its
 * children, and each is linked to the agent span active at its call, both ways (`placement.ts`).
 */
export function createContinuity(options: ContinuityOptions = {}): Continuity {
  return new ContinuityExtension(options);
}

function hrTimeFromNs(ns: bigint): HrTime {
  return [Number(ns / 1_000_000_000n), Number(ns % 1_000_000_000n)];
}

function addMs(time: HrTime, ms: number): HrTime {
  const ns = time[1] + Math.max(0, Math.round(ms * 1e6));
  return [time[0] + Math.floor(ns / 1e9), ns % 1e9];
}

function withTimeout<T>(work: () => Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
    // A slow ledger must not keep the agent's process alive.
    timer.unref?.();
  });
  return Promise.race([Promise.resolve().then(work), timeout]).finally(() => clearTimeout(timer));
}

/** What digesting a value takes: the normalizer (canonicalize) and the hash functions. */
interface Digesters {
  normalize: typeof import('../digest/normalize.js').normalize;
  sha256Digest: typeof import('../digest/digest.js').sha256Digest;
  hmacDigest: typeof import('../digest/digest.js').hmacDigest;
}

let digesters: Promise<Digesters> | undefined;

/**
 * Loads the digest functions on the first capture, not at `import 'agent-continuity'`: an app
 * loads the extension at start-up, and most of its processes never compact.
 */
function loadDigesters(): Promise<Digesters> {
  digesters ??= Promise.all([import('../digest/normalize.js'), import('../digest/digest.js')]).then(
    ([n, d]) => ({ normalize: n.normalize, sha256Digest: d.sha256Digest, hmacDigest: d.hmacDigest }),
  );
  return digesters;
}

/**
 * The human's signer for `recordApproval(sessionId, { …, signer })`: asks the approver passphrase
 * at this process's controlling terminal (showing the boundary and key id first) and returns a
 * signer of approvals of `boundaryId` only, with the key `continuity key init` made in the user's
 * configuration directory (docs/security.md). Rejects, signing nothing, without a terminal, without
 * a key store, for a wrong passphrase or on Ctrl-C. Call it from a human's action, never from the
 * agent. The key store and its crypto load when it is called, not at `import 'agent-continuity'`.
 */
export async function approverSigner(
  boundaryId: string,
  options?: ApproverSignerOptions,
): Promise<ApprovalSigner> {
  const { unlockApproverSigner } = await import('../authority/app-signer.js');
  return unlockApproverSigner(boundaryId, options);
}

/** The Node warning code of a decision given as a plain value instead of `{ value }`. */
export const PLAIN_VALUE_WARNING_CODE = 'CONTINUITY_PLAIN_VALUE';

/** What a decision input is, in words, for the misuse message (never the value itself). */
function describeKind(input: unknown): string {
  if (input === null) return 'null';
  if (Array.isArray(input)) return 'an array';
  return typeof input === 'object' ? 'an object without value or digest' : `a ${typeof input}`;
}

class ContinuityExtension implements Continuity {
  private readonly _runtime: string;
  private readonly _tracer: Tracer | undefined;
  private readonly _ledger: ContinuityLedgerSink | undefined;
  private readonly _digestKey: DigestKey | undefined;
  private readonly _bounds: DecisionBounds;
  private readonly _ledgerTimeoutMs: number;
  private readonly _now: () => number;
  private readonly _onProblem: (problem: ContinuityProblem) => void;
  private readonly _maxOpen: number;
  /** The last capture time issued, in ns: times are strictly increasing (see {@link _nowNs}). */
  private _lastNs = 0n;
  /** The digest functions, once loaded ({@link loadDigesters}). */
  private _digesters: Digesters | undefined;
  /** Whether the plain-value misuse was already reported as a process warning. */
  private _warnedPlainValue = false;
  /** Session → its last boundary (insertion order = age, for eviction). */
  private readonly _last = new Map<string, LastBoundary>();
  /** How long after its pre capture a closed boundary still takes the session's spans (see {@link _home}). */
  private readonly _homeMs: number;

  constructor(options: ContinuityOptions) {
    const runtime = options.runtime ?? DEFAULT_RUNTIME;
    if (RUNTIME_PATTERN.test(runtime)) this._runtime = runtime;
    else {
      diag.warn(`agent-continuity: runtime must match ${RUNTIME_PATTERN}; using "${DEFAULT_RUNTIME}"`);
      this._runtime = DEFAULT_RUNTIME;
    }
    this._tracer = options.tracer;
    this._ledger = options.ledger;
    this._digestKey = options.digestKey;
    this._bounds = options.decisionBounds ?? DEFAULT_DECISION_BOUNDS;
    const timeout = options.ledgerTimeoutMs ?? DEFAULT_LEDGER_TIMEOUT_MS;
    if (Number.isFinite(timeout) && timeout > 0) this._ledgerTimeoutMs = timeout;
    else {
      diag.warn('agent-continuity: ledgerTimeoutMs must be a positive number; using the default');
      this._ledgerTimeoutMs = DEFAULT_LEDGER_TIMEOUT_MS;
    }
    this._now = options.now ?? Date.now;
    this._onProblem =
      options.onProblem ??
      ((p) =>
        diag.warn(
          `agent-continuity: ${p.operation}: evidence missing (${p.reason})${p.decision ? ` for decision "${p.decision}"` : ''}: ${p.detail}`,
        ));
    this._maxOpen = Math.max(1, options.maxOpenBoundaries ?? DEFAULT_MAX_OPEN_BOUNDARIES);
    // The post window, then as long again for re-observations (the correlator's defaults).
    this._homeMs = 2 * (DEFAULT_POST_WINDOWS_MS[this._runtime] ?? DEFAULT_POST_WINDOWS_MS.default!);
  }

  /**
   * Now, in nanoseconds, strictly increasing. A post observation must be later than its pre
   * capture to count as fresh; millisecond times would tie when both happen in the same
   * millisecond, and a tie reads as a stale observation.
   */
  private _nowNs(): bigint {
    const ns =
      this._now === Date.now
        ? BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6))
        : BigInt(Math.round(this._now() * 1e6));
    this._lastNs = ns > this._lastNs ? ns : this._lastNs + 1n;
    return this._lastNs;
  }

  // Resolved per call, so an extension created before NodeSDK starts still uses its provider.
  private _getTracer(): Tracer {
    return this._tracer ?? trace.getTracer(INSTRUMENTATION_SCOPE, PACKAGE_VERSION);
  }

  private _report(problem: ContinuityProblem): void {
    try {
      this._onProblem(problem);
    } catch {
      // The agent's own callback must not break the capture either.
    }
  }

  forSession(sessionId: string): SessionContinuity {
    return {
      sessionId,
      capturePre: (decisions, options) => this.capturePre(sessionId, decisions, options),
      observePost: (decisions, options) => this.observePost(sessionId, decisions, options),
      recordApproval: (approval) => this.recordApproval(sessionId, approval),
      reportActivity: (state, options) => this.reportActivity(sessionId, state, options),
    };
  }

  async capturePre(
    sessionId: string,
    decisions: Record<string, DecisionInput>,
    options: CaptureOptions = {},
  ): Promise<CaptureResult> {
    try {
      return await this._snapshot('pre', sessionId, decisions, options);
    } catch (err) {
      return this._unexpected('capturePre', err);
    }
  }

  async observePost(
    sessionId: string,
    decisions: Record<string, DecisionInput>,
    options: ObserveOptions = {},
  ): Promise<ObserveResult> {
    try {
      return await this._snapshot('post', sessionId, decisions, options);
    } catch (err) {
      return this._unexpected('observePost', err);
    }
  }

  private _unexpected(operation: ContinuityProblem['operation'], err: unknown): CaptureResult {
    const reason = EVIDENCE_MISSING_REASONS.captureFailed;
    this._report({ operation, reason, detail: `unexpected ${(err as Error)?.name ?? 'error'}` });
    return { ok: false, boundaryId: '', digests: {}, evidenceMissing: reason };
  }

  /**
   * A decision given as a plain value (`{ target: 'main' }` instead of `{ target: { value: 'main' } }`)
   * would silently classify `unverified`: say so where a developer sees it by default (a Node
   * process warning on stderr, once per extension) as well as through `diag`. Names the decision
   * and the kind of value, never the value.
   */
  private _plainValue(name: string, input: unknown): CaptureFailure {
    const detail = `expected { value: … } or { digest: … }, got ${describeKind(input)}; write { ${name}: { value: … } }`;
    if (!this._warnedPlainValue) {
      this._warnedPlainValue = true;
      process.emitWarning(
        `agent-continuity: decision "${name}": ${detail} (the boundary resolves unverified)`,
        {
          code: PLAIN_VALUE_WARNING_CODE,
        },
      );
    }
    return new CaptureFailure(EVIDENCE_MISSING_REASONS.invalidDecision, detail, name);
  }

  private _digest(name: string, input: DecisionInput): string {
    if (input === null || typeof input !== 'object' || Array.isArray(input)) {
      throw this._plainValue(name, input);
    }
    if (input.digest !== undefined) {
      if (typeof input.digest !== 'string' || !DIGEST_PATTERN.test(input.digest)) {
        throw new CaptureFailure(EVIDENCE_MISSING_REASONS.invalidDecision, 'digest is malformed', name);
      }
      return input.digest;
    }
    if (!('value' in input)) throw this._plainValue(name, input);
    const { normalize, hmacDigest, sha256Digest } = this._digesters!;
    const r = normalize(input.value);
    if (!r.ok) {
      // The problem code and path only: the message could quote part of the value.
      throw new CaptureFailure(
        EVIDENCE_MISSING_REASONS.invalidDecision,
        `the normalizer refused the value (${r.problem.code} at ${r.problem.path})`,
        name,
      );
    }
    return this._digestKey ? hmacDigest(r.canonical, this._digestKey) : sha256Digest(r.canonical);
  }

  private _decisionMap(phase: Phase, input: Record<string, DecisionInput>, capturedAt: string): DecisionMap {
    if (input === null || typeof input !== 'object' || Array.isArray(input)) {
      throw new CaptureFailure(EVIDENCE_MISSING_REASONS.invalidDecision, 'expected a record of decisions');
    }
    const map: DecisionMap = {};
    for (const name of Object.keys(input)) {
      if (!DECISION_NAME_PATTERN.test(name)) {
        throw new CaptureFailure(
          EVIDENCE_MISSING_REASONS.invalidDecision,
          `decision names must match ${DECISION_NAME_PATTERN}`,
        );
      }
      const d = input[name]!;
      const digest = this._digest(name, d);
      const revision = d.revision ?? 1;
      const observedAt = d.observedAt ?? capturedAt;
      if (!Number.isSafeInteger(revision) || revision < 1) {
        throw new CaptureFailure(
          EVIDENCE_MISSING_REASONS.invalidDecision,
          'revision must be an integer >= 1',
          name,
        );
      }
      if (typeof observedAt !== 'string' || !isRfc3339Utc(observedAt)) {
        throw new CaptureFailure(
          EVIDENCE_MISSING_REASONS.invalidDecision,
          'observedAt must be RFC 3339 UTC',
          name,
        );
      }
      for (const field of ['source', 'approvalRef'] as const) {
        const v = d[field];
        if (v !== undefined && (typeof v !== 'string' || !OPAQUE_ID_PATTERN.test(v))) {
          throw new CaptureFailure(
            EVIDENCE_MISSING_REASONS.invalidDecision,
            `${field} must be an opaque identifier (no spaces, not a path)`,
            name,
          );
        }
      }
      map[name] = {
        digest,
        revision,
        observedAt,
        ...(d.source !== undefined && { source: d.source }),
        ...(d.approvalRef !== undefined && { approvalRef: d.approvalRef }),
      };
    }
    if (phase === 'pre') {
      const problem = checkDecisionCount(map, this._bounds);
      if (problem) throw new CaptureFailure(EVIDENCE_MISSING_REASONS.invalidDecision, problem);
    }
    return map;
  }

  /** The boundary id and trigger for this call; remembers (pre) or closes (post) the session's. */
  private _boundary(
    phase: Phase,
    sessionId: string,
    options: CaptureOptions | ObserveOptions,
  ): { boundaryId: string; known: boolean; trigger?: CompactionTrigger; home?: SpanContext } {
    const explicit =
      typeof options.boundaryId === 'string' && OPAQUE_ID_PATTERN.test(options.boundaryId)
        ? options.boundaryId
        : undefined;
    const trigger = options.trigger === 'manual' || options.trigger === 'auto' ? options.trigger : undefined;
    const last = this._last.get(sessionId);
    if (phase === 'pre') {
      const boundaryId = explicit ?? nodeCrypto().randomUUID();
      // A re-capture of the open boundary stays under its first pre span, in its trace.
      const again = last?.open && last.boundaryId === boundaryId ? last : undefined;
      this._last.delete(sessionId);
      if (this._last.size >= this._maxOpen) {
        const oldest = this._last.keys().next().value;
        if (oldest !== undefined) this._last.delete(oldest);
      }
      this._last.set(sessionId, {
        boundaryId,
        ...(trigger && { trigger }),
        open: true,
        ...(again?.pre && { pre: again.pre }),
        preAtMs: again?.preAtMs ?? this._now(),
      });
      return {
        boundaryId,
        known: true,
        ...(trigger && { trigger }),
        ...(again?.pre && { home: again.pre }),
      };
    }
    const open = last?.open ? last : undefined;
    const home = this._home(sessionId, explicit);
    if (last) last.open = false;
    const known = explicit ?? open?.boundaryId;
    const t = trigger ?? open?.trigger;
    // A post with no known boundary still gets an id for the ledger; the span leaves it out so
    // the processor correlates by session and reports the missing pre honestly.
    const boundaryId = known ?? nodeCrypto().randomUUID();
    return {
      boundaryId,
      known: known !== undefined,
      ...(t && { trigger: t }),
      ...(home && { home }),
    };
  }

  /**
   * The pre span a span of this session goes under (see `placement.ts`): the session's last
   * boundary's, for a span of that boundary (`boundaryId` given and equal), or, with no boundary
   * named, while that boundary waits for its post or within {@link _homeMs} of its pre capture
   * (re-observations and approve-then-re-observe), so it stays on the boundary's trace and with it
   * on one `continuity serve` instance. Afterwards none: no trace outlives its boundary.
   */
  private _home(sessionId: string, boundaryId?: string): SpanContext | undefined {
    const last = this._last.get(sessionId);
    if (!last?.pre) return undefined;
    if (boundaryId !== undefined) return last.boundaryId === boundaryId ? last.pre : undefined;
    return last.open || this._now() - last.preAtMs <= this._homeMs ? last.pre : undefined;
  }

  /** A continuity span placed per `placement.ts`, with the boundary's derived ids as the fallback. */
  private _startSpan(
    name: string,
    sessionId: string,
    boundaryId: string,
    attributes: Attributes,
    startTime: HrTime | undefined,
    home: SpanContext | undefined,
  ): Span {
    const placement: Placement = {
      ...(home && { home }),
      fallback: {
        traceId: boundaryTraceId(sessionId, boundaryId),
        spanId: boundarySpanId(sessionId, boundaryId, 'pre'),
      },
    };
    return startPlacedSpan(
      { context, trace, diag },
      this._getTracer(),
      name,
      { attributes, ...(startTime && { startTime }) },
      placement,
    );
  }

  /** The first sampled pre span of the session's open boundary: its later spans go under it. */
  private _rememberPre(sessionId: string, boundaryId: string, span: Span): void {
    const last = this._last.get(sessionId);
    const sc = span.spanContext();
    if (last?.boundaryId !== boundaryId || last.pre || (sc.traceFlags & TraceFlags.SAMPLED) === 0) return;
    last.pre = sc;
  }

  private async _append(records: ContinuityLedgerRecord[]): Promise<boolean> {
    const ledger = this._ledger;
    if (!ledger) return true;
    try {
      await withTimeout(async () => {
        for (const r of records) await ledger.append(r);
      }, this._ledgerTimeoutMs);
      return true;
    } catch {
      return false;
    }
  }

  private async _snapshot(
    phase: Phase,
    sessionId: string,
    decisions: Record<string, DecisionInput>,
    options: CaptureOptions | ObserveOptions,
  ): Promise<ObserveResult> {
    if (!this._digesters) this._digesters = await loadDigesters();
    const operation = phase === 'pre' ? 'capturePre' : 'observePost';
    const spanName = phase === 'pre' ? SPAN_COMPACTION_PRE : SPAN_COMPACTION_POST;
    const wallStart = performance.now();
    if (typeof sessionId !== 'string' || !OPAQUE_ID_PATTERN.test(sessionId)) {
      // No span: it could not be correlated, and the "id" might be a path or free text.
      this._report({
        operation,
        reason: 'invalid_session',
        detail: 'sessionId must be an opaque identifier',
      });
      return {
        ok: false,
        boundaryId: '',
        digests: {},
        evidenceMissing: EVIDENCE_MISSING_REASONS.captureFailed,
      };
    }
    const { boundaryId, known, trigger, home } = this._boundary(phase, sessionId, options);
    const compactedAt = phase === 'post' ? (options as ObserveOptions).compactedAt : undefined;
    const boundaryContext = {
      ...(known && { boundaryId }),
      runtime: this._runtime,
      ...(trigger && { trigger }),
      ...(compactedAt !== undefined && isRfc3339Utc(compactedAt) && { compactedAt }),
    };

    let failure: CaptureFailure | undefined;
    let capturedAt: string;
    let startTime: HrTime | undefined;
    const explicitAt = options.capturedAt;
    if (explicitAt !== undefined) {
      const ns = typeof explicitAt === 'string' ? parseRfc3339Utc(explicitAt) : undefined;
      if (ns === undefined) {
        failure = new CaptureFailure(
          EVIDENCE_MISSING_REASONS.invalidDecision,
          'capturedAt must be RFC 3339 UTC',
        );
        capturedAt = formatNs(this._nowNs());
      } else {
        capturedAt = explicitAt as string;
        startTime = hrTimeFromNs(ns);
      }
    } else {
      const ns = this._nowNs();
      capturedAt = formatNs(ns);
      if (this._now !== Date.now) startTime = hrTimeFromNs(ns);
    }
    if (compactedAt !== undefined && !isRfc3339Utc(compactedAt) && !failure) {
      failure = new CaptureFailure(
        EVIDENCE_MISSING_REASONS.invalidDecision,
        'compactedAt must be RFC 3339 UTC',
      );
    }

    let snapshot: Snapshot | undefined;
    if (!failure) {
      try {
        snapshot = {
          sessionId,
          capturedAt,
          normalizerVersion: NORMALIZER_VERSION,
          decisions: this._decisionMap(phase, decisions, capturedAt),
        };
      } catch (err) {
        if (!(err instanceof CaptureFailure)) throw err;
        failure = err;
      }
    }

    const attributes = snapshot
      ? snapshotAttributes(phase, snapshot, boundaryContext)
      : evidenceMissingAttributes(phase, sessionId, failure!.reason, boundaryContext);
    const span = this._startSpan(spanName, sessionId, boundaryId, attributes, startTime, home);
    if (phase === 'pre') this._rememberPre(sessionId, boundaryId, span);

    const base = {
      sessionId,
      boundaryId,
      runtime: this._runtime,
      ...(trigger && { trigger }),
    };
    const records: ContinuityLedgerRecord[] = [];
    if (boundaryContext.compactedAt !== undefined) {
      records.push({ type: 'boundary', ...base, compactedAt: boundaryContext.compactedAt });
    }
    if (snapshot) {
      records.push({
        type: 'snapshot',
        phase,
        ...base,
        capturedAt: snapshot.capturedAt,
        normalizerVersion: snapshot.normalizerVersion,
        decisions: snapshot.decisions,
      });
    } else {
      records.push({ type: 'evidence_missing', phase, ...base, reason: failure!.reason, at: capturedAt });
    }

    if (!(await this._append(records))) {
      if (snapshot) {
        failure = new CaptureFailure(
          EVIDENCE_MISSING_REASONS.ledgerWriteFailed,
          'the ledger write failed or timed out',
        );
        span.setAttribute(ATTR_EVIDENCE_MISSING, failure.reason);
        // Best effort: the ledger may be back for a smaller record; never awaited beyond the bound.
        void this._append([
          { type: 'evidence_missing', phase, ...base, reason: failure.reason, at: capturedAt },
        ]);
      } else {
        failure = new CaptureFailure(
          failure!.reason,
          `${failure!.detail}; the ledger write failed too`,
          failure!.decision,
        );
      }
    }

    span.end(startTime ? addMs(startTime, performance.now() - wallStart) : undefined);
    if (failure) {
      this._report({
        operation,
        reason: failure.reason,
        detail: failure.detail,
        ...(failure.decision !== undefined && { decision: failure.decision }),
      });
    }

    const result: ObserveResult = {
      ok: failure === undefined,
      boundaryId,
      digests: failure
        ? {}
        : Object.fromEntries(Object.entries(snapshot!.decisions).map(([n, d]) => [n, d.digest])),
      spanContext: span.spanContext(),
      ...(failure && { evidenceMissing: failure.reason }),
    };
    if (phase === 'post') {
      const state = readState(span);
      if (state) result.state = state;
    }
    return result;
  }

  async recordApproval(sessionId: string, approval: ApprovalInput): Promise<RecordResult> {
    try {
      if (!this._digesters) this._digesters = await loadDigesters();
      if (typeof sessionId !== 'string' || !OPAQUE_ID_PATTERN.test(sessionId)) {
        this._report({
          operation: 'recordApproval',
          reason: 'invalid_session',
          detail: 'sessionId must be an opaque identifier',
        });
        return { ok: false, problem: 'invalid_session' };
      }
      let record: Approval | undefined;
      let failure: CaptureFailure | undefined;
      try {
        record = this._approval(sessionId, approval);
      } catch (err) {
        if (!(err instanceof CaptureFailure)) throw err;
        failure = err;
      }
      const span = this._startSpan(
        SPAN_DECISION_APPROVAL,
        sessionId,
        this._last.get(sessionId)?.boundaryId ?? nodeCrypto().randomUUID(),
        record
          ? approvalAttributes(sessionId, record)
          : { [ATTR_SESSION_ID]: sessionId, [ATTR_EVIDENCE_MISSING]: failure!.reason },
        undefined,
        this._home(sessionId),
      );
      if (record && !(await this._append([{ type: 'approval', sessionId, ...record }]))) {
        failure = new CaptureFailure(
          EVIDENCE_MISSING_REASONS.ledgerWriteFailed,
          'the ledger write failed or timed out',
        );
        span.setAttribute(ATTR_EVIDENCE_MISSING, failure.reason);
      }
      span.end();
      if (failure) {
        this._report({
          operation: 'recordApproval',
          reason: failure.reason,
          detail: failure.detail,
          ...(failure.decision !== undefined && { decision: failure.decision }),
        });
        return { ok: false, problem: failure.reason };
      }
      return { ok: true };
    } catch (err) {
      this._report({
        operation: 'recordApproval',
        reason: 'capture_failed',
        detail: `unexpected ${(err as Error)?.name}`,
      });
      return { ok: false, problem: EVIDENCE_MISSING_REASONS.captureFailed };
    }
  }

  private _approval(sessionId: string, input: ApprovalInput): Approval {
    const invalid = (detail: string, decision?: string) =>
      new CaptureFailure(EVIDENCE_MISSING_REASONS.invalidDecision, detail, decision);
    if (input === null || typeof input !== 'object') throw invalid('expected an approval object');
    const { decision, approvalRef, approvedBy } = input;
    if (typeof decision !== 'string' || !DECISION_NAME_PATTERN.test(decision)) {
      throw invalid(`decision must match ${DECISION_NAME_PATTERN}`);
    }
    if (typeof approvalRef !== 'string' || !OPAQUE_ID_PATTERN.test(approvalRef)) {
      throw invalid('approvalRef must be an opaque identifier', decision);
    }
    if (typeof approvedBy !== 'string' || !OPAQUE_ID_PATTERN.test(approvedBy)) {
      throw invalid('approvedBy must be an opaque identifier', decision);
    }
    const approvedAt = input.approvedAt ?? formatNs(this._nowNs());
    if (typeof approvedAt !== 'string' || !isRfc3339Utc(approvedAt)) {
      throw invalid('approvedAt must be RFC 3339 UTC', decision);
    }
    const side = (value: unknown, digest: string | undefined): DecisionInput =>
      digest !== undefined ? { digest } : { value };
    const approval: Approval = {
      decision,
      fromDigest: this._digest(decision, side(input.from, input.fromDigest)),
      toDigest: this._digest(decision, side(input.to, input.toDigest)),
      approvalRef,
      approvedBy,
      approvedAt,
    };
    const signer = input.signer;
    if (!signer) return approval;
    if (!OPAQUE_ID_PATTERN.test(signer.boundaryId) || !KEY_ID_PATTERN.test(signer.keyId)) {
      throw invalid('signer: boundaryId must be an opaque identifier and keyId ed25519:<32 hex>', decision);
    }
    const proof = { boundaryId: signer.boundaryId, keyId: signer.keyId };
    const signature = signer.sign(approvalStatement({ ...approval, ...proof, sessionId }));
    if (typeof signature !== 'string' || !SIGNATURE_PATTERN.test(signature)) {
      throw invalid('signer: expected a signature of 128 hex digits', decision);
    }
    return { ...approval, ...proof, signature };
  }

  async reportActivity(
    sessionId: string,
    state: ActivityState,
    options: { at?: string } = {},
  ): Promise<RecordResult> {
    try {
      if (typeof sessionId !== 'string' || !OPAQUE_ID_PATTERN.test(sessionId)) {
        this._report({
          operation: 'reportActivity',
          reason: 'invalid_session',
          detail: 'sessionId must be an opaque identifier',
        });
        return { ok: false, problem: 'invalid_session' };
      }
      if (!(ACTIVITY_STATES as readonly string[]).includes(state)) {
        this._report({
          operation: 'reportActivity',
          reason: 'invalid_input',
          detail: `state must be one of ${ACTIVITY_STATES.join(', ')}`,
        });
        return { ok: false, problem: 'invalid_input' };
      }
      const at = options.at !== undefined && isRfc3339Utc(options.at) ? options.at : formatNs(this._nowNs());
      const ns = options.at !== undefined ? parseRfc3339Utc(at) : undefined;
      const span = this._startSpan(
        SPAN_ACTIVITY,
        sessionId,
        this._last.get(sessionId)?.boundaryId ?? nodeCrypto().randomUUID(),
        activityAttributes(sessionId, state),
        ns ? hrTimeFromNs(ns) : undefined,
        this._home(sessionId),
      );
      span.end(ns ? hrTimeFromNs(ns) : undefined);
      if (!(await this._append([{ type: 'activity', sessionId, state, at }]))) {
        this._report({
          operation: 'reportActivity',
          reason: EVIDENCE_MISSING_REASONS.ledgerWriteFailed,
          detail: 'the ledger write failed or timed out',
        });
        return { ok: false, problem: EVIDENCE_MISSING_REASONS.ledgerWriteFailed };
      }
      return { ok: true };
    } catch (err) {
      this._report({
        operation: 'reportActivity',
        reason: 'capture_failed',
        detail: `unexpected ${(err as Error)?.name}`,
      });
      return { ok: false, problem: EVIDENCE_MISSING_REASONS.captureFailed };
    }
  }
}

/**
 * The state a ContinuityProcessor wrote on an ended SDK span (duck-typed: API spans have none),
 * else the one it resolved for the span after it ended (SDKs without `onEnding`), if any.
 */
function readState(span: Span): ContinuityState | undefined {
  const attrs = (span as unknown as { attributes?: Record<string, AttributeValue | undefined> }).attributes;
  const state = attrs?.[ATTR_CONTINUITY_STATE];
  return typeof state === 'string' && (CONTINUITY_STATES as readonly string[]).includes(state)
    ? (state as ContinuityState)
    : recallEndedState(span);
}
