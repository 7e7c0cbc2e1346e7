/**
 * Reading CLI input files (or stdin) as JSON, with errors that name the source and the place.
 *
 * A parse error never quotes the input: V8's own messages can (`Unexpected token 's',
 * ..."{"scope": secretvalu"... is not valid JSON`), and the input is a decisions document whose
 * values must not reach a terminal or a CI log. The message names the file, the line and column,
 * and what was expected there instead.
 */
import { readFileSync } from 'node:fs';
import { InputError } from '../decision/problems.js';
import { describeCode } from '../ledger/files.js';

/** Where JSON text stops being valid, and what was expected there. */
export interface JsonSyntaxError {
  /** Offset (UTF-16 code units) of the first character that cannot be where it is. */
  offset: number;
  /** What was expected there, in words; never the text itself. */
  expected: string;
}

const STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const LITERAL = /true|false|null/y;
const WHITESPACE = /[ \t\n\r]*/y;

/**
 * Finds the first syntax error of `text` (RFC 8259 JSON), or undefined when it is valid. Runs
 * only after `JSON.parse` has refused the text, to say where: a loop over an explicit stack, so
 * deep nesting cannot overflow the call stack.
 */
export function findJsonSyntaxError(text: string): JsonSyntaxError | undefined {
  let i = 0;
  const stack: Array<'{' | '['> = [];
  const skip = () => {
    WHITESPACE.lastIndex = i;
    WHITESPACE.exec(text);
    i = WHITESPACE.lastIndex;
  };
  const token = (re: RegExp): boolean => {
    re.lastIndex = i;
    if (!re.test(text)) return false;
    i = re.lastIndex;
    return true;
  };
  type State = 'value' | 'valueOrEnd' | 'key' | 'keyOrEnd' | 'after';
  let state: State = 'value';
  for (;;) {
    skip();
    const c = text[i];
    if (c === undefined) {
      if (state === 'after' && stack.length === 0) return undefined;
      return { offset: i, expected: 'more JSON (the input ends too early)' };
    }
    if (state === 'valueOrEnd' && c === ']') {
      stack.pop();
      i++;
      state = 'after';
      continue;
    }
    if (state === 'keyOrEnd' && c === '}') {
      stack.pop();
      i++;
      state = 'after';
      continue;
    }
    if (state === 'value' || state === 'valueOrEnd') {
      if (c === '{' || c === '[') {
        stack.push(c);
        i++;
        state = c === '{' ? 'keyOrEnd' : 'valueOrEnd';
        continue;
      }
      const ok = c === '"' ? token(STRING) : /[tfn]/.test(c) ? token(LITERAL) : token(NUMBER);
      if (!ok) {
        return {
          offset: i,
          expected:
            c === '"'
              ? 'a string closed on the same line, with valid escapes'
              : 'a value (an object, array, string in double quotes, number, true, false or null)',
        };
      }
      state = 'after';
      continue;
    }
    if (state === 'key' || state === 'keyOrEnd') {
      if (c !== '"' || !token(STRING)) {
        return { offset: i, expected: 'a property name in double quotes' };
      }
      skip();
      if (text[i] !== ':') return { offset: i, expected: "':' after the property name" };
      i++;
      state = 'value';
      continue;
    }
    // After a value: a separator, the end of the enclosing object or array, or the end of input.
    const top = stack.at(-1);
    if (top === undefined) return { offset: i, expected: 'the end of the input after the JSON value' };
    if (c === ',') {
      i++;
      state = top === '{' ? 'key' : 'value';
      continue;
    }
    if ((c === '}' && top === '{') || (c === ']' && top === '[')) {
      stack.pop();
      i++;
      continue;
    }
    return { offset: i, expected: top === '{' ? "',' or '}'" : "',' or ']'" };
  }
}

/** The 1-based line and column of `offset` in `text`. */
export function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let start = 0;
  for (let nl = text.indexOf('\n'); nl !== -1 && nl < offset; nl = text.indexOf('\n', nl + 1)) {
    line++;
    start = nl + 1;
  }
  return { line, column: offset - start + 1 };
}

/**
 * Parses `text` as JSON. Throws {@link InputError} naming `source` and the line and column of
 * the first syntax error, never quoting the text.
 */
export function parseJsonText(text: string, source: string): unknown {
  // Editors on some systems save a byte-order mark; JSON.parse would reject it as a token.
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  try {
    return JSON.parse(body);
  } catch {
    const at = findJsonSyntaxError(body);
    const where = at ? lineAndColumn(body, at.offset) : undefined;
    throw new InputError(source, [
      {
        path: '(root)',
        message: where
          ? `invalid JSON at line ${where.line}, column ${where.column}: expected ${at!.expected}`
          : 'invalid JSON',
      },
    ]);
  }
}

/** Reads `file` (or stdin for `-`) and parses it as JSON. Throws {@link InputError} naming the file. */
export function readJsonInput(file: string): unknown {
  const source = file === '-' ? '(stdin)' : file;
  let text: string;
  try {
    text = readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new InputError(source, [
      { path: '(file)', message: `cannot read: ${describeCode(code)}${code ? ` (${code})` : ''}` },
    ]);
  }
  return parseJsonText(text, source);
}
