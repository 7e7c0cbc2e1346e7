/**
 * agent-continuity/ai-sdk: the Vercel AI SDK recipe (`ai` 7), in process. The AI SDK has no
 * compaction of its own: an application that shortens history in `prepareStep` calls `compact`,
 * offers the restatement tool, gates tools through `toolApproval`, and gives `@ai-sdk/otel` the
 * `enrichSpan` that puts `session.id` on its spans. It never imports `ai` (the application passes
 * `tool` and `jsonSchema` in) and loads `@opentelemetry/api` only when it makes a span. Explicit
 * exports only.
 *
 * ```js
 * import { generateText, jsonSchema, tool } from 'ai';
 * import { OpenTelemetry } from '@ai-sdk/otel';
 * import { createAiSdkContinuity } from 'agent-continuity/ai-sdk';
 *
 * const continuity = createAiSdkContinuity({ projectDir });
 * await generateText({
 *   model, runtimeContext: { sessionId },
 *   tools: { ...tools, ...continuity.tools({ tool, jsonSchema }, sessionId) },
 *   toolApproval: (o) => continuity.toolApproval(o),
 *   prepareStep: async ({ messages }) => tooLong(messages)
 *     ? { messages: await continuity.compact(sessionId, (instruction) => summarize(messages, instruction)) }
 *     : undefined,
 *   experimental_telemetry: { integrations: [new OpenTelemetry({ enrichSpan: (o) => continuity.enrichSpan(o) })] },
 * });
 * ```
 */
export type { AiSdkContinuity, AiSdkMessage } from './continuity.js';
export { createAiSdkContinuity, DEFAULT_SESSION_KEY, PREPARE_STEP_SIGNAL, RUNTIME } from './continuity.js';
export { RESTATE_TOOL_NAME } from '../in-process/continuity.js';
export type { AiSdkContinuityOptions, AiSdkFactories, AiSdkToolApprovalStatus } from './types.js';
export type { ToolCallView, ToolDescription, TracerProviderLike } from '../in-process/types.js';
