/**
 * `continuity init claude-code`, `continuity init codex` and `continuity init opencode`: install
 * the runtime's hooks (for Codex, trust them; for OpenCode, the plugin's entry in `opencode.json`),
 * add `.continuity/` to `.gitignore` and create the task record template. Prints what it did.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { InputError } from '../../decision/problems.js';

interface InitFlags {
  project?: string;
  settings?: string;
  config?: string;
  command?: string;
  gateTools?: string;
  codexHome?: string;
  projectHooks?: boolean;
  remove?: boolean;
  printManaged?: boolean;
}

/** Registers `continuity init <runtime>`. */
export function registerInit(program: Command): void {
  program
    .command('init')
    .description(
      'set up continuity for an agent runtime in a project (runtime: claude-code, codex, copilot, gemini, opencode, qwen-code)',
    )
    .argument('<runtime>', 'the agent runtime: claude-code, codex, copilot, gemini, opencode or qwen-code')
    .option('--project <dir>', 'project directory (default: the working directory)')
    .option(
      '--settings <file>',
      'claude-code, qwen-code, copilot, gemini: settings file relative to the project (default: .claude/settings.json, .qwen/settings.json, .github/hooks/continuity.json, .gemini/settings.json)',
    )
    .option(
      '--config <file>',
      'opencode: configuration file, relative to the project or absolute (default: opencode.json)',
    )
    .option(
      '--command <launcher>',
      'how hooks start continuity, e.g. "node /path/bin/continuity.js"; rewrites the command of our hooks when it differs (default: continuity when PATH has this installation; else, for claude-code, qwen-code, copilot and gemini, the project\'s node_modules/.bin/continuity under the runtime\'s project variable; else node <this installation>/bin/continuity.js, which claude-code and copilot write into their git-ignored .claude/settings.local.json and .github/hooks/continuity.local.json)',
    )
    .option(
      '--gate-tools <matcher>',
      'tools that reach the write gate (default: claude-code * (every tool; reads pass, unknown tools are held while writes are); codex Bash|apply_patch)',
    )
    .option('--codex-home <dir>', 'codex: Codex home with config.toml (default: CODEX_HOME, else ~/.codex)')
    .option(
      '--project-hooks',
      'codex: write the hooks into <project>/.codex/hooks.json (Codex loads it only for a trusted project) instead of $CODEX_HOME/hooks.json',
    )
    .option('--remove', "take out exactly the hooks, rules or plugin entry init added; keep everyone else's")
    .option(
      '--print-managed',
      'claude-code: print the hooks as a managed-settings document for an administrator to install root-owned (/etc/claude-code/managed-settings.d/), where the agent cannot remove them; writes nothing',
    )
    .action(async (runtime: string, opts: InitFlags) => {
      const project = resolve(opts.project ?? process.cwd());
      if (opts.printManaged) {
        const other = (
          [
            ['<runtime>', runtime === 'claude-code' ? undefined : runtime],
            ['--project', opts.project],
            ['--settings', opts.settings],
            ['--config', opts.config],
            ['--codex-home', opts.codexHome],
            ['--project-hooks', opts.projectHooks],
            ['--remove', opts.remove],
          ] as const
        ).find(([, v]) => v !== undefined);
        if (other) {
          throw new InputError('init', [
            {
              path: other[0],
              message:
                other[0] === '<runtime>'
                  ? `--print-managed is for claude-code (Claude Code's managed settings), not "${runtime}"`
                  : 'does not go with --print-managed, which takes --command and --gate-tools and writes nothing',
            },
          ]);
        }
        const { managedSettingsDocument } = await import('../../adapters/claude-code/init.js');
        const doc = managedSettingsDocument({
          ...(opts.command !== undefined && { command: opts.command }),
          ...(opts.gateTools !== undefined && { gateMatcher: opts.gateTools }),
        });
        process.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
        return;
      }
      if (runtime === 'opencode') {
        const other = (
          [
            ['--settings', opts.settings],
            ['--command', opts.command],
            ['--gate-tools', opts.gateTools],
            ['--codex-home', opts.codexHome],
            ['--project-hooks', opts.projectHooks],
          ] as const
        ).find(([, v]) => v !== undefined);
        if (other) {
          throw new InputError('init', [
            { path: other[0], message: 'is not for opencode; opencode takes --config and --remove' },
          ]);
        }
        const { runInit } = await import('../../adapters/opencode/init.js');
        const lines = runInit({
          project,
          ...(opts.config !== undefined && { config: opts.config }),
          ...(opts.remove && { remove: true }),
        });
        process.stdout.write(`${[...lines, ...humanSteps(opts)].join('\n')}\n`);
        return;
      }
      if (opts.config !== undefined) {
        throw new InputError('init', [{ path: '--config', message: 'is for opencode' }]);
      }
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
        process.stdout.write(`${[...lines, ...humanSteps(opts)].join('\n')}\n`);
        return;
      }
      if (
        runtime !== 'claude-code' &&
        runtime !== 'qwen-code' &&
        runtime !== 'copilot' &&
        runtime !== 'gemini'
      ) {
        throw new InputError('init', [
          {
            path: '<runtime>',
            message: `unknown runtime "${runtime}"; expected claude-code, codex, copilot, gemini, opencode or qwen-code`,
          },
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
      // Qwen Code, Copilot CLI and Gemini CLI speak Claude Code's hook protocol: the same init, in their dialect.
      const [{ runInit }, dialect] = await Promise.all([
        import('../../adapters/claude-code/init.js'),
        runtime === 'qwen-code'
          ? import('../../adapters/qwen-code/config.js').then((m) => m.QWEN_CODE_DIALECT)
          : runtime === 'copilot'
            ? import('../../adapters/copilot/config.js').then((m) => m.COPILOT_DIALECT)
            : runtime === 'gemini'
              ? import('../../adapters/gemini/config.js').then((m) => m.GEMINI_DIALECT)
              : undefined,
      ]);
      const lines = runInit({
        project,
        ...(dialect && { dialect }),
        ...(opts.settings !== undefined && { settings: opts.settings }),
        ...(opts.command !== undefined && { command: opts.command }),
        ...(opts.gateTools !== undefined && { gateMatcher: opts.gateTools }),
        ...(opts.remove && { remove: true }),
      });
      process.stdout.write(`${[...lines, ...humanSteps(opts)].join('\n')}\n`);
    });
}

/**
 * What only the human can do after init, in their own terminal: the approver key, and the seals of
 * the task record and of the configuration (a setting that relaxes the gate is obeyed only sealed).
 */
function humanSteps(opts: { remove?: boolean }): string[] {
  if (opts.remove) return [];
  return [
    "Then, in your own terminal (never the agent's): `continuity key init` once; `continuity task seal` after writing .continuity/task.json;",
    '`continuity config seal` after changing .continuity/config.json (a setting there that relaxes the write gate is obeyed only while the file is sealed).',
  ];
}
