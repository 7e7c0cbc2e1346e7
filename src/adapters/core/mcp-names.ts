/**
 * The names of the restatement's MCP server and tool, defined once: `continuity mcp`
 * (./mcp.ts), the Agent SDK adapter's in-process server, `init`, the words and the gate (which
 * loads this file on its fast path, so it holds nothing else).
 */

/** The server's name, the runtimes' key for it, and so the tool's prefix (`mcp__continuity__restate`). */
export const MCP_SERVER_NAME = 'continuity';
/** The restatement tool's name on the server. */
export const MCP_RESTATE_TOOL = 'restate';
/** The name Claude Code and the Agent SDK give the agent: `mcp__<server>__<tool>`. */
export const MCP_RESTATE_TOOL_NAME = `mcp__${MCP_SERVER_NAME}__${MCP_RESTATE_TOOL}`;
