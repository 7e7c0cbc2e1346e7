/**
 * The Vercel AI SDK recipe: the AI SDK (`ai` 7) has no compaction of its own, so an application
 * that shortens history does it in `prepareStep` (a `messages` override carries forward to later
 * steps). This is a thin translation onto the in-process core (../in-process) for that, read from
 * `ai` 7.0.185 and `@ai-sdk/otel` 1.0.185 as shipped and observed in test/frameworks/ai-sdk:
 *
 * | AI SDK | core | what the recipe does |
 * | --- | --- | --- |
 * | `prepareStep` → {@link AiSdkContinuity.compact} | capture, `pre` + `compacted` | captures before the application's summarizer runs, gives it the sentence asking to keep the named decisions, records the boundary, appends the request to restate |
 * | tool `continuity_restate` ({@link AiSdkContinuity.tools}) | restated | post snapshot, classification, gate cache, post span |
 * | `toolApproval` ({@link AiSdkContinuity.toolApproval}) | `tool` | `deny` → `{ type: 'denied', reason }`; `ask` → `{ type: 'user-approval', reason }` (the AI SDK's own approval request); no objection → `not-applicable` |
 * | `@ai-sdk/otel` `enrichSpan` ({@link AiSdkContinuity.enrichSpan}) | session | `session.id` on every AI SDK span, from the run's `runtimeContext` |
 *
 * The session key: the AI SDK has no session; the application names one in `runtimeContext`
 * (`sessionId` by default). `@ai-sdk/otel` writes no session attribute of its own (`ai` 7 dropped
 * `experimental_telemetry.metadata`, which older lines wrote as `ai.telemetry.metadata.<key>`), and
 * telemetry integrations receive only the `runtimeContext` keys listed in
 * `experimental_telemetry.includeRuntimeContext` (without `{ sessionId: true }` no span got it,
 * observed). `enrichSpan` then puts `session.id` where the ContinuityProcessor and the service
 * read it.
 */
import type { RestateResult } from '../../adapters/core/restatement.js';
import { ATTR_SESSION_ID } from '../../otel/semconv.js';
import {
  createFrameworkContinuity,
  type FrameworkContinuity,
  RESTATE_TOOL_DESCRIPTION,
  RESTATE_TOOL_NAME,
  restateToolParameters,
} from '../in-process/continuity.js';
import type { AiSdkContinuityOptions, AiSdkFactories, AiSdkToolApprovalStatus } from './types.js';

/** The runtime name on every span and ledger record of this recipe. */
export const RUNTIME = 'ai-sdk';
/** The compaction signal recorded for a `prepareStep` compaction. */
export const PREPARE_STEP_SIGNAL = 'prepare_step';
/** The `runtimeContext` key holding the session id, by default. */
export const DEFAULT_SESSION_KEY = 'sessionId';

/** A message of the AI SDK (`ModelMessage`), structurally. */
export interface AiSdkMessage {
  role: string;
  content: unknown;
  [key: string]: unknown;
}

