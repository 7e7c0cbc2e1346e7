/**
 * `continuity hook claude-code` and `continuity hook codex`: the entry points for every hook event of
 * those runtimes (stdin JSON). `bin/continuity.js` sends these exact commands straight to the lean adapter modules, so the write
 * gate never loads commander; this registration serves `--help` and the generic path.
 */
import type { Command } from 'commander';
import { InputError } from '../../decision/problems.js';

/** Registers `continuity hook <runtime>`. */
export function registerHook(program: Command): void {
  program
    .command('hook')
    .description(
      'handle one agent runtime hook event read from stdin (runtime: claude-code, codex); always exits 0',
    )
    .argument('<runtime>', 'the agent runtime: claude-code or codex')
    .action(async (runtime: string) => {
      if (runtime === 'codex') {
        const { runCodexHook } = await import('../../adapters/codex/hook.js');
        process.exitCode = await runCodexHook();
        return;
      }
      if (runtime !== 'claude-code') {
        throw new InputError('hook', [
          { path: '<runtime>', message: `unknown runtime "${runtime}"; expected claude-code or codex` },
        ]);
      }
      const { runClaudeCodeHook } = await import('../../adapters/claude-code/hook.js');
      process.exitCode = await runClaudeCodeHook();
    });
}
