/**
 * `continuity hook claude-code`: the entry point for every Claude Code hook event (stdin JSON).
 * `bin/continuity.js` sends this exact command straight to the lean adapter module, so the write
 * gate never loads commander; this registration serves `--help` and the generic path.
 */
import type { Command } from 'commander';
import { InputError } from '../../decision/problems.js';

/** Registers `continuity hook <runtime>`. */
export function registerHook(program: Command): void {
  program
    .command('hook')
    .description('handle one agent runtime hook event read from stdin (runtime: claude-code); always exits 0')
    .argument('<runtime>', 'the agent runtime: claude-code')
    .action(async (runtime: string) => {
      if (runtime !== 'claude-code') {
        throw new InputError('hook', [
          { path: '<runtime>', message: `unknown runtime "${runtime}"; expected claude-code` },
        ]);
      }
      const { runClaudeCodeHook } = await import('../../adapters/claude-code/hook.js');
      process.exitCode = await runClaudeCodeHook();
    });
}
