/**
 * Restatement: the agent's restated decisions → post snapshot → classification. The restatement
 * (`continuity observe`, or an in-process restate tool) is turned into the post snapshot's
 * digests; the values are digested as soon as they are read and never kept.
 *
 * Input: a JSON object of decision name → value, or name → `{ "value": …, "observedAt"?: RFC 3339,
 * "revision"?: integer, "source"?: id }` (the same convention as `continuity snapshot`). An object
 * is read as the wrapper form when it has a `value` key and no keys beyond those four.
 */
import {
  type DecisionMap,
  NORMALIZER_VERSION,
  OPAQUE_ID_EXPECTED,
  OPAQUE_ID_PATTERN,
  type Snapshot,
} from '../../decision/model.js';
import { DECISION_NAME_PATTERN } from '../../decision/names.js';
import { formatPath, InputError, type InputProblem } from '../../decision/problems.js';
import { parseRfc3339Utc } from '../../decision/time.js';
import { type DigestKey, digestValue } from '../../digest/digest.js';
import { loadDigestKey } from '../../digest/key-file.js';
import { normalize } from '../../digest/normalize.js';
import { approvalSpan, compactionSpan } from '../../export/ledger-spans.js';
import { type ExportSpan, nowNs } from '../../export/spans.js';
import type { Provenance } from '../../ledger/types.js';
import { ATTR_RESTATEMENT_PROVENANCE } from '../../otel/semconv.js';
import { type AdapterConfig, policyVerdict } from './config.js';
import {
  type BoundaryEvidence,
  classifyEvidence,
  gateBoundaryOf,
  openEvidence,
  storeGateBoundary,
} from './evidence.js';
import { exportAdapterSpans } from './export.js';
import { boundaryView, nextAction, type Voice } from './messages.js';
import { restatementProvenance } from './provenance.js';
import { isRecord, ledgerIdentity, type StateDir } from './state.js';
import { MAX_VALUE_DEPTH, nestedDeeperThan, readTaskOutline } from './task-record.js';

/** The source recorded on restated decisions unless the input names one. */
export const RESTATEMENT_SOURCE = 'agent-restatement';
/** Largest clock skew accepted for an `observedAt` in the future. */
const MAX_FUTURE_SKEW_MS = 5 * 60 * 1000;
/** More names than this is not a decision invariant. */
const MAX_RESTATED = 64;
const WRAPPER_KEYS = new Set(['value', 'observedAt', 'revision', 'source']);

/** What digesting a restatement needs besides the input. */
export interface RestatementContext {
  /** The observation time (now), RFC 3339 UTC. */
  now: string;
  /** The pre snapshot's decisions, to reuse revisions and pick the digest scheme. */
  pre: DecisionMap | null;
  /** Names the task record marks sensitive. */
  sensitive: readonly string[];
  /** Loads the digest key (only called when a decision needs it). */
  loadKey: () => DigestKey | undefined;
}

function isWrapper(v: unknown): v is Record<string, unknown> {
  return isRecord(v) && 'value' in v && Object.keys(v).every((k) => WRAPPER_KEYS.has(k));
}

/**
 * Digests a restatement into a post snapshot's decision map. Throws {@link InputError} naming
 * `source` and the field at fault; throws a plain Error when a sensitive decision needs a digest
 * key that is not configured (never falls back to a plain hash of a sensitive value).
 */
