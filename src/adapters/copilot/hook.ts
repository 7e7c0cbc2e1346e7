/**
 * `continuity hook copilot`: Copilot CLI's hook events, through the Claude Code adapter's one
 * path (src/adapters/claude-code/hook.ts) in Copilot's dialect.
 */
import { runClaudeCodeHook } from '../claude-code/hook.js';
import { type HookIo, processIo } from '../core/process.js';
import { COPILOT_DIALECT } from './config.js';

/** Runs one Copilot CLI hook invocation. Returns the exit code: always 0. */
export function runCopilotHook(io: HookIo = processIo()): Promise<number> {
  return runClaudeCodeHook(io, COPILOT_DIALECT);
}
