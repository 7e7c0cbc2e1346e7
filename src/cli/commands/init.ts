/**
 * `continuity init claude-code` and `continuity init codex`: install the runtime's hooks (and,
 * for Codex, trust them), add `.continuity/` to `.gitignore` and create the task record template.
 * Prints what it did.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { InputError } from '../../decision/problems.js';

interface InitFlags {
  project?: string;
  settings?: string;
  command?: string;
  gateTools?: string;
  codexHome?: string;
  projectHooks?: boolean;
  remove?: boolean;
}

/** Registers `continuity init <runtime>`. */
export function registerInit(program: Command): void {
  program
    .command('init')
    .description('set up continuity for an agent runtime in a project (runtime: claude-code, codex)')
    .argument('<runtime>', 'the agent runtime: claude-code or codex')
    .option('--project <dir>', 'project directory (default: the working directory)')
    .option(
      '--settings <file>',
      'claude-code: settings file relative to the project (default: .claude/settings.json)',
    )
    .option(
      '--command <launcher>',
      'how hooks start continuity, e.g. "node /path/bin/continuity.js"; rewrites the command of our hooks when it differs (default: continuity when on PATH, else node <this checkout>/bin/continuity.js)',
    )
    .option(
      '--gate-tools <matcher>',
      'tools the write gate checks (default: claude-code Edit|Write|MultiEdit|NotebookEdit|Bash|PowerShell; codex Bash|apply_patch)',
    )
    .option('--codex-home <dir>', 'codex: Codex home with config.toml (default: CODEX_HOME, else ~/.codex)')
    .option(
      '--project-hooks',
      'codex: write the hooks into <project>/.codex/hooks.json (Codex loads it only for a trusted project) instead of $CODEX_HOME/hooks.json',
    )
    .option('--remove', "take out exactly the hooks and rules init added; keep everyone else's")
    .action(async (runtime: string, opts: InitFlags) => {
      const project = resolve(opts.project ?? process.cwd());
      if (runtime === 'codex') {
        if (opts.settings !== undefined) {
          throw new InputError('init', [
            {
              path: '--settings',
              message: 'is for claude-code; codex uses --codex-home and --project-hooks',
            },
          ]);
        }
        const { runCodexInit } = await import('../../adapters/codex/init.js');
        const lines = runCodexInit({
          project,
          ...(opts.codexHome !== undefined && { codexHome: opts.codexHome }),
          ...(opts.projectHooks && { projectHooks: true }),
          ...(opts.command !== undefined && { command: opts.command }),
          ...(opts.gateTools !== undefined && { gateMatcher: opts.gateTools }),
          ...(opts.remove && { remove: true }),
        });
        process.stdout.write(`${lines.join('\n')}\n`);
        return;
      }
      if (runtime !== 'claude-code') {
        throw new InputError('init', [
          { path: '<runtime>', message: `unknown runtime "${runtime}"; expected claude-code or codex` },
        ]);
      }
      if (opts.codexHome !== undefined || opts.projectHooks) {
        throw new InputError('init', [
          {
            path: opts.codexHome !== undefined ? '--codex-home' : '--project-hooks',
            message: 'is for codex',
          },
        ]);
      }
      const { runInit } = await import('../../adapters/claude-code/init.js');
      const lines = runInit({
        project,
        ...(opts.settings !== undefined && { settings: opts.settings }),
        ...(opts.command !== undefined && { command: opts.command }),
        ...(opts.gateTools !== undefined && { gateMatcher: opts.gateTools }),
        ...(opts.remove && { remove: true }),
      });
      process.stdout.write(`${lines.join('\n')}\n`);
    });
}
