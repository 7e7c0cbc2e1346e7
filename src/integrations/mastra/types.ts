/**
 * The parts of Mastra (`@mastra/core` 1.x, `@mastra/memory` 1.x) the integration touches, typed
 * structurally so that this package needs neither Mastra nor its types: they are the
 * application's (optional peers), and importing `agent-continuity/mastra` never loads them.
 * Subsets of what `@mastra/core` 1.71.0 and `@mastra/memory` 1.31.0 ship
 * (`ObserveHooks`, `ObserveHookContext`, `RequireToolApprovalFn`, `ToolExecutionContext`).
 */
import type { IntegrationOptions } from '../in-process/types.js';

/** The call context of observational memory's config-level hooks (`ObserveHookContext`). */
export interface MastraObserveHookContext {
  threadId?: string;
  resourceId?: string;
  trigger?: 'manual' | 'turn-sync' | 'async-buffer';
}

/** The lifecycle and transform hooks the integration sets (`ObserveHooks`, the ones used). */
export interface MastraObserveHooks {
  onObservationStart?: (info?: MastraObserveHookContext) => void | Promise<void>;
  onObservationEnd?: (result: { error?: Error } & MastraObserveHookContext) => void | Promise<void>;
  onReflectionStart?: (info?: MastraObserveHookContext) => void | Promise<void>;
  onReflectionEnd?: (result: { error?: Error } & MastraObserveHookContext) => void | Promise<void>;
  afterObservation?: (
    input: { observations: string } & MastraObserveHookContext,
    // biome-ignore lint/suspicious/noConfusingVoidType: Mastra's own signature (undefined passes the text through).
  ) => void | { observations: string } | Promise<void | { observations: string }>;
  [key: string]: unknown;
}

/** Observational memory's options, the fields the integration merges into. */
export interface MastraObservationalMemoryOptions {
  hooks?: MastraObserveHooks;
  hookExecution?: 'non-blocking' | 'await';
  observation?: { instruction?: string; [key: string]: unknown };
  [key: string]: unknown;
}

/** A Mastra tool (`createTool`'s result), the field the gate wraps. */
export interface MastraToolLike {
  id?: string;
  // biome-ignore lint/suspicious/noExplicitAny: Mastra's own input and context types.
  execute?: (inputData: any, context?: any) => Promise<unknown>;
  [key: string]: unknown;
}

/** Mastra's `createTool`, the fields the restatement tool gives it; returns the tool (`T`). */
export type MastraCreateTool<T> = (definition: {
  id: string;
  description: string;
  inputSchema: unknown;
  execute: (inputData: unknown, context?: unknown) => Promise<string>;
}) => T;

/** Options of {@link createMastraContinuity}. */
export interface MastraContinuityOptions extends IntegrationOptions {}
