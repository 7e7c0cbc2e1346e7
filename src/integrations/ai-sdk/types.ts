/**
 * The parts of the Vercel AI SDK (`ai` 7) the recipe touches, typed structurally so that this
 * package needs neither the AI SDK nor its types: `ai` is the application's (an optional peer),
 * and importing `agent-continuity/ai-sdk` never loads it. Subsets of what `ai` 7.0.185 ships
 * (`ToolApprovalStatus`, `tool`, `jsonSchema`).
 */
import type { IntegrationOptions } from '../in-process/types.js';

/** What `toolApproval` answers (the AI SDK's `ToolApprovalStatus`, the forms the recipe uses). */
export type AiSdkToolApprovalStatus =
  | 'not-applicable'
  | { type: 'denied'; reason: string }
  | { type: 'user-approval'; reason: string };

/** `{ tool, jsonSchema }` from `ai`, passed in by the application. `T` is the AI SDK's `Tool`. */
export interface AiSdkFactories<T = unknown> {
  tool(definition: {
    description: string;
    inputSchema: unknown;
    execute: (input: unknown) => Promise<string>;
  }): T;
  jsonSchema(schema: Record<string, unknown>): unknown;
}

/** Options of {@link createAiSdkContinuity}. */
export interface AiSdkContinuityOptions extends IntegrationOptions {
  /** The `runtimeContext` key that holds the session id. Default `sessionId`. */
  sessionKey?: string;
}
