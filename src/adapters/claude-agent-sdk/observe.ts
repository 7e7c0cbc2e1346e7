/**
 * `continuity observe` for a session of the Agent SDK: the agent restates its decisions in its
 * Bash tool (the same command Claude Code's agent runs; the SDK drives the same binary, which
 * gives that shell `CLAUDE_CODE_SESSION_ID`). The CLI picks this runtime from the session's
 * latest boundary in the ledger, or from `--runtime claude-agent-sdk`.
 *
 * This runs in the agent's shell, another process than the application: its post span goes over
 * OTLP (`CONTINUITY_OTLP_*`), not through the application's tracer provider. The in-process MCP
 * tool does not have that limit.
 */
import { resolve } from 'node:path';
import { OPAQUE_ID_PATTERN } from '../../decision/model.js';
import { InputError } from '../../decision/problems.js';
import { formatRfc3339Utc } from '../../decision/time.js';
import { DEFAULT_GATED_TOOLS } from '../claude-code/config.js';
import { findProjectSession, type ObserveOptions } from '../claude-code/observe.js';
import { loadConfig, resolveEnv } from '../core/config.js';
import { type RestateResult, recordRestatement } from '../core/restatement.js';
import { agentSdkState, agentSdkVoice, RUNTIME, taskRecordLabel } from './config.js';

/** Records the restatement of an Agent SDK session. Throws {@link InputError} for bad input. */
export async function runAgentSdkObserve(options: ObserveOptions): Promise<RestateResult> {
  const raw = options.env ?? process.env;
  const env = resolveEnv(raw);
  const projectDir = resolve(options.project ?? process.cwd());
  const { config } = loadConfig(projectDir, env, { runtime: RUNTIME, gatedTools: DEFAULT_GATED_TOOLS });
  const state = agentSdkState(env.stateRoot);
  const sessionId = options.session ?? raw.CLAUDE_CODE_SESSION_ID ?? findProjectSession(state, projectDir);
  if (!sessionId || !OPAQUE_ID_PATTERN.test(sessionId)) {
    throw new InputError('--session', [
      { path: '(option)', message: 'expected the session id (the context added after compaction prints it)' },
    ]);
  }
  return recordRestatement({
    config,
    state,
    sessionId,
    decisions: options.decisions,
    source: options.source,
    label: taskRecordLabel(config),
    ...(options.ledger ? { ledgerPath: resolve(options.ledger) } : {}),
    voice: agentSdkVoice(raw.PATH ?? ''),
    now: (options.now ?? (() => formatRfc3339Utc(Date.now())))(),
    warn: (l) => process.stderr.write(`continuity: ${l}\n`),
  });
}
