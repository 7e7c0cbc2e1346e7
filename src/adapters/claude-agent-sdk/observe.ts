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
import { DEFAULT_GATED_TOOLS } from '../claude-code/config.js';
import { type ObserveOptions, runObserve } from '../claude-code/observe.js';
import { loadConfig } from '../core/config.js';
import type { RestateResult } from '../core/restatement.js';
import { agentSdkState, agentSdkVoice, RUNTIME } from './config.js';

/** Records the restatement of an Agent SDK session. Throws `InputError` for bad input. */
export function runAgentSdkObserve(options: ObserveOptions): Promise<RestateResult> {
  return runObserve(options, {
    config: (projectDir, env) =>
      loadConfig(projectDir, env.core, { runtime: RUNTIME, gatedTools: DEFAULT_GATED_TOOLS }).config,
    state: (env) => agentSdkState(env.core.stateRoot),
    voice: (env) => agentSdkVoice(env.path),
  });
}
