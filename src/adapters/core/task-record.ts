/**
 * The task record: the decisions of the current task, in a small JSON file in the project
 * (default `.continuity/task.json`), separate from CLAUDE.md (durable conventions stay there).
 *
 * ```json
 * {
 *   "task": "ledger-reconcile",
 *   "decisions": {
 *     "scope":             { "value": { "repository": "acme/payments", "paths": ["services/ledger"] } },
 *     "approval_boundary": { "value": { "requires_human": ["deploy", "schema_migration"] }, "sensitive": true },
 *     "acceptance_test":   { "value": { "command": "npm test -- ledger", "must_pass": true }, "revision": 2 }
 *   }
 * }
 * ```
 *
 * Three to seven decisions, each a JSON `value`, optionally `sensitive` (digested with the keyed
 * HMAC from `CONTINUITY_DIGEST_KEY_FILE`, because a plain hash of a low-entropy value can be
 * guessed) and a `revision` (default 1). `"template": true` marks the file `continuity init` wrote
 * and nobody filled in yet. The values stay in this file: only their digests reach the ledger
 * and the spans, and the values read here are dropped as soon as they are digested.
 */
import type { DecisionMap } from '../../decision/model.js';
import { DECISION_NAME_PATTERN } from '../../decision/names.js';
import { formatPath, type InputProblem } from '../../decision/problems.js';
import { checkDecisionCount, OPAQUE_ID_PATTERN } from '../../decision/rules.js';
import { type DigestKey, digestValue } from '../../digest/digest.js';
import { normalize } from '../../digest/normalize.js';
import { readRegularFile } from './state.js';

/**
 * Deepest nesting of arrays and objects accepted in a decision value (a task record's or a
 * restatement's). A deeper value is refused with a reason, never digested: a decision is a few
 * fields, and recursion over an absurdly deep value would overflow the stack.
 */
export const MAX_VALUE_DEPTH = 64;

/** True when `value` nests arrays or objects more than `max` levels deep (`{}` is one). Iterative. */
export function nestedDeeperThan(value: unknown, max = MAX_VALUE_DEPTH): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  for (let next = stack.pop(); next; next = stack.pop()) {
    const [v, depth] = next;
    if (typeof v !== 'object' || v === null) continue;
    if (depth > max) return true;
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
  return false;
}

/** Most bytes of a task record (a few decisions; anything larger is refused unread). */
export const MAX_TASK_RECORD_BYTES = 8 * 1024 * 1024;

const TASK_RECORD_READ_PROBLEMS: Readonly<Record<string, string>> = {
  not_regular: 'not a regular file: a FIFO, device or socket, or a link to one',
  link: 'a symbolic link loop',
  too_large: `larger than ${MAX_TASK_RECORD_BYTES} bytes`,
  unreadable: 'the system refused the read',
};

/** Why a task record could not become a snapshot: a reason code stored as evidence missing. */
export type TaskRecordProblemCode =
  | 'task_record_missing'
  | 'task_record_unreadable'
  | 'task_record_invalid'
  | 'task_record_template'
  | 'digest_key_missing'
  | 'digest_key_unusable';

/** A task record that could not be used: the reason code and a message naming the file and field. */
export interface TaskRecordProblem {
  code: TaskRecordProblemCode;
  message: string;
}

/** What the pre snapshot needs from the task record: digests, never values. */
export interface TaskDigests {
  decisions: DecisionMap;
  /** Names of the sensitive decisions (digested with the key). */
  sensitive: string[];
}

/** The names and sensitivity of a task record's decisions, without keeping any value. */
export interface TaskOutline {
  names: string[];
  sensitive: string[];
}

/** One decision of a valid task record (defaults applied). */
interface TaskDecision {
  value: unknown;
  sensitive: boolean;
  revision: number;
}

type Parsed =
  | { ok: true; record: { decisions: Record<string, TaskDecision> } }
  | { ok: false; problem: TaskRecordProblem };

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const RECORD_KEYS = new Set(['$comment', 'template', 'task', 'decisions']);
const DECISION_KEYS = new Set(['value', 'sensitive', 'revision']);

/**
 * Validates a parsed task record, collecting every problem with its field path. Written out rather
 * than a zod schema: PreCompact runs in a fresh process per compaction, and loading zod and
 * building its parsers would cost that process about twice a bare Node.js start (bench/gate.bench.js);
 * the ledger still validates every record it stores with its zod schemas.
 */
