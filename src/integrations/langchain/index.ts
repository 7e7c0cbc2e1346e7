/**
 * agent-continuity/langchain: LangChain JS (`langchain` 1.x `createAgent`) in process. A wrapper
 * for `summarizationMiddleware` that captures the task decisions before it replaces history, asks
 * its summary to keep them and the agent to restate them after; a middleware with the restatement
 * tool and the write gate (`wrapToolCall`); and a `when` for `humanInTheLoopMiddleware`. It never
 * imports `langchain` (the application passes `createMiddleware`, `tool` and `ToolMessage` in)
 * and loads `@opentelemetry/api` only when it makes a span. Explicit exports only.
 *
 * ```js
 * import { createAgent, createMiddleware, summarizationMiddleware, tool, ToolMessage } from 'langchain';
 * import { createLangChainContinuity } from 'agent-continuity/langchain';
 *
 * const continuity = createLangChainContinuity({ projectDir, langchain: { createMiddleware, tool, ToolMessage } });
 * const agent = createAgent({
 *   model, tools, checkpointer,
 *   middleware: [continuity.summarization(summarizationMiddleware, { model, trigger: { tokens: 4000 } }), continuity.middleware],
 * });
 * ```
 */
export type { LangChainContinuity } from './continuity.js';
export { createLangChainContinuity, MIDDLEWARE_NAME, RUNTIME, SUMMARIZATION_SIGNAL } from './continuity.js';
export { RESTATE_TOOL_NAME } from '../in-process/continuity.js';
export type {
  LangChainContinuityOptions,
  LangChainFactories,
  LangChainMiddlewareLike,
  LangChainRuntimeLike,
  LangChainToolCallRequest,
} from './types.js';
export type { ToolCallView, ToolDescription, TracerProviderLike } from '../in-process/types.js';
