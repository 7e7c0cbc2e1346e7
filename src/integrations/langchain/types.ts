/**
 * The parts of `langchain` (1.x) the integration touches, typed structurally so that this package
 * needs neither LangChain nor its types: `langchain` is the application's (an optional peer), and
 * importing `agent-continuity/langchain` never loads it. Each type is a subset of what
 * `langchain` 1.5.14 ships (dist/agents/middleware/types.d.ts, dist/agents/nodes/*.js).
 */
import type { IntegrationOptions } from '../in-process/types.js';

/** A LangChain middleware object (what `createMiddleware` returns; `AgentMiddleware`). */
export interface LangChainMiddlewareLike {
  name: string;
  // biome-ignore lint/suspicious/noExplicitAny: LangChain's hook is a function or `{ hook, canJumpTo }`.
  beforeModel?: any;
  [key: string]: unknown;
}

/** The runtime LangChain hands hooks and tool calls (`Runtime`): the thread's `configurable` among them. */
export interface LangChainRuntimeLike {
  context?: Record<string, unknown>;
  configurable?: Record<string, unknown>;
  [key: string]: unknown;
}

/** A tool call request of `wrapToolCall` (`ToolCallRequest`, the fields read). */
export interface LangChainToolCallRequest {
  toolCall: { name: string; args: Record<string, unknown>; id?: string };
  runtime?: LangChainRuntimeLike;
  [key: string]: unknown;
}

/**
 * The three exports of `langchain` the integration builds with, passed in by the application
 * (`import { createMiddleware, tool, ToolMessage } from 'langchain'`), so that this package never
 * imports LangChain. `M` is LangChain's middleware type.
 */
export interface LangChainFactories<M = unknown> {
  // biome-ignore lint/suspicious/noExplicitAny: LangChain's own generic middleware config.
  createMiddleware(config: any): M;
  // biome-ignore lint/suspicious/noExplicitAny: LangChain's `tool(func, { name, description, schema })`.
  tool(func: (input: any, config?: any) => Promise<string>, fields: any): unknown;
  ToolMessage: new (fields: {
    content: string;
    tool_call_id: string;
    name?: string;
    status?: 'success' | 'error';
  }) => unknown;
}

/** Options of {@link createLangChainContinuity}. */
export interface LangChainContinuityOptions<M = unknown> extends IntegrationOptions {
  /** `{ createMiddleware, tool, ToolMessage }` from `langchain`. */
  langchain: LangChainFactories<M>;
  /**
   * The session of a run, from the thread's `configurable` (LangGraph's `thread_id` by default).
   * It must be an opaque id (letters, digits, `._:-`); a run without one is not recorded.
   */
  sessionId?: (configurable: Record<string, unknown> | undefined) => string | undefined;
}
