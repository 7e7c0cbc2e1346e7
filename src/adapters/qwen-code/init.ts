/**
 * `continuity init qwen-code`: Claude Code's init in Qwen's dialect: the hooks merged into
 * `.qwen/settings.json` (Qwen Code reads the same `hooks.<Event>[] = { matcher?, hooks: [{ type:
 * "command", command, timeout }] }` shape), `.continuity/` and the task record template.
 * `--remove` takes out exactly what init added.
 */
import { type InitOptions, runInit } from '../claude-code/init.js';
import { QWEN_CODE_DIALECT } from './config.js';

/** Runs init (or `--remove`) for Qwen Code and returns the lines it prints. */
export function runQwenInit(options: Omit<InitOptions, 'dialect'>): string[] {
  return runInit({ ...options, dialect: QWEN_CODE_DIALECT });
}
