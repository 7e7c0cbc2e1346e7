/**
 * Reading CLI input files (or stdin) as JSON, with errors that name the source.
 */
import { readFileSync } from 'node:fs';
import { InputError } from '../decision/problems.js';

/** Reads `file` (or stdin for `-`) and parses it as JSON. Throws {@link InputError} naming the file. */
export function readJsonInput(file: string): unknown {
  const source = file === '-' ? '(stdin)' : file;
  let text: string;
  try {
    text = readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? 'error';
    throw new InputError(source, [{ path: '(file)', message: `cannot read (${code})` }]);
  }
  // Editors on some systems save a byte-order mark; JSON.parse would reject it as a token.
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new InputError(source, [{ path: '(root)', message: `invalid JSON: ${(e as Error).message}` }]);
  }
}
