/**
 * The parts of OpenAI Agents JS (`@openai/agents` 0.20) the integration touches, typed
 * structurally so that this package needs neither the SDK nor its types: `@openai/agents` is the
 * application's (an optional peer), and importing `agent-continuity/openai-agents` never loads it.
 * Subsets of what `@openai/agents-core` / `@openai/agents-openai` 0.20.0 ship.
 */
import type { IntegrationOptions } from '../in-process/types.js';

/** The run context the SDK hands tools and guardrails (`RunContext`): the application's `context` among it. */
export interface OpenAIAgentsRunContextLike {
  context?: unknown;
  [key: string]: unknown;
}

/**
 * A session whose history the SDK compacts (`OpenAIResponsesCompactionSession`, or any session
 * with `runCompaction`): the runner calls `runCompaction` after each persisted turn; it answers
 * `null` when it did not compact.
 */
export interface OpenAIAgentsCompactionSessionLike {
  // biome-ignore lint/suspicious/noExplicitAny: the SDK's own arguments, passed through unchanged.
  runCompaction(...args: any[]): Promise<unknown>;
  getSessionId(): Promise<string>;
  addItems(items: unknown[]): Promise<void>;
}

/** A tool input guardrail (`ToolInputGuardrailDefinition`), as the SDK runs it. */
export interface OpenAIAgentsToolInputGuardrail {
  type: 'tool_input';
  name: string;
  run(data: {
    context: OpenAIAgentsRunContextLike;
    toolCall: { name: string; arguments: string; callId?: string };
  }): Promise<{ behavior: { type: 'allow' } | { type: 'rejectContent'; message: string } }>;
}

/** `tool` from `@openai/agents`, passed in by the application. `T` is the SDK's `FunctionTool`. */
export type OpenAIAgentsToolFactory<T = unknown> = (options: {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  strict: false;
  execute: (input: unknown, runContext?: OpenAIAgentsRunContextLike) => Promise<string>;
}) => T;

/** Options of {@link createOpenAIAgentsContinuity}. */
export interface OpenAIAgentsContinuityOptions extends IntegrationOptions {
  /** The key of the run's `context` (`run(agent, input, { context })`) holding the session id. Default `sessionId`. */
  sessionKey?: string;
}
