/**
 * The Claude Agent SDK's facts for the adapter: its runtime name, the in-process restatement
 * tool's names, the hook timeouts, and how the agent's shell starts continuity.
 *
 * The SDK (`@anthropic-ai/claude-agent-sdk` 0.3.328) drives the Claude Code binary (2.1.328, byte
 * for byte the one `@anthropic-ai/claude-code` ships): its tools, their inputs and the hook
 * inputs its callbacks receive are Claude Code's, so the tool table and the input reading come
 * from the Claude Code adapter. What differs is the transport (callbacks in the application's
 * process instead of a process per event), the answers (objects instead of stdout) and the
 * state directory.
 */
import { CONSEQUENTIAL_TOOLS } from '../claude-code/config.js';
import type { Voice } from '../core/messages.js';
import { launcherFor } from '../core/process.js';
import { binPath } from '../core/project.js';
import { type StateDir, stateDirOf } from '../core/state.js';

/** The runtime name on every compaction span and ledger record (semconv knows its post window). */
export const RUNTIME = 'claude-agent-sdk';

/**
 * The in-process MCP server's key in `options.mcpServers`, the restatement tool's name on it, and
 * the name the agent calls it by (`mcp__<server>__<tool>`): the same as `continuity mcp`'s.
 */
export {
  MCP_RESTATE_TOOL as RESTATE_TOOL,
  MCP_RESTATE_TOOL_NAME as RESTATE_TOOL_NAME,
  MCP_SERVER_NAME,
} from '../core/mcp-names.js';

/**
 * Matcher timeouts, in seconds. The SDK's default for callbacks is 60 s; these are ceilings, the
 * callbacks answer in milliseconds. A PreToolUse callback slower than its timeout fails closed
 * (the tool is not run, observed on 0.3.328); the recording callbacks give up on their own
 * before theirs (the hook deadline), so the compaction is never held up.
 */
export const HOOK_TIMEOUTS = Object.freeze({ preToolUse: 10, preCompact: 15, compacted: 10 });

/** The adapter's state directory under the state root. */
export function agentSdkState(stateRoot: string): StateDir {
  return stateDirOf(stateRoot, RUNTIME);
}

/**
 * How the agent's shell starts continuity: `continuity` when it is on the `PATH` the agent's Bash
 * tool gets (the query's `env`, else the application's), else `node <bin/continuity.js>`, so the
 * command the messages print runs as printed.
 */
export function agentSdkVoice(path: string): Voice {
  return {
    launcher: launcherFor(path, binPath()),
    consequentialTools: CONSEQUENTIAL_TOOLS,
  };
}
