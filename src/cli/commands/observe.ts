/**
 * `continuity observe`: the agent restates its task decisions after compaction; prints the
 * continuity state and the next action. See docs/claude-code.md.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { isRecord } from '../../adapters/core/state.js';
import { InputError } from '../../decision/problems.js';
import { readJsonInput } from '../io.js';

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** `NAME=VALUE`: VALUE as JSON when it parses, else as a string. */
function parseDecisionFlag(flag: string): [string, unknown] {
  const eq = flag.indexOf('=');
  if (eq <= 0) {
    // Never quote the flag: without its `=` it may be a value.
    throw new InputError('--decision', [{ path: '(option)', message: 'expected NAME=VALUE' }]);
  }
  const text = flag.slice(eq + 1);
  try {
    return [flag.slice(0, eq), JSON.parse(text)];
  } catch {
    return [flag.slice(0, eq), text];
  }
}

/**
 * The runtimes `continuity observe` restates for, by their CLI name, with the runtime name their
 * adapter writes on its ledger records and the adapter's restatement, loaded on demand.
 */
export const OBSERVE_RUNTIMES = {
  'claude-code': {
    ledgerName: 'claude-code',
    load: async () => (await import('../../adapters/claude-code/observe.js')).runObserve,
  },
  'claude-agent-sdk': {
    ledgerName: 'claude-agent-sdk',
    load: async () => (await import('../../adapters/claude-agent-sdk/observe.js')).runAgentSdkObserve,
  },
  codex: {
    ledgerName: 'codex-cli',
    load: async () => (await import('../../adapters/codex/observe.js')).runCodexObserve,
  },
  opencode: {
    ledgerName: 'opencode',
    load: async () => (await import('../../adapters/opencode/observe.js')).runObserve,
  },
  copilot: {
    ledgerName: 'copilot',
    load: async () => (await import('../../adapters/copilot/observe.js')).runCopilotObserve,
  },
  gemini: {
    ledgerName: 'gemini',
    load: async () => (await import('../../adapters/gemini/observe.js')).runGeminiObserve,
  },
  'qwen-code': {
    ledgerName: 'qwen-code',
    load: async () => (await import('../../adapters/qwen-code/observe.js')).runQwenCodeObserve,
  },
} as const;
/** A runtime `continuity observe` (and `continuity mcp`) restates for. */
export type ObserveRuntime = keyof typeof OBSERVE_RUNTIMES;
/** Their CLI names. */
export const RUNTIME_NAMES = Object.keys(OBSERVE_RUNTIMES) as ObserveRuntime[];

/**
 * Which adapter records the restatement (its state directory, its words): `--runtime`, else the
 * runtime of the session's latest boundary in the ledger (the evidence says who recorded it),
 * else Claude Code. The session: `--session`, else `CLAUDE_CODE_SESSION_ID`, which both Claude
 * Code and the Agent SDK (it drives the same binary) give the agent's shell; Codex gives none.
 */
async function observeRuntime(opts: {
  runtime?: string;
  session?: string;
  ledger?: string;
}): Promise<ObserveRuntime> {
  if (opts.runtime !== undefined) {
    if (!Object.hasOwn(OBSERVE_RUNTIMES, opts.runtime)) {
      throw new InputError('--runtime', [
        {
          path: '(option)',
          message: `unknown runtime "${opts.runtime}"; expected ${RUNTIME_NAMES.join(', ')}`,
        },
      ]);
    }
    return opts.runtime as ObserveRuntime;
  }
  if (opts.session === undefined && !process.env.CLAUDE_CODE_SESSION_ID && process.env.QWEN_CODE_SESSION_ID) {
    return 'qwen-code'; // the agent's shell in a Qwen Code session
  }
  const session = opts.session ?? process.env.CLAUDE_CODE_SESSION_ID;
  if (!session) return 'claude-code';
  const [{ resolveEnv }, { readLatestBoundary }] = await Promise.all([
    import('../../adapters/core/config.js'),
    import('../../ledger/latest.js'),
  ]);
  const ledger = opts.ledger ? resolve(opts.ledger) : resolveEnv(process.env).ledgerPath;
  try {
    const recorded = readLatestBoundary(ledger, session)?.runtime;
    return RUNTIME_NAMES.find((r) => OBSERVE_RUNTIMES[r].ledgerName === recorded) ?? 'claude-code';
  } catch {
    return 'claude-code'; // the restatement itself reports what is wrong with the ledger
  }
}

/** Registers `continuity observe`. */
export function registerObserve(program: Command): void {
  program
    .command('observe')
    .description(
      "restate the task's decisions after compaction; prints the continuity state and what to do next",
    )
    .option(
      '--session <id>',
      "the session id (default: CLAUDE_CODE_SESSION_ID, else the project's current Claude Code session)",
    )
    .option(
      '--decisions <file>',
      'JSON file of decision name → value (or {value, observedAt, revision, source}); - for stdin',
    )
    .option('--decision <name=value>', 'one decision, value as JSON or plain text (repeatable)', collect, [])
    .option('--project <dir>', 'project directory (default: CLAUDE_PROJECT_DIR, else the working directory)')
    .option('--ledger <path>', 'ledger file (default: CONTINUITY_LEDGER, else the state directory)')
    .option(
      '--runtime <runtime>',
      `the agent runtime: ${RUNTIME_NAMES.join(', ')} (default: the runtime that recorded the session's latest boundary, else claude-code)`,
    )
    .option('--json', 'print a JSON document instead of text')
    .action(
      async (opts: {
        session?: string;
        decisions?: string;
        decision: string[];
        project?: string;
        ledger?: string;
        runtime?: string;
        json?: boolean;
      }) => {
        if (opts.decisions === undefined && opts.decision.length === 0) {
          throw new InputError('observe', [
            {
              path: '(options)',
              message: 'give the restated decisions with --decisions FILE|- or --decision NAME=VALUE',
            },
          ]);
        }
        let decisions: Record<string, unknown> = {};
        let source = '--decision';
        if (opts.decisions !== undefined) {
          source = opts.decisions === '-' ? '(stdin)' : opts.decisions;
          const doc = readJsonInput(opts.decisions);
          if (!isRecord(doc)) {
            throw new InputError(source, [
              { path: '(root)', message: 'expected a JSON object of decision name → value' },
            ]);
          }
          decisions = { ...doc };
        }
        for (const flag of opts.decision) {
          const [name, value] = parseDecisionFlag(flag);
          decisions[name] = value;
        }
        const runtime = await observeRuntime(opts);
        const input = {
          decisions,
          source,
          ...(opts.session !== undefined && { session: opts.session }),
          ...(opts.project !== undefined && { project: opts.project }),
          ...(opts.ledger !== undefined && { ledger: opts.ledger }),
        };
        // Loaded here, not at startup: the other commands never pay for the ledger and digests.
        const [{ renderRestatement }, restate] = await Promise.all([
          import('../../adapters/core/restatement.js'),
          OBSERVE_RUNTIMES[runtime].load(),
        ]);
        const result = await restate(input);
        process.stdout.write(opts.json ? `${JSON.stringify(result, null, 2)}\n` : renderRestatement(result));
      },
    );
}
