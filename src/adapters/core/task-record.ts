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
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import {
  checkDecisionCount,
  type DecisionMap,
  DecisionNameSchema,
  OpaqueIdSchema,
  RevisionSchema,
} from '../../decision/model.js';
import { type InputProblem, problemsFromZod } from '../../decision/problems.js';
import { type DigestKey, digestValue } from '../../digest/digest.js';
import { normalize } from '../../digest/normalize.js';

const TaskDecisionSchema = z.strictObject({
  value: z.json({ error: 'expected a JSON value' }),
  sensitive: z.boolean({ error: 'expected true or false' }).default(false),
  revision: RevisionSchema.default(1),
});

const TaskRecordSchema = z.strictObject({
  $comment: z.string().optional(),
  template: z.boolean({ error: 'expected true or false' }).optional(),
  task: OpaqueIdSchema.optional(),
  decisions: z.record(DecisionNameSchema, TaskDecisionSchema),
});

/** Why a task record could not become a snapshot: a reason code stored as evidence missing. */
export type TaskRecordProblemCode =
  | 'task_record_missing'
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

type Parsed =
  | { ok: true; record: z.infer<typeof TaskRecordSchema> }
  | { ok: false; problem: TaskRecordProblem };

function describe(label: string, problems: InputProblem[]): string {
  return problems
    .slice(0, 3)
    .map((p) => `${label}: ${p.path}: ${p.message}`)
    .join('; ');
}

function parse(path: string, label: string): Parsed {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return {
      ok: false,
      problem: {
        code: code === 'ENOENT' ? 'task_record_missing' : 'task_record_invalid',
        message:
          code === 'ENOENT'
            ? `${label}: not found; run \`continuity init <runtime>\` and fill it in`
            : `${label}: cannot read (${code ?? 'error'})`,
      },
    };
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    return {
      ok: false,
      problem: { code: 'task_record_invalid', message: `${label}: invalid JSON: ${(e as Error).message}` },
    };
  }
  const r = TaskRecordSchema.safeParse(doc);
  if (!r.success) {
    return {
      ok: false,
      problem: { code: 'task_record_invalid', message: describe(label, problemsFromZod(r.error)) },
    };
  }
  const count = checkDecisionCount(r.data.decisions);
  if (count)
    return { ok: false, problem: { code: 'task_record_invalid', message: `${label}: decisions: ${count}` } };
  if (r.data.template) {
    return {
      ok: false,
      problem: {
        code: 'task_record_template',
        message: `${label}: still the template; fill in the decisions and delete the "template" line`,
      },
    };
  }
  return { ok: true, record: r.data };
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