function validate(
  doc: unknown,
): { decisions: Record<string, TaskDecision>; template: boolean } | InputProblem[] {
  if (!isObject(doc)) return [{ path: '(root)', message: 'expected a JSON object with "decisions"' }];
  const problems: InputProblem[] = [];
  for (const key of Object.keys(doc)) {
    if (!RECORD_KEYS.has(key))
      problems.push({ path: formatPath([key]), message: 'unknown field; remove it' });
  }
  if (doc.$comment !== undefined && typeof doc.$comment !== 'string') {
    problems.push({ path: '$comment', message: 'expected a string' });
  }
  if (doc.template !== undefined && typeof doc.template !== 'boolean') {
    problems.push({ path: 'template', message: 'expected true or false' });
  }
  if (doc.task !== undefined && !(typeof doc.task === 'string' && OPAQUE_ID_PATTERN.test(doc.task))) {
    problems.push({
      path: 'task',
      message:
        'expected an opaque identifier: letters, digits and ._:@#+=/- only, no spaces, not a path, at most 256',
    });
  }
  const decisions: Record<string, TaskDecision> = {};
  if (!isObject(doc.decisions)) {
    problems.push({ path: 'decisions', message: 'expected an object of decision name → {"value": …}' });
    return problems;
  }
  for (const [name, d] of Object.entries(doc.decisions)) {
    const at = (...more: string[]) => formatPath(['decisions', name, ...more]);
    if (!DECISION_NAME_PATTERN.test(name)) {
      problems.push({
        path: at(),
        message: 'invalid key: expected a decision name matching ^[a-z][a-z0-9_]{0,63}$',
      });
      continue;
    }
    if (!isObject(d)) {
      problems.push({ path: at(), message: 'expected an object {"value": …, "sensitive"?, "revision"?}' });
      continue;
    }
    for (const key of Object.keys(d)) {
      if (!DECISION_KEYS.has(key)) problems.push({ path: at(key), message: 'unknown field; remove it' });
    }
    if (!('value' in d) || d.value === undefined)
      problems.push({ path: at('value'), message: 'expected a JSON value' });
    else if (nestedDeeperThan(d.value)) {
      problems.push({ path: at('value'), message: `nested deeper than ${MAX_VALUE_DEPTH} levels` });
    }
    if (d.sensitive !== undefined && typeof d.sensitive !== 'boolean') {
      problems.push({ path: at('sensitive'), message: 'expected true or false' });
    }
    const revision = d.revision;
    if (revision !== undefined && !(Number.isInteger(revision) && (revision as number) >= 1)) {
      problems.push({ path: at('revision'), message: 'expected a revision (integer >= 1)' });
    }
    decisions[name] = {
      value: d.value,
      sensitive: d.sensitive === true,
      revision: typeof revision === 'number' ? revision : 1,
    };
  }
  return problems.length > 0 ? problems : { decisions, template: doc.template === true };
}

function describe(label: string, problems: InputProblem[]): string {
  return problems
    .slice(0, 3)
    .map((p) => `${label}: ${p.path}: ${p.message}`)
    .join('; ');
}

function parse(path: string, label: string): Parsed {
  // A link is followed (the human may keep the record elsewhere), but only a regular file of a
  // bounded size is read: a FIFO or a link to /dev/zero would hold the hook until it is killed.
  const read = readRegularFile(path, MAX_TASK_RECORD_BYTES, true);
  if (!read.ok) {
    const missing = read.problem === 'missing';
    return {
      ok: false,
      problem: {
        code: missing ? 'task_record_missing' : 'task_record_unreadable',
        message: missing
          ? `${label}: not found; run \`continuity init <runtime>\` and fill it in`
          : `${label}: cannot be read as a task record (${TASK_RECORD_READ_PROBLEMS[read.problem]})`,
      },
    };
  }
  const text = read.text;
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    // The parser's own message quotes the text around the error, i.e. a decision value: never
    // repeated. Only the position is.
    const at = /position (\d+)/.exec((e as Error).message)?.[1];
    return {
      ok: false,
      problem: {
        code: 'task_record_invalid',
        message: `${label}: not valid JSON${at ? ` (at character ${at})` : ''}`,
      },
    };
  }
  const r = validate(doc);
  if (Array.isArray(r))
    return { ok: false, problem: { code: 'task_record_invalid', message: describe(label, r) } };
  const count = checkDecisionCount(r.decisions);
  if (count)
    return { ok: false, problem: { code: 'task_record_invalid', message: `${label}: decisions: ${count}` } };
  if (r.template) {
    return {
      ok: false,
      problem: {
        code: 'task_record_template',
        message: `${label}: still the template; fill in the decisions and delete the "template" line`,
      },
    };
  }
  return { ok: true, record: { decisions: r.decisions } };
}