/** What {@link createAiSdkContinuity} returns. */
export interface AiSdkContinuity {
  /**
   * Shortens history in `prepareStep`: captures the decisions, calls `summarize` with the sentence
   * asking the summary to keep them (put it in the summarizer's prompt), records the boundary, and
   * returns `summarize`'s messages with the request to restate appended. A `summarize` that throws
   * records nothing and throws to the caller.
   */
  compact<M extends AiSdkMessage>(
    sessionId: string,
    summarize: (instruction: string) => Promise<M[]>,
  ): Promise<Array<M | { role: 'user'; content: string }>>;
  /** `{ continuity_restate }` for `tools`, bound to `sessionId`. Give `{ tool, jsonSchema }` from `ai`. */
  tools<T>(ai: AiSdkFactories<T>, sessionId: string): Record<string, T>;
  /** For `generateText({ toolApproval })`: the gate, per tool call, from `runtimeContext`'s session. */
  toolApproval(options: {
    toolCall: { toolName: string; input?: unknown };
    runtimeContext?: unknown;
  }): Promise<AiSdkToolApprovalStatus>;
  /**
   * For `new OpenTelemetry({ enrichSpan })` of `@ai-sdk/otel`: `session.id` on every span of a
   * call whose `runtimeContext` names the session (`@ai-sdk/otel` 1.0.185 hands it to each span of
   * the call: operation, step, model call, tool). A summarizer's own `generateText` in `compact`
   * needs the same `runtimeContext` for its spans to carry it.
   */
  enrichSpan(options: {
    runtimeContext?: Record<string, unknown> | undefined;
  }): Record<string, string> | undefined;
  /** Records a restatement of `sessionId` (what the tool does). Throws `InputError` for bad input. */
  restate(sessionId: string, decisions: Record<string, unknown>): Promise<RestateResult>;
}

/** Creates the recipe's helpers for one application. */
export function createAiSdkContinuity(options: AiSdkContinuityOptions = {}): AiSdkContinuity {
  const c = createFrameworkContinuity(RUNTIME, options);
  const key = options.sessionKey ?? DEFAULT_SESSION_KEY;
  return new AiSdkRecipe(c, key);
}

class AiSdkRecipe implements AiSdkContinuity {
  constructor(
    private readonly _c: FrameworkContinuity,
    private readonly _key: string,
  ) {}

  private _session(runtimeContext: unknown): string | undefined {
    const id =
      typeof runtimeContext === 'object' && runtimeContext !== null
        ? (runtimeContext as Record<string, unknown>)[this._key]
        : undefined;
    return this._c.isSessionId(id) ? id : undefined;
  }

  async compact<M extends AiSdkMessage>(
    sessionId: string,
    summarize: (instruction: string) => Promise<M[]>,
  ): Promise<Array<M | { role: 'user'; content: string }>> {
    const recordable = this._c.isSessionId(sessionId);
    if (!recordable)
      this._c.warn(`${PREPARE_STEP_SIGNAL}: the session id is not an opaque identifier; nothing recorded`);
    const held = recordable ? this._c.capture(sessionId, 'auto') : undefined;
    const messages = await summarize(held?.instruction ?? '');
    if (!held) return messages;
    const done = await this._c.compacted(sessionId, { signal: PREPARE_STEP_SIGNAL, held, trigger: 'auto' });
    return done?.context ? [...messages, { role: 'user', content: done.context }] : messages;
  }

  tools<T>(ai: AiSdkFactories<T>, sessionId: string): Record<string, T> {
    return {
      [RESTATE_TOOL_NAME]: ai.tool({
        description: RESTATE_TOOL_DESCRIPTION,
        inputSchema: ai.jsonSchema(restateToolParameters()),
        execute: (input: unknown) => this._c.restateText(sessionId, input),
      }),
    };
  }

  async toolApproval(options: {
    toolCall: { toolName: string; input?: unknown };
    runtimeContext?: unknown;
  }): Promise<AiSdkToolApprovalStatus> {
    const answer = await this._c.gate(this._session(options.runtimeContext), {
      name: options.toolCall?.toolName ?? '',
      input: options.toolCall?.input,
    });
    if (answer.verdict === 'deny') return { type: 'denied', reason: answer.reason };
    if (answer.verdict === 'ask') return { type: 'user-approval', reason: answer.reason };
    return 'not-applicable';
  }

  enrichSpan(options: {
    runtimeContext?: Record<string, unknown> | undefined;
  }): Record<string, string> | undefined {
    const id = this._session(options?.runtimeContext);
    return id ? { [ATTR_SESSION_ID]: id } : undefined;
  }

  restate(sessionId: string, decisions: Record<string, unknown>): Promise<RestateResult> {
    return this._c.restate(sessionId, decisions);
  }
}