export function digestRestatement(doc: unknown, source: string, ctx: RestatementContext): DecisionMap {
  if (!isRecord(doc)) {
    throw new InputError(source, [
      { path: '(root)', message: 'expected a JSON object of decision name → value' },
    ]);
  }
  const names = Object.keys(doc);
  if (names.length > MAX_RESTATED) {
    throw new InputError(source, [{ path: '(root)', message: `expected at most ${MAX_RESTATED} decisions` }]);
  }
  const nowNs = parseRfc3339Utc(ctx.now)!;
  const problems: InputProblem[] = [];
  const out: DecisionMap = {};
  let key: DigestKey | undefined;
  let keyLoaded = false;
  for (const name of names) {
    if (!DECISION_NAME_PATTERN.test(name)) {
      problems.push({
        path: formatPath([name]),
        message: 'expected a decision name matching ^[a-z][a-z0-9_]{0,63}$',
      });
      continue;
    }
    const raw = doc[name];
    const w = isWrapper(raw) ? raw : { value: raw };
    let observedAt = ctx.now;
    if (w.observedAt !== undefined) {
      const ns = typeof w.observedAt === 'string' ? parseRfc3339Utc(w.observedAt) : undefined;
      if (ns === undefined) {
        problems.push({
          path: formatPath([name, 'observedAt']),
          message: 'expected RFC 3339 UTC time, e.g. 2026-11-30T12:00:00Z',
        });
        continue;
      }
      if (ns > nowNs + BigInt(MAX_FUTURE_SKEW_MS) * 1_000_000n) {
        problems.push({
          path: formatPath([name, 'observedAt']),
          message: 'is in the future; leave it out to mean now',
        });
        continue;
      }
      observedAt = w.observedAt as string;
    }
    let src = RESTATEMENT_SOURCE;
    if (w.source !== undefined) {
      if (typeof w.source !== 'string' || !OPAQUE_ID_PATTERN.test(w.source)) {
        problems.push({ path: formatPath([name, 'source']), message: 'expected an opaque identifier' });
        continue;
      }
      src = w.source;
    }
    if (w.revision !== undefined && !(Number.isInteger(w.revision) && (w.revision as number) >= 1)) {
      problems.push({ path: formatPath([name, 'revision']), message: 'expected a revision (integer >= 1)' });
      continue;
    }
    if (nestedDeeperThan(w.value)) {
      problems.push({
        path: formatPath([name, 'value']),
        message: `nested deeper than ${MAX_VALUE_DEPTH} levels`,
      });
      continue;
    }
    const n = normalize(w.value);
    if (!n.ok) {
      problems.push({
        path: formatPath([name, 'value']),
        message: `${n.problem.message} (at ${n.problem.path})`,
      });
      continue;
    }
    const before = ctx.pre?.[name];
    const keyed = before ? before.digest.startsWith('hmac-sha256:') : ctx.sensitive.includes(name);
    if (keyed && !keyLoaded) {
      key = ctx.loadKey();
      keyLoaded = true;
      if (!key) {
        throw new Error(
          `decision "${name}" is sensitive and needs the digest key: set CONTINUITY_DIGEST_KEY_FILE where continuity observe runs`,
        );
      }
    }
    const digest = digestValue(w.value, keyed ? key : undefined);
    const revision =
      (w.revision as number | undefined) ??
      (before ? (before.digest === digest ? before.revision : before.revision + 1) : 1);
    out[name] = { digest, revision, observedAt, source: src };
  }
  if (problems.length > 0) throw new InputError(source, problems);
  return out;
}

// ── Recording a restatement ───────────────────────────────────────────────────────────────────
/** A session id and where it came from: `(option)` for `--session`, else its source's name. */
export interface SessionSource {
  id: string;
  from: string;
}

/**
 * The session `continuity observe` restates for: `--session` when given (even empty), else the
 * runtime's `fallback` (an environment variable, the project's recorded session). A missing id
 * and an invalid one are told apart, the invalid one never quoted. `idIsIn` says where the agent
 * finds the id to pass (what the runtime shows after compaction). Throws {@link InputError}.
 */
export function restatementSession(
  given: string | undefined,
  fallback: () => SessionSource | undefined,
  idIsIn = 'the context added after compaction',
): string {
  const found = given !== undefined ? { id: given, from: '(option)' } : fallback();
  if (!found) {
    throw new InputError('--session', [
      {
        path: '(option)',
        message: `no session given and none recorded for this project; pass --session ID (the id is in ${idIsIn})`,
      },
    ]);
  }
  if (!OPAQUE_ID_PATTERN.test(found.id)) {
    throw new InputError('--session', [{ path: found.from, message: OPAQUE_ID_EXPECTED }]);
  }
  return found.id;
}

/** What recording a restatement needs. */
export interface RestateOptions {
  config: AdapterConfig;
  /** The runtime adapter's state directory (its gate cache is updated). */
  state: StateDir;
  sessionId: string;
  /** The restated decisions as parsed JSON. */
  decisions: Record<string, unknown>;
  /** Where the decisions came from, for error messages (`(stdin)`, a file name, `--decision`). */
  source: string;
  /** How messages name the task record (project-relative). */
  label: string;
  /** A ledger other than the environment's (`--ledger`). */
  ledgerPath?: string;
  voice: Voice;
  /** The clock, RFC 3339 UTC. */
  now: string;
  warn: (line: string) => void;
}

/** What a restatement found. */
export interface RestateResult {
  sessionId: string;
  boundaryId: string | null;
  state: string | null;
  action: string | null;
  reason: string | null;
  primaryDecision: string | null;
  decisions: Record<string, { verdict: string; reason: string }>;
  /** What the gate does with consequential tools now: `allowed`, `ask` or `blocked`. */
  writes: 'allowed' | 'ask' | 'blocked';
  /**
   * Where this restatement came from (./provenance.ts): `record` when the agent read the task
   * record or the ledger in this boundary before restating; null when nothing was recorded.
   */
  provenance: Provenance | null;
  /** The next action in words. */
  next: string;
}

/**
 * `continuity.approval` spans for the approvals recorded since the boundary's pre snapshot,
 * sent before the post span so a span processor (e.g. `continuity serve`) sees the same approvals
 * the ledger holds. Ids are derived from the approval's ledger seq, exactly as
 * `continuity approve` derives them: re-sending one repeats the same span, which a backend can
 * de-duplicate. (`continuity approve` exports only where an endpoint is configured, which a
 * human's terminal usually lacks, while the hooks export to a local `continuity serve` by default.)
 */
