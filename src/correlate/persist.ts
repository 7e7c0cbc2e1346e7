/**
 * The JSON-safe form of the correlator's pending state, so a service can persist pending
 * boundaries across a restart. Read back with a schema: whatever does not validate is
 * unrecoverable and resolves to `unverified`, never to a match.
 */
import { z } from 'zod';
import { ALL_REASONS, CONTINUITY_STATES, type ContinuityReason } from '../classify/states.js';
import {
  ACTIVITY_STATES,
  ApprovalSchema,
  OPAQUE_ID_PATTERN,
  OpaqueIdSchema,
  SnapshotSchema,
} from '../decision/model.js';
import { ACTIVITY_STATE_UNKNOWN, TRIGGERS } from '../otel/semconv.js';

import { PENDING_STATE_VERSION } from './persist-version.js';

export { PENDING_STATE_VERSION };

const SpanRefSchema = z.strictObject({
  traceId: z.string().regex(/^[0-9a-f]{32}$/),
  spanId: z.string().regex(/^[0-9a-f]{16}$/),
});
const NsSchema = z.string().regex(/^[0-9]{1,20}$/);
const Ms = z.number().finite().nonnegative();
const ReasonCode = z.string().regex(/^[a-z][a-z0-9_]{0,63}$/);
const Runtime = z.string().regex(/^[a-z0-9][a-z0-9._-]{0,63}$/);

/** A pending (or re-observable) boundary. */
export const PersistedBoundarySchema = z.strictObject({
  sessionId: OpaqueIdSchema,
  boundaryId: OpaqueIdSchema.nullable(),
  runtime: Runtime.nullable(),
  trigger: z.enum(TRIGGERS).nullable(),
  pre: SnapshotSchema.nullable(),
  evidenceMissing: ReasonCode.nullable(),
  preTimeNs: NsSchema.nullable(),
  preSpan: SpanRefSchema.nullable(),
  approvals: z.array(ApprovalSchema),
  openedAtMs: Ms,
  /** Only on re-observable boundaries: until when a late or repeated post re-classifies it. */
  reobserveUntilMs: Ms.optional(),
});
export type PersistedBoundary = z.infer<typeof PersistedBoundarySchema>;

/** A post held while waiting for its pre. */
export const PersistedHeldPostSchema = z.strictObject({
  sessionId: OpaqueIdSchema,
  boundaryId: OpaqueIdSchema.nullable(),
  runtime: Runtime.nullable(),
  trigger: z.enum(TRIGGERS).nullable(),
  snapshot: SnapshotSchema.nullable(),
  evidenceMissing: ReasonCode.nullable(),
  compactedAt: z.string().nullable(),
  timeNs: NsSchema.nullable(),
  span: SpanRefSchema.nullable(),
  heldAtMs: Ms,
});
export type PersistedHeldPost = z.infer<typeof PersistedHeldPostSchema>;

/** A session's latest continuity state and activity, for the sessions summary. */
export const PersistedSessionSchema = z.strictObject({
  sessionId: OpaqueIdSchema,
  activity: z.enum([...ACTIVITY_STATES, ACTIVITY_STATE_UNKNOWN]),
  touchedAtMs: Ms,
  latest: z
    .strictObject({
      boundaryId: OpaqueIdSchema.nullable(),
      state: z.enum(CONTINUITY_STATES),
      reason: z.custom<ContinuityReason>(
        (v) => typeof v === 'string' && (ALL_REASONS as readonly string[]).includes(v),
        { error: 'expected a continuity reason code' },
      ),
      primaryDecision: z.string().nullable(),
      runtime: Runtime.nullable(),
      postSpanId: z.string().nullable(),
    })
    .nullable(),
});
export type PersistedSession = z.infer<typeof PersistedSessionSchema>;

/** What {@link Correlator.exportPending} returns: plain JSON (no bigint, no Map). */
export interface PendingState {
  version: typeof PENDING_STATE_VERSION;
  boundaries: PersistedBoundary[];
  heldPosts: PersistedHeldPost[];
  reobservable: PersistedBoundary[];
  sessions: PersistedSession[];
}

/** One entry of a {@link PendingState}: `k` names its list, `v` is the item. */
export type PendingEntry =
  | { k: 'boundaries'; v: PersistedBoundary }
  | { k: 'heldPosts'; v: PersistedHeldPost }
  | { k: 'reobservable'; v: PersistedBoundary }
  | { k: 'sessions'; v: PersistedSession };

/** One entry of an imported state after validation: its data, or the session id it still has. */
export type CheckedEntry<T> =
  | { ok: true; value: T; sessionId?: never }
  | { ok: false; value?: never; sessionId?: string };

/**
 * An imported pending state, validated entry by entry at the edge ({@link readPendingState}), for
 * {@link Correlator.importPending}: whatever did not validate is marked, never dropped silently.
 */
export interface CheckedPendingState {
  boundaries: CheckedEntry<PersistedBoundary>[];
  heldPosts: CheckedEntry<PersistedHeldPost>[];
  reobservable: CheckedEntry<PersistedBoundary>[];
  sessions: CheckedEntry<PersistedSession>[];
}

/** The session id of an entry that failed validation, when it still has a readable one. */
function salvageSessionId(entry: unknown): string | undefined {
  if (typeof entry !== 'object' || entry === null) return undefined;
  const id = (entry as { sessionId?: unknown }).sessionId;
  return typeof id === 'string' && OPAQUE_ID_PATTERN.test(id) ? id : undefined;
}

function checkAll<T>(list: unknown, schema: z.ZodType<T>): CheckedEntry<T>[] {
  return (Array.isArray(list) ? list : []).map((raw): CheckedEntry<T> => {
    const p = schema.safeParse(raw);
    if (p.success) return { ok: true, value: p.data };
    const sessionId = salvageSessionId(raw);
    return sessionId === undefined ? { ok: false } : { ok: false, sessionId };
  });
}

/**
 * Reads a pending state written by {@link Correlator.exportPending} (parsed JSON of unknown
 * shape): `undefined` when it is not one of this version, else every entry checked against its
 * schema. The schemas (zod) load only here, so a correlator that never imports never loads them.
 */
export function readPendingState(data: unknown): CheckedPendingState | undefined {
  if (typeof data !== 'object' || data === null) return undefined;
  const d = data as Record<string, unknown>;
  if (d.version !== PENDING_STATE_VERSION) return undefined;
  return {
    boundaries: checkAll(d.boundaries, PersistedBoundarySchema),
    heldPosts: checkAll(d.heldPosts, PersistedHeldPostSchema),
    reobservable: checkAll(d.reobservable, PersistedBoundarySchema),
    sessions: checkAll(d.sessions, PersistedSessionSchema),
  };
}
