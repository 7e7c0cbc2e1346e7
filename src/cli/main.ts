/**
 * The `continuity` command. Each subcommand lives in `commands/` and registers itself here.
 * Errors become exit codes from `exit-codes.ts`; nothing is printed on stdout on failure.
 */
import { Command, CommanderError, type Option } from 'commander';
import { InputError } from '../decision/problems.js';
import { describeCode, isSystemError } from '../ledger/files.js';
import { registerApprove } from './commands/approve.js';
import { registerClassify } from './commands/classify.js';
import { registerConfig } from './commands/config.js';
import { registerHook } from './commands/hook.js';
import { registerInit } from './commands/init.js';
import { registerKey } from './commands/key.js';
import { registerLedger } from './commands/ledger.js';
import { registerMcp } from './commands/mcp.js';
import { registerObserve } from './commands/observe.js';
import { registerServe } from './commands/serve.js';
import { registerSnapshot } from './commands/snapshot.js';
import { registerStatus } from './commands/status.js';
import { registerTask } from './commands/task.js';
import { CliError, EXIT } from './exit-codes.js';

export { CliError } from './exit-codes.js';

/**
 * Commander checks mandatory options before unknown ones, so `--sesion x` was reported as a
 * missing `--session`. Mandatory options are therefore checked here instead, in a `preAction`
 * hook, which runs after the unknown-option check: a mistyped option is reported as unknown, with
 * commander's suggestion of the closest one.
 */
function checkMandatoryAfterUnknown(program: Command): void {
  const mandatory = new Map<Command, Option[]>();
  const visit = (cmd: Command) => {
    const opts = cmd.options.filter((o) => o.mandatory);
    for (const o of opts) o.makeOptionMandatory(false);
    if (opts.length > 0) mandatory.set(cmd, opts);
    for (const sub of cmd.commands) visit(sub);
  };
  visit(program);
  program.hook('preAction', (_program, action) => {
    for (const o of mandatory.get(action) ?? []) {
      if (action.getOptionValue(o.attributeName()) === undefined) {
        action.error(`error: required option '${o.flags}' not specified`, {
          code: 'commander.missingMandatoryOptionValue',
        });
      }
    }
  });
}

/** Builds the command tree. */
export function buildProgram(): Command {
  const program = new Command('continuity')
    .description('capture task decisions around context compaction and check that they survived')
    .version('0.1.0')
    // One line for a usage error (and commander's one-line "Did you mean …?" for a mistyped
    // option or command), prefixed like every other error; never the whole help.
    .configureOutput({
      outputError: (text, write) => write(`continuity: ${text.replace(/^error: /, '')}`),
    })
    .showSuggestionAfterError()
    .exitOverride();
  // Data-flow order in --help: classify, record, inspect, serve, runtime hooks.
  registerClassify(program);
  registerSnapshot(program);
  registerApprove(program);
  registerKey(program);
  registerTask(program);
  registerConfig(program);
  registerStatus(program);
  registerLedger(program);
  registerServe(program);
  registerHook(program);
  registerObserve(program);
  registerMcp(program);
  registerInit(program);
  const override = (cmd: Command) => {
    cmd.exitOverride();
    cmd.commands.forEach(override);
  };
  override(program);
  checkMandatoryAfterUnknown(program);
  return program;
}

/**
 * The message of an environment failure. A system error that reached here without being wrapped
 * (one from a command's own files) is put in the form every ledger error has: the file first,
 * then what could not be done and why.
 */
function environmentMessage(e: unknown): string {
  if (isSystemError(e) && typeof e.path === 'string') {
    return `${e.path}: cannot ${e.syscall ?? 'access'}: ${describeCode(e.code)} (${e.code})`;
  }
  return (e as Error)?.message ?? String(e);
}

/** Runs the CLI with `argv` (user arguments only) and returns the exit code. */
export async function runCli(argv: readonly string[]): Promise<number> {
  try {
    await buildProgram().parseAsync([...argv], { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok;
  } catch (e) {
    if (e instanceof CommanderError) {
      if (
        e.code === 'commander.helpDisplayed' ||
        e.code === 'commander.version' ||
        e.code === 'commander.help'
      ) {
        return EXIT.ok;
      }
      return EXIT.badInput;
    }
    if (e instanceof InputError) {
      process.stderr.write(`continuity: ${e.message}\n`);
      return EXIT.badInput;
    }
    if (e instanceof CliError) {
      process.stderr.write(`continuity: ${e.message}\n`);
      return e.exitCode;
    }
    process.stderr.write(`continuity: ${environmentMessage(e)}\n`);
    return EXIT.environment;
  }
}