function approvalSpans(ev: BoundaryEvidence): ExportSpan[] {
  const preSeq = ev.seqs.pre ?? 0;
  const out: ExportSpan[] = [];
  ev.approvals.forEach((a, i) => {
    const seq = ev.seqs.approvals[i] ?? 0;
    if (seq > preSeq) out.push(approvalSpan(ev.sessionId, a, seq, ev.boundaryId));
  });
  return out;
}

/**
 * The agent restated its decisions: digest them (values dropped at once), append the post
 * snapshot to the session's latest boundary, classify, update the gate cache, export the post
 * span. Throws {@link InputError} for bad input (nothing written).
 */
export async function recordRestatement(o: RestateOptions): Promise<RestateResult> {
  const { config, sessionId, now } = o;
  const store = openEvidence(config, o.ledgerPath);
  try {
    const before = store.latest(sessionId);
    if (!before) {
      return {
        sessionId,
        boundaryId: null,
        state: null,
        action: null,
        reason: null,
        primaryDecision: null,
        decisions: {},
        writes: 'allowed',
        provenance: null,
        next: `No compaction is recorded for session ${sessionId}; there is nothing to restate. Continue.`,
      };
    }
    const outline = readTaskOutline(config.taskRecordPath, o.label);
    const decisions = digestRestatement(o.decisions, o.source, {
      now,
      pre: before.pre?.decisions ?? null,
      sensitive: outline.ok ? outline.outline.sensitive : [],
      loadKey: () => loadDigestKey({ env: config.env.vars }),
    });
    const startNs = nowNs();
    const trigger = before.trigger;
    const provenance = restatementProvenance(o.state, sessionId, before.boundaryId);
    await store.append({
      type: 'snapshot',
      phase: 'post',
      sessionId,
      boundaryId: before.boundaryId,
      runtime: config.runtime,
      ...(trigger ? { trigger } : {}),
      capturedAt: now,
      normalizerVersion: NORMALIZER_VERSION,
      decisions,
      provenance,
    });
    // The ledger's identity and size before the read (see ./evidence.ts, ledgerRederive).
    const ledgerId = ledgerIdentity(store.path, sessionId);
    const ev = store.latest(sessionId) ?? before;
    const c = classifyEvidence(ev);
    await store.receipt(ev, c, Date.parse(now));
    const gb = gateBoundaryOf(ev, c, outline.ok ? outline.outline.names : []);
    if (ledgerId) gb.ledgerId = ledgerId;
    // The gate acts only on what it reads from its own ledger; a classification against another
    // one (`--ledger`) is printed, never cached for it.
    if (store.path === config.env.ledgerPath) {
      await storeGateBoundary(o.state, sessionId, gb, now).catch((e: Error) =>
        o.warn(`gate cache: ${e.message.split('\n')[0]}`),
      );
    } else {
      o.warn('--ledger names another ledger than the configured one: the gate is not updated');
    }

    const post: Snapshot = { sessionId, capturedAt: now, normalizerVersion: NORMALIZER_VERSION, decisions };
    const report = ev.boundary;
    // Same trace as the pre span (derived from the boundary), linked to it; a fresh span per restatement.
    const postSpan = compactionSpan(
      'post',
      post,
      {
        boundaryId: before.boundaryId,
        runtime: config.runtime,
        ...(trigger ? { trigger } : {}),
        ...(ev.compactedAt ? { compactedAt: ev.compactedAt } : {}),
        ...(report?.tokensBefore !== undefined ? { tokensBefore: report.tokensBefore } : {}),
        ...(report?.tokensAfter !== undefined ? { tokensAfter: report.tokensAfter } : {}),
      },
      { startNs, endNs: nowNs() },
    );
    postSpan.attributes[ATTR_RESTATEMENT_PROVENANCE] = provenance;
    await exportAdapterSpans([...approvalSpans(ev), postSpan], config, o.warn);
    const verdict = policyVerdict(config.gate.policy, c.state, c.reason);
    return {
      sessionId,
      boundaryId: before.boundaryId,
      state: c.state,
      action: c.action,
      reason: c.reason,
      primaryDecision: c.primaryDecision,
      decisions: Object.fromEntries(
        Object.entries(c.decisions).map(([n, d]) => [n, { verdict: d.verdict, reason: d.reason }]),
      ),
      writes: verdict === 'allow' ? 'allowed' : verdict === 'ask' ? 'ask' : 'blocked',
      provenance,
      next: nextAction(boundaryView(sessionId, gb), o.voice),
    };
  } finally {
    await store.close().catch(() => {});
  }
}

/** The text a restatement prints. */
export function renderRestatement(r: RestateResult): string {
  if (r.state === null) return `continuity: ${r.next}\n`;
  const head = `continuity: ${r.state} (${r.reason}) for session ${r.sessionId}, boundary ${r.boundaryId}; writes ${r.writes}.`;
  return `${head}\n${r.next}\n`;
}
