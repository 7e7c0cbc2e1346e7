/**
 * `continuity hook <runtime>` (claude-code, codex, qwen-code): the entry points for every hook event of
 * those runtimes (stdin JSON). `bin/continuity.js` sends these exact commands straight to the lean adapter modules, so the write
 * gate never loads commander; this registration serves `--help` and the generic path.
 */
import type { Command } from 'commander';
import { HOOK_RUNTIMES, runHook } from '../../adapters/hook.js';
import { InputError } from '../../decision/problems.js';

/** Registers `continuity hook <runtime>`. */
export function registerHook(program: Command): void {
  program
    .command('hook')
    .description(
      `handle one agent runtime hook event read from stdin (runtime: ${Object.keys(HOOK_RUNTIMES).join(', ')}); always exits 0`,
    )
    .argument('<runtime>', `the agent runtime: ${Object.keys(HOOK_RUNTIMES).join(', ')}`)
    .action(async (runtime: string) => {
      const code = await runHook(runtime);
      if (code === undefined) {
        throw new InputError('hook', [
          {
            path: '<runtime>',
            message: `unknown runtime "${runtime}"; expected ${Object.keys(HOOK_RUNTIMES).join(', ')}`,
          },
        ]);
      }
      process.exitCode = code;
    });
}
