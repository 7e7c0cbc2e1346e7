/**
 * `continuity hook qwen-code`: Qwen Code's hook events, through the Claude Code adapter's one
 * path (src/adapters/claude-code/hook.ts) in Qwen's dialect. Lean: the gate's fast path loads
 * nothing more than Claude Code's does.
 */
import { runClaudeCodeHook } from '../claude-code/hook.js';
import { type HookIo, processIo } from '../core/process.js';
import { QWEN_CODE_DIALECT } from './config.js';

/** Runs one Qwen Code hook invocation. Returns the exit code: always 0. */
export function runQwenCodeHook(io: HookIo = processIo()): Promise<number> {
  return runClaudeCodeHook(io, QWEN_CODE_DIALECT);
}
