/**
 * `continuity observe` for a Codex session: the agent restates its decisions after compaction
 * (src/adapters/core/restatement.ts does the work: digest, post snapshot, classification, gate
 * cache, post span). `continuity observe` routes here when `--runtime codex` is given or when the
 * session's latest boundary in the ledger was recorded by Codex (`codex-cli`).
 *
 * The session: `--session ID` (the restatement request and the gate's reasons print it), else the
 * project's current Codex session, which the SessionStart, PreCompact and compaction hooks record.
 * Codex gives its hooks and the agent's shell no session variable.
 */
import { resolve } from 'node:path';
import { systemNow, taskRecordLabel } from '../core/recording.js';
import { type RestateResult, recordRestatement, restatementSession } from '../core/restatement.js';
import { findProjectSession } from '../core/state.js';
import { codexState, codexVoice, findProjectDir, loadCodexConfig, resolveCodexEnv } from './config.js';

/** Options of `continuity observe` for Codex. */
export interface CodexObserveOptions {
  /** The session id. Default: the project's current Codex session recorded by the hooks. */
  session?: string;
  /** The restated decisions as parsed JSON. */
  decisions: Record<string, unknown>;
  /** Where the decisions came from, for error messages (`(stdin)`, a file name, `--decision`). */
  source: string;
  /** The project directory. Default: the nearest directory at or above the working directory with `.continuity/`. */
  project?: string;
  /** `--ledger PATH`. Default `CONTINUITY_LEDGER`, else the state directory. */
  ledger?: string;
  env?: NodeJS.ProcessEnv;
  /** The script this process runs, for the launcher the messages print. Default `process.argv[1]`. */
  script?: string;
  /** The clock. Default the system clock. */
  now?: () => string;
}

/** Records the restatement and classifies the boundary. Throws {@link InputError} for bad input. */
export async function runCodexObserve(options: CodexObserveOptions): Promise<RestateResult> {
  const env = resolveCodexEnv(options.env ?? process.env, options.script ?? process.argv[1]);
  const now = (options.now ?? systemNow)();
  const cwd = process.cwd();
  const projectDir = options.project ? resolve(options.project) : (findProjectDir(env, cwd) ?? cwd);
  const { config } = loadCodexConfig(projectDir, env);
  const state = codexState(env);
  const sessionId = restatementSession(options.session, () => {
    const id = findProjectSession(state, projectDir);
    return id === undefined ? undefined : { id, from: "the project's recorded session" };
  });
  return recordRestatement({
    config,
    state,
    sessionId,
    decisions: options.decisions,
    source: options.source,
    label: taskRecordLabel(config),
    ...(options.ledger ? { ledgerPath: resolve(options.ledger) } : {}),
    voice: codexVoice(env),
    now,
    warn: (l) => process.stderr.write(`continuity: ${l}\n`),
  });
}
