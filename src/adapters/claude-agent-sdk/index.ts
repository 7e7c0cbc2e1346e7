/**
 * agent-continuity/claude-agent-sdk: the Claude Agent SDK adapter, in process. Hooks to spread
 * into `options.hooks`, the restatement as an in-process MCP tool, the `compact_boundary` stream
 * message read for context fill, and spans through the application's tracer provider. It never
 * imports `@anthropic-ai/claude-agent-sdk` (the application passes `createSdkMcpServer` and
 * `tool` in) and loads `@opentelemetry/api` only when it makes a span. Explicit exports only.
 *
 * ```js
 * import { query, createSdkMcpServer, tool } from '@anthropic-ai/claude-agent-sdk';
 * import { createAgentSdkContinuity } from 'agent-continuity/claude-agent-sdk';
 *
 * const continuity = createAgentSdkContinuity({ projectDir: cwd, sdk: { createSdkMcpServer, tool } });
 * for await (const m of continuity.watch(query({ prompt, options: continuity.options({ cwd }) }))) { … }
 * ```
 */
export type { AgentSdkContinuity } from './continuity.js';
export { COMPACT_BOUNDARY_SIGNAL, createAgentSdkContinuity } from './continuity.js';
export {
  HOOK_TIMEOUTS,
  MCP_SERVER_NAME,
  RESTATE_TOOL,
  RESTATE_TOOL_NAME,
  RUNTIME,
} from './config.js';
export { isRegisteredProvider } from '../core/tracer-sink.js';
export type {
  AgentSdkContinuityOptions,
  AgentSdkHookCallback,
  AgentSdkHookEvent,
  AgentSdkHookMatcher,
  AgentSdkHookOutput,
  AgentSdkHooks,
  AgentSdkMcpFactory,
  AgentSdkOptionsLike,
  AgentSdkToolResult,
  TracerProviderLike,
} from './types.js';
