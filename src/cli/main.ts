/**
 * The `continuity` command. Each subcommand lives in `commands/` and registers itself here.
 * Errors become exit codes from `exit-codes.ts`; nothing is printed on stdout on failure.
 */
import { Command, CommanderError } from 'commander';
import { InputError } from '../decision/problems.js';
import { registerApprove } from './commands/approve.js';
import { registerClassify } from './commands/classify.js';
import { registerHook } from './commands/hook.js';
import { registerInit } from './commands/init.js';
import { registerLedger } from './commands/ledger.js';
import { registerObserve } from './commands/observe.js';
import { registerServe } from './commands/serve.js';
import { registerSnapshot } from './commands/snapshot.js';
import { registerStatus } from './commands/status.js';
import { EXIT } from './exit-codes.js';

/** An error the CLI reports with its own exit code and message. */
export class CliError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode: number) {
    super(message);
    this.name = 'CliError';
    this.exitCode = exitCode;
  }
}

/** Builds the command tree. */
export function buildProgram(): Command {
  const program = new Command('continuity')
    .description('capture task decisions around context compaction and check that they survived')
    .version('0.1.0')
    .showHelpAfterError()
    .exitOverride();
  // Data-flow order in --help: classify, record, inspect, serve, runtime hooks.
  registerClassify(program);
  registerSnapshot(program);
  registerApprove(program);
  registerStatus(program);
  registerLedger(program);
  registerServe(program);
  registerHook(program);
  registerObserve(program);
  registerInit(program);
  for (const cmd of program.commands) cmd.exitOverride();
  return program;
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
    process.stderr.write(`continuity: ${(e as Error).message ?? String(e)}\n`);
    return EXIT.environment;
  }
}
