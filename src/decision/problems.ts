/**
 * Problems with input, as values a person can act on: the field path and what was expected.
 */
import type { z } from 'zod';

/** A problem with one field of an input. */
export interface InputProblem {
  /** Field path such as `cases[3].post.decisions.scope.observedAt`, or `(root)`. */
  path: string;
  message: string;
}

/** Formats a path of keys and indexes the way a person writes it: `a.b[3].c`. */
export function formatPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else if (typeof part === 'string' && /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(part))
      out += out ? `.${part}` : part;
    else out += `[${JSON.stringify(String(part))}]`;
  }
  return out || '(root)';
}

/** Turns a zod error into problems, one per issue, with full field paths. */
export function problemsFromZod(error: z.ZodError, prefix: ReadonlyArray<PropertyKey> = []): InputProblem[] {
  return error.issues.flatMap((issue): InputProblem | InputProblem[] => {
    const path = [...prefix, ...issue.path];
    // zod reports unknown keys on the object; name each key itself so the fix is obvious.
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({
        path: formatPath([...path, key]),
        message: 'unknown field; remove it',
      }));
    }
    // zod says only "Invalid key in record"; the key schema's own message says what was expected.
    if (issue.code === 'invalid_key') {
      const inner = issue.issues[0]?.message;
      return { path: formatPath(path), message: inner ? `invalid key: ${inner}` : issue.message };
    }
    return { path: formatPath(path), message: issue.message };
  });
}

/** An input that failed validation: names the file (or stream) and every problem found. */
export class InputError extends Error {
  readonly source: string;
  readonly problems: InputProblem[];
  constructor(source: string, problems: InputProblem[]) {
    const first = problems.slice(0, 5).map((p) => `${source}: ${p.path}: ${p.message}`);
    const more = problems.length > 5 ? [`${source}: … and ${problems.length - 5} more problems`] : [];
    super([...first, ...more].join('\n'));
    this.name = 'InputError';
    this.source = source;
    this.problems = problems;
  }
}
