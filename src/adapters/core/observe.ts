/**
 * What every runtime's `continuity observe` shares once the runtime has found its project,
 * configuration, state directory, words and session: the options that mean the same on every
 * runtime, the project's recorded session as a fallback, and the tail that records the
 * restatement (./restatement.ts does the work) with the task record's label, `--ledger` and
 * warnings on stderr. Each runtime's observe translates its own environment onto this; an
 * in-process restatement tool (the Agent SDK's, the frameworks') goes through {@link restateInProcess}.
 */
import { resolve } from 'node:path';
import { OPAQUE_ID_PATTERN } from '../../decision/model.js';
import { InputError } from '../../decision/problems.js';
import type { AdapterConfig } from './config.js';
import type { Voice } from './messages.js';
import { systemNow, taskRecordLabel } from './recording.js';
import { type RestateResult, recordRestatement, type SessionSource } from './restatement.js';
import { findProjectSession, type StateDir } from './state.js';

/** The options of `continuity observe` that mean the same on every runtime. */
export interface ObserveInput {
  /** The restated decisions as parsed JSON (from `--decisions FILE|-` and/or `--decision NAME=VALUE`). */
  decisions: Record<string, unknown>;
  /** Where the decisions came from, for error messages (`(stdin)`, a file name, `--decision`). */
  source: string;
  /** `--ledger PATH`. Default `CONTINUITY_LEDGER`, else the state directory. */
  ledger?: string;
  env?: NodeJS.ProcessEnv;
  /** The clock. Default the system clock. */
  now?: () => string;
}

/** What the runtime found for the restatement: its configuration, state directory, words and session. */
export interface ObserveRuntime {
  config: AdapterConfig;
  state: StateDir;
  voice: Voice;
  sessionId: string;
}

/** The project's current session, which the runtime's hooks or plugin record, as a session source. */
export function projectSession(state: StateDir, projectDir: string): SessionSource | undefined {
  const id = findProjectSession(state, projectDir);
  return id === undefined ? undefined : { id, from: "the project's recorded session" };
}

/**
 * Records the restatement for the runtime's session and classifies the boundary. Throws
 * `InputError` for bad input (nothing written).
 */
export function observeSession(input: ObserveInput, runtime: ObserveRuntime): Promise<RestateResult> {
  const { config } = runtime;
  return recordRestatement({
    config,
    state: runtime.state,
    sessionId: runtime.sessionId,
    decisions: input.decisions,
    source: input.source,
    label: taskRecordLabel(config),
    ...(input.ledger ? { ledgerPath: resolve(input.ledger) } : {}),
    voice: runtime.voice,
    now: (input.now ?? systemNow)(),
    warn: (l) => process.stderr.write(`continuity: ${l}\n`),
  });
}

/** An in-process restatement tool: its name, and the runtime it records for. */
export interface InProcessTool {
  /** The tool's name, which messages give as where the decisions came from. */
  name: string;
  /** The configuration, loaded once the session id is known to be sound. */
  config(): AdapterConfig;
  state: StateDir;
  voice: Voice;
  /** Where the tool's warnings go (as `restate: …`). */
  warn(line: string): void;
  /**
   * The sessions this process saw a compaction of that no healthy verdict resolved since: a
   * restatement that allows writes resolves its own.
   */
  unresolved: Set<string>;
}

/**
 * Records a restatement made through an in-process tool and classifies the boundary, on the
 * system clock. Throws `InputError` for a session id that is not an opaque identifier (before
 * anything is read) or bad input (nothing written).
 */
export async function restateInProcess(
  tool: InProcessTool,
  sessionId: string,
  decisions: Record<string, unknown>,
): Promise<RestateResult> {
  if (typeof sessionId !== 'string' || !OPAQUE_ID_PATTERN.test(sessionId)) {
    throw new InputError('session', [{ path: '(session)', message: 'expected an opaque identifier' }]);
  }
  const config = tool.config();
  const result = await recordRestatement({
    config,
    state: tool.state,
    sessionId,
    decisions,
    source: tool.name,
    label: taskRecordLabel(config),
    voice: tool.voice,
    now: systemNow(),
    warn: (l) => tool.warn(`restate: ${l}`),
  });
  if (result.writes === 'allowed') tool.unresolved.delete(sessionId);
  return result;
}
