/**
 * `continuity init claude-code`: merges the hooks into `.claude/settings.json` and creates the
 * task record template. Prints what it did.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { InputError } from '../../decision/problems.js';

/** Registers `continuity init <runtime>`. */
export function registerInit(program: Command): void {
  program
    .command('init')
    .description('set up continuity for an agent runtime in a project (runtime: claude-code)')
    .argument('<runtime>', 'the agent runtime: claude-code')
    .option('--project <dir>', 'project directory (default: the working directory)')
    .option('--settings <file>', 'settings file relative to the project (default: .claude/settings.json)')
    .option(
      '--command <launcher>',
      'how hooks start continuity, e.g. "node /path/bin/continuity.js"; rewrites the command of our hooks when it differs (default: continuity when on PATH, else node <this checkout>/bin/continuity.js)',
    )
    .option(
      '--gate-tools <matcher>',
      'tools the write gate checks (default: Edit|Write|MultiEdit|NotebookEdit|Bash|PowerShell)',
    )
    .option('--remove', "take out exactly the hooks and rules init added; keep everyone else's")
    .action(
      async (
        runtime: string,
        opts: { project?: string; settings?: string; command?: string; gateTools?: string; remove?: boolean },
      ) => {
        if (runtime !== 'claude-code') {
          throw new InputError('init', [
            { path: '<runtime>', message: `unknown runtime "${runtime}"; expected claude-code` },
          ]);
        }
        const { runInit } = await import('../../adapters/claude-code/init.js');
        const lines = runInit({
          project: resolve(opts.project ?? process.cwd()),
          ...(opts.settings !== undefined && { settings: opts.settings }),
          ...(opts.command !== undefined && { command: opts.command }),
          ...(opts.gateTools !== undefined && { gateMatcher: opts.gateTools }),
          ...(opts.remove && { remove: true }),
        });
        process.stdout.write(`${lines.join('\n')}\n`);
      },
    );
}
