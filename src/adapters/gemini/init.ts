/**
 * `continuity init gemini`: Claude Code's init in Gemini's dialect: the hooks merged into
 * `.gemini/settings.json` (Gemini CLI reads the same `hooks.<Event>[] = { matcher?, hooks: [{ type:
 * "command", command, timeout }] }` shape), `.continuity/` and the task record template.
 * `--remove` takes out exactly what init added.
 */
import { type InitOptions, runInit } from '../claude-code/init.js';
import { GEMINI_DIALECT } from './config.js';

/** Runs init (or `--remove`) for Gemini CLI and returns the lines it prints. */
export function runGeminiInit(options: Omit<InitOptions, 'dialect'>): string[] {
  return runInit({ ...options, dialect: GEMINI_DIALECT });
}
