/**
 * `continuity hook gemini`: Gemini CLI's hook events, through the Claude Code adapter's one path
 * (src/adapters/claude-code/hook.ts) in Gemini's dialect.
 */
import { runClaudeCodeHook } from '../claude-code/hook.js';
import { type HookIo, processIo } from '../core/process.js';
import { GEMINI_DIALECT } from './config.js';

/** Runs one Gemini CLI hook invocation. Returns the exit code: always 0. */
export function runGeminiHook(io: HookIo = processIo()): Promise<number> {
  return runClaudeCodeHook(io, GEMINI_DIALECT);
}
