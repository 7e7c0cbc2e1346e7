/**
 * The recording hooks: PreCompact, PostCompact, SessionStart, InstructionsLoaded and activity.
 * Loaded only for those events (never by the gate): they use the ledger, the digests and the
 * exporter. None of them ever blocks: every failure becomes evidence missing, a stderr line and
 * exit 0. The compaction summary, custom instructions and transcript path are never read.
 */
import { randomBytes } from 'node:crypto';
import { isAbsolute, relative } from 'node:path';
import { BOUNDARY_REASONS } from '../../classify/states.js';
import { type ActivityState, NORMALIZER_VERSION, OPAQUE_ID_PATTERN } from '../../decision/model.js';
import { compareCriticality } from '../../decision/names.js';
import { formatRfc3339Utc } from '../../decision/time.js';
import { loadDigestKey } from '../../digest/key-file.js';
import { boundarySpanIds, type ExportSpan, nowNs, randomSpanIds } from '../../export/spans.js';
import { activityAttributes, evidenceMissingAttributes, snapshotAttributes } from '../../otel/attributes.js';
import { EVIDENCE_MISSING_REASONS, SPAN_ACTIVITY, SPAN_COMPACTION_PRE } from '../../otel/semconv.js';
import { type AdapterConfig, RUNTIME } from './config.js';
import { type EvidenceStore, openEvidence } from './evidence.js';
import { exportHookSpans } from './export.js';
import type { HookPayload } from './hook.js';
import { compactionContext } from './messages.js';
import {
  createMarker,
  type GateBoundary,
  markerFile,
  readGateState,
  writeActivity,
  writeGateState,
  writeProjectSession,
} from './state.js';
import { digestTaskRecord, readTaskOutline } from './task-record.js';

/** Evidence-missing reason codes the adapter writes besides the task record's. */
export const ADAPTER_EVIDENCE_REASONS = {
  /** PostCompact or SessionStart(compact) arrived with no PreCompact before it. */
  preHookMissing: 'pre_hook_missing',
  /** The snapshot was taken but the ledger refused or failed the append. */
  ledgerWriteFailed: EVIDENCE_MISSING_REASONS.ledgerWriteFailed,
} as const;

/** How long after PostCompact a SessionStart or InstructionsLoaded `compact` still belongs to it. */
const SAME_COMPACTION_MS = 10 * 60 * 1000;

/** What every recording hook needs. */
export interface HookContext {
  env: NodeJS.ProcessEnv;
  config: AdapterConfig;
  /** One line to stderr. */
  warn: (line: string) => void;
  /** The clock, as RFC 3339 UTC. */
  now: () => string;
}

