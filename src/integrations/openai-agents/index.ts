/**
 * agent-continuity/openai-agents: OpenAI Agents JS (`@openai/agents` 0.20) in process. It watches
 * an `OpenAIResponsesCompactionSession` (capture before `responses.compact`, the boundary recorded
 * when it compacted, the request to restate added to the session), offers the restatement tool,
 * and gates tools through `needsApproval` and a tool input guardrail. It never imports
 * `@openai/agents` (the application passes `tool` in) and loads `@opentelemetry/api` only when it
 * makes a span. Explicit exports only.
 *
 * ```js
 * import { Agent, run, tool } from '@openai/agents';
 * import { OpenAIResponsesCompactionSession } from '@openai/agents-openai';
 * import { createOpenAIAgentsContinuity } from 'agent-continuity/openai-agents';
 *
 * const continuity = createOpenAIAgentsContinuity({ projectDir });
 * const session = continuity.watchSession(new OpenAIResponsesCompactionSession({ model }), sessionId);
 * const writeFile = tool({ …, needsApproval: continuity.needsApproval('write_file'), inputGuardrails: [continuity.inputGuardrail] });
 * const agent = new Agent({ name, tools: [writeFile, continuity.restateTool(tool)] });
 * await run(agent, input, { session, context: { sessionId } });
 * ```
 */
export type { OpenAIAgentsContinuity } from './continuity.js';
export {
  createOpenAIAgentsContinuity,
  GUARDRAIL_NAME,
  RESPONSES_COMPACT_SIGNAL,
  RUNTIME,
} from './continuity.js';
export { RESTATE_TOOL_NAME } from '../in-process/continuity.js';
export type {
  OpenAIAgentsCompactionSessionLike,
  OpenAIAgentsContinuityOptions,
  OpenAIAgentsRunContextLike,
  OpenAIAgentsToolFactory,
  OpenAIAgentsToolInputGuardrail,
} from './types.js';
export type { ToolCallView, ToolDescription, TracerProviderLike } from '../in-process/types.js';