/**
 * Reads the task record and digests its decisions observed at `observedAt`. Sensitive decisions
 * are digested with `key`; without a key they are refused (a plain hash of a sensitive value
 * could be guessed by enumeration). `label` names the file in messages (a project-relative path,
 * never an absolute one).
 */
export function digestTaskRecord(
  path: string,
  label: string,
  observedAt: string,
  loadKey: () => DigestKey | undefined,
): { ok: true; digests: TaskDigests } | { ok: false; problem: TaskRecordProblem } {
  const parsed = parse(path, label);
  if (!parsed.ok) return parsed;
  const decisions: DecisionMap = {};
  const sensitive: string[] = [];
  let key: DigestKey | undefined;
  for (const [name, d] of Object.entries(parsed.record.decisions)) {
    const n = normalize(d.value);
    if (!n.ok) {
      return {
        ok: false,
        problem: {
          code: 'task_record_invalid',
          message: `${label}: decisions.${name}.value: ${n.problem.message} (at ${n.problem.path})`,
        },
      };
    }
    if (d.sensitive) {
      if (!key) {
        try {
          key = loadKey();
        } catch (e) {
          return { ok: false, problem: { code: 'digest_key_unusable', message: (e as Error).message } };
        }
        if (!key) {
          return {
            ok: false,
            problem: {
              code: 'digest_key_missing',
              message: `${label}: decisions.${name} is sensitive but no digest key is configured; set CONTINUITY_DIGEST_KEY_FILE`,
            },
          };
        }
      }
      sensitive.push(name);
    }
    decisions[name] = {
      digest: digestValue(d.value, d.sensitive ? key : undefined),
      revision: d.revision,
      observedAt,
      source: 'task-record',
    };
  }
  return { ok: true, digests: { decisions, sensitive } };
}

/** Reads only the names and sensitivity of the task record's decisions (for messages and observe). */
export function readTaskOutline(
  path: string,
  label: string,
): { ok: true; outline: TaskOutline } | { ok: false; problem: TaskRecordProblem } {
  const parsed = parse(path, label);
  if (!parsed.ok) return parsed;
  const decisions = parsed.record.decisions;
  const names = Object.keys(decisions);
  return { ok: true, outline: { names, sensitive: names.filter((n) => decisions[n]!.sensitive) } };
}

/**
 * The decision names of a task record that is still init's template (`"template": true`), or
 * undefined when it is not (filled in, missing, unreadable or invalid: those have their own
 * problems). Names only: a template's values are placeholders, and values are never returned.
 */
export function templateDecisionNames(path: string): string[] | undefined {
  const read = readRegularFile(path, MAX_TASK_RECORD_BYTES, true);
  if (!read.ok) return undefined;
  let doc: unknown;
  try {
    doc = JSON.parse(read.text);
  } catch {
    return undefined;
  }
  const r = validate(doc);
  return Array.isArray(r) || !r.template ? undefined : Object.keys(r.decisions);
}

/** The task record `continuity init` writes: the article's three decisions, to fill in. */
export function taskRecordTemplate(): string {
  const doc = {
    $comment:
      'Decisions of the current task (3 to 7). Values stay in this file; only digests reach the ledger and spans. ' +
      'Mark low-entropy or private values "sensitive": true (needs CONTINUITY_DIGEST_KEY_FILE). ' +
      'Delete the "template" line when filled in. Format: docs/claude-code.md',
    template: true,
    task: 'my-task',
    decisions: {
      scope: { value: { repository: 'org/repo', paths: ['src/area'] } },
      approval_boundary: { value: { requires_human: ['deploy', 'schema_migration'] } },
      acceptance_test: { value: { command: 'npm test', must_pass: true } },
    },
  };
  return `${JSON.stringify(doc, null, 2)}\n`;
}