/** A new boundary id: lower-case, time-ordered, opaque. */
export function newBoundaryId(): string {
  return `cc-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
}

/** The clock the hooks use by default. */
export function systemNow(): string {
  return formatRfc3339Utc(Date.now());
}

/** How messages name the task record: project-relative, never an absolute path. */
export function taskRecordLabel(config: AdapterConfig): string {
  const rel = relative(config.projectDir, config.taskRecordPath);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : 'the task record (CONTINUITY_TASK_RECORD)';
}

function outlineNames(config: AdapterConfig): string[] {
  const o = readTaskOutline(config.taskRecordPath, taskRecordLabel(config));
  return o.ok ? [...o.outline.names].sort(compareCriticality) : [];
}

async function withEvidence<T>(
  ctx: HookContext,
  what: string,
  fn: (store: EvidenceStore) => Promise<T>,
): Promise<T | undefined> {
  let store: EvidenceStore | undefined;
  try {
    store = openEvidence(ctx.env);
    return await fn(store);
  } catch (e) {
    ctx.warn(`${what}: ledger: ${(e as Error).message.split('\n')[0]}`);
    return undefined;
  } finally {
    await store?.close().catch(() => {});
  }
}

/** PreCompact: the pre snapshot of the task record → ledger + `continuity.compaction.pre` span. */
export async function onPreCompact(p: HookPayload, ctx: HookContext): Promise<string> {
  const startNs = nowNs();
  const now = ctx.now();
  const { config } = ctx;
  const boundaryId = newBoundaryId();
  const trigger = p.trigger;
  writeProjectSession(config.projectDir, p.sessionId, now, ctx.env);

  const label = taskRecordLabel(config);
  const r = digestTaskRecord(config.taskRecordPath, label, now, () => loadDigestKey({ env: ctx.env }));
  let missing: string | undefined;
  if (!r.ok) {
    missing = r.problem.code;
    ctx.warn(`PreCompact: no pre snapshot: ${r.problem.message}`);
  }
  const names = (r.ok ? Object.keys(r.digests.decisions) : outlineNames(config)).sort(compareCriticality);
  const cache = (reason?: string): GateBoundary => ({
    id: boundaryId,
    state: 'unverified',
    reason: reason ? BOUNDARY_REASONS.preSnapshotMissing : BOUNDARY_REASONS.postObservationMissing,
    primaryDecision: null,
    decisionNames: names,
    ...(reason ? { evidenceMissing: reason } : {}),
  });
  // The gate's cache first: if everything after this fails, writes still wait for a re-observation.
  writeGateState(p.sessionId, cache(missing), now, ctx.env);

  const base = { sessionId: p.sessionId, boundaryId, runtime: RUNTIME, ...(trigger ? { trigger } : {}) };
  const ok = await withEvidence(ctx, 'PreCompact', async (store) => {
    if (r.ok) {
      await store.append({
        type: 'snapshot',
        phase: 'pre',
        ...base,
        capturedAt: now,
        normalizerVersion: NORMALIZER_VERSION,
        decisions: r.digests.decisions,
      });
    } else {
      await store.append({ type: 'evidence_missing', phase: 'pre', ...base, reason: missing!, at: now });
    }
    return true;
  });
  if (!ok && r.ok) {
    missing = ADAPTER_EVIDENCE_REASONS.ledgerWriteFailed;
    writeGateState(p.sessionId, cache(missing), now, ctx.env);
  }

  const boundaryCtx = { boundaryId, runtime: RUNTIME, ...(trigger ? { trigger } : {}) };
  const span: ExportSpan = {
    name: SPAN_COMPACTION_PRE,
    ids: boundarySpanIds(p.sessionId, boundaryId, 'pre'),
    startNs,
    endNs: nowNs(),
    attributes:
      r.ok && !missing
        ? snapshotAttributes(
            'pre',
            {
              sessionId: p.sessionId,
              capturedAt: now,
              normalizerVersion: NORMALIZER_VERSION,
              decisions: r.digests.decisions,
            },
            boundaryCtx,
          )
        : evidenceMissingAttributes('pre', p.sessionId, missing!, boundaryCtx),
    error: missing !== undefined,
  };
  await exportHookSpans([span], config, ctx.env, (l) => ctx.warn(`PreCompact: ${l}`));
  return '';
}

/**
 * Makes sure the session's latest compaction has a boundary record (PostCompact, or SessionStart /
 * InstructionsLoaded when PostCompact did not fire). A compaction with no PreCompact before it
 * opens a boundary of its own whose pre snapshot is missing. Returns the cached boundary.
 */
async function ensureBoundary(p: HookPayload, ctx: HookContext, event: string): Promise<GateBoundary> {
  const now = ctx.now();
  const cached = readGateState(p.sessionId, ctx.env)?.boundary;
  // Which boundary this compaction belongs to: the one PreCompact opened (not yet compacted), or,
  // after PostCompact already recorded it, the same one for SessionStart / InstructionsLoaded
  // while it is recent and not yet re-observed. Anything else is a compaction nobody captured.
  const pending = cached !== null && cached !== undefined && !cached.observed;
  const recent =
    cached?.compactedAt !== undefined &&
    Date.parse(now) - Date.parse(cached.compactedAt) < SAME_COMPACTION_MS;
  const reuse = pending && (cached!.compactedAt === undefined || (event !== 'PostCompact' && recent));
  let b: GateBoundary;
  let openedHere = false;
  if (reuse) {
    b = cached!;
  } else {
    openedHere = true;
    b = {
      id: newBoundaryId(),
      state: 'unverified',
      reason: BOUNDARY_REASONS.preSnapshotMissing,
      primaryDecision: null,
      decisionNames: outlineNames(ctx.config),
      evidenceMissing: ADAPTER_EVIDENCE_REASONS.preHookMissing,
    };
    ctx.warn(`${event}: compaction without a PreCompact snapshot; continuity cannot be verified for it`);
  }
  if (!createMarker(markerFile(p.sessionId, b.id, 'recorded', ctx.env)))
    return readGateState(p.sessionId, ctx.env)?.boundary ?? b;
  b = { ...b, compactedAt: now };
  writeGateState(p.sessionId, b, now, ctx.env);
  const trigger = p.trigger;
  const base = {
    sessionId: p.sessionId,
    boundaryId: b.id,
    runtime: RUNTIME,
    ...(trigger ? { trigger } : {}),
  };
  await withEvidence(ctx, event, async (store) => {
    if (openedHere) {
      await store.append({
        type: 'evidence_missing',
        phase: 'pre',
        ...base,
        reason: ADAPTER_EVIDENCE_REASONS.preHookMissing,
        at: now,
      });
    }
    await store.append({ type: 'boundary', ...base, compactedAt: now });
  });
  if (openedHere) {
    const span: ExportSpan = {
      name: SPAN_COMPACTION_PRE,
      ids: boundarySpanIds(p.sessionId, b.id, 'pre'),
      startNs: nowNs(),
      endNs: nowNs(),
      attributes: evidenceMissingAttributes('pre', p.sessionId, ADAPTER_EVIDENCE_REASONS.preHookMissing, {
        boundaryId: b.id,
        runtime: RUNTIME,
        ...(trigger ? { trigger } : {}),
      }),
      error: true,
    };
    await exportHookSpans([span], ctx.config, ctx.env, (l) => ctx.warn(`${event}: ${l}`));
  }
  return b;
}

/** PostCompact: record the boundary (trigger, time). The compaction summary is never read. */
export async function onPostCompact(p: HookPayload, ctx: HookContext): Promise<string> {
  await ensureBoundary(p, ctx, 'PostCompact');
  return '';
}

function contextOutput(event: string, sessionId: string, names: readonly string[]): string {
  return `${JSON.stringify({
    hookSpecificOutput: { hookEventName: event, additionalContext: compactionContext(sessionId, names) },
  })}\n`;
}

/**
 * SessionStart: remember the project's current session (for `continuity observe`); after a
 * compaction (`source: "compact"`) also record the boundary and ask the agent to restate its
 * decisions before its next consequential write.
 */
export async function onSessionStart(p: HookPayload, ctx: HookContext): Promise<string> {
  const now = ctx.now();
  writeProjectSession(ctx.config.projectDir, p.sessionId, now, ctx.env);
  if (p.source === 'startup' && !readGateState(p.sessionId, ctx.env)) {
    // A new session has no boundary yet: the gate's fast path knows that from now on.
    writeGateState(p.sessionId, null, now, ctx.env);
  }
  if (p.source !== 'compact') return '';
  const b = await ensureBoundary(p, ctx, 'SessionStart');
  createMarker(markerFile(p.sessionId, b.id, 'injected', ctx.env));
  return contextOutput('SessionStart', p.sessionId, b.decisionNames);
}

/**
 * InstructionsLoaded with `load_reason: "compact"`: record the boundary if nothing did yet, and
 * add the restatement request once per boundary (it fires once per instruction file).
 */
export async function onInstructionsLoaded(p: HookPayload, ctx: HookContext): Promise<string> {
  if (p.loadReason !== 'compact') return '';
  writeProjectSession(ctx.config.projectDir, p.sessionId, ctx.now(), ctx.env);
  const b = await ensureBoundary(p, ctx, 'InstructionsLoaded');
  if (!createMarker(markerFile(p.sessionId, b.id, 'injected', ctx.env))) return '';
  return contextOutput('InstructionsLoaded', p.sessionId, b.decisionNames);
}

/** Activity: record a change of the activity state (ledger + `continuity.activity` span). */
export async function onActivity(p: HookPayload, state: ActivityState, ctx: HookContext): Promise<string> {
  const startNs = nowNs();
  const now = ctx.now();
  const ok = await withEvidence(ctx, p.event, async (store) => {
    await store.append({ type: 'activity', sessionId: p.sessionId, state, at: now });
    return true;
  });
  if (ok) writeActivity(p.sessionId, state, ctx.env);
  const span: ExportSpan = {
    name: SPAN_ACTIVITY,
    ids: randomSpanIds(),
    startNs,
    endNs: nowNs(),
    attributes: activityAttributes(p.sessionId, state),
  };
  await exportHookSpans([span], ctx.config, ctx.env, (l) => ctx.warn(`${p.event}: ${l}`));
  return '';
}

/** True when the session id can be stored (the ledger's opaque-id rule). */
export function storableSessionId(id: string): boolean {
  return OPAQUE_ID_PATTERN.test(id);
}
