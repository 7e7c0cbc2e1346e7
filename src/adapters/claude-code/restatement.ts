/**
 * The agent's restatement of its decisions after compaction (`continuity observe`), turned into
 * the post snapshot's digests. The values are digested as soon as they are read and never kept.
 *
 * Input: a JSON object of decision name → value, or name → `{ "value": …, "observedAt"?: RFC 3339,
 * "revision"?: integer, "source"?: id }` (the same convention as `continuity snapshot`). An object
 * is read as the wrapper form when it has a `value` key and no keys beyond those four.
 */
import { type DecisionMap, OPAQUE_ID_PATTERN } from '../../decision/model.js';
import { DECISION_NAME_PATTERN } from '../../decision/names.js';
import { formatPath, InputError, type InputProblem } from '../../decision/problems.js';
import { parseRfc3339Utc } from '../../decision/time.js';
import { type DigestKey, digestValue } from '../../digest/digest.js';
import { normalize } from '../../digest/normalize.js';
import { isRecord } from './state.js';

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
