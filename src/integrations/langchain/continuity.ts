/**
 * The LangChain JS integration: `createAgent` with `summarizationMiddleware`, as a thin translation
 * onto the in-process core (../in-process). What `langchain` 1.5.14 does, read from its shipped
 * code and observed in test/frameworks/langchain:
 *
 * - `summarizationMiddleware` runs in `beforeModel`: when its trigger is met it asks its model for
 *   a summary of the older messages (the prompt is its `summaryPrompt`, overridable per run through
 *   the run's `context.summaryPrompt`) and returns `RemoveMessage(REMOVE_ALL_MESSAGES)`, a
 *   `HumanMessage` tagged `additional_kwargs.lc_source: "summarization"` and the kept messages.
 * - `wrapToolCall(request, handler)` of a middleware runs around every tool call;
 *   `humanInTheLoopMiddleware` interrupts in `afterModel` for the tools of its `interruptOn` whose
 *   `when(request)` (awaited) is true.
 *
 * | LangChain | core | what the integration does |
 * | --- | --- | --- |
 * | the wrapped summarization's `beforeModel`, before it runs | capture | the task record's digests; the summary prompt of this run gets the sentence asking to keep the named decisions |
 * | it returned the `lc_source: "summarization"` message | `pre` + `compacted` | records the boundary; appends a user message asking the agent to restate with `continuity_restate` |
 * | tool `continuity_restate` (the middleware's own tool) | restated | post snapshot, classification, gate cache, post span |
 * | `wrapToolCall` | `tool` | `deny` → an error `ToolMessage` with the words, the tool not run; `ask` → runs only when a human confirmed it in `humanInTheLoopMiddleware` (its `when` is {@link LangChainContinuity.interruptWhen}), else an error `ToolMessage` |
 */

import type { RestateResult } from '../../adapters/core/restatement.js';
import {
  createFrameworkContinuity,
  type FrameworkContinuity,
  RESTATE_TOOL_DESCRIPTION,
  RESTATE_TOOL_NAME,
  restateToolParameters,
} from '../in-process/continuity.js';
import type {
  LangChainContinuityOptions,
  LangChainMiddlewareLike,
  LangChainRuntimeLike,
  LangChainToolCallRequest,
} from './types.js';

/** The runtime name on every span and ledger record of this integration. */
export const RUNTIME = 'langchain';
/** The middleware's name in the agent. */
export const MIDDLEWARE_NAME = 'ContinuityMiddleware';
/** The compaction signal recorded for a summarization (the summary message's `lc_source`). */
export const SUMMARIZATION_SIGNAL = 'summarization';
/** Tool calls a human confirmed through `humanInTheLoopMiddleware`, remembered until they run. */
const MAX_CONFIRMED = 1000;

/** What {@link createLangChainContinuity} returns. */
export interface LangChainContinuity<M = unknown> {
  /**
   * The continuity middleware for `createAgent({ middleware })`: the restatement tool and the gate
   * (`wrapToolCall`). Put it after the summarization.
   */
  readonly middleware: M;
  /**
   * `summarizationMiddleware` built with `options`, wrapped: before it summarises, the task
   * decisions are captured and its prompt asks the summary to keep them; after, the boundary is
   * recorded and the agent asked to restate. Give LangChain's own factory.
   */
  summarization<S extends LangChainMiddlewareLike, O extends { summaryPrompt?: string }>(
    factory: (options: O) => S,
    options: O,
  ): S;
  /**
   * For `humanInTheLoopMiddleware({ interruptOn: { <tool>: { allowedDecisions, when } } })`: true
   * when the continuity gate wants a human to confirm this call (it then runs once approved).
   */
  interruptWhen(request: LangChainToolCallRequest): Promise<boolean>;
  /** Records a restatement of `sessionId` (what the tool does). Throws `InputError` for bad input. */
  restate(sessionId: string, decisions: Record<string, unknown>): Promise<RestateResult>;
}

/** Creates the integration for one application (any number of agents and threads). */
export function createLangChainContinuity<M = unknown>(
  options: LangChainContinuityOptions<M>,
): LangChainContinuity<M> {
  return new LangChainIntegration(options);
}

function threadId(configurable: Record<string, unknown> | undefined): string | undefined {
  const id = configurable?.thread_id;
  return typeof id === 'string' ? id : undefined;
}

/** The prompt with the sentence before its `<messages>` block (or at its end), `{messages}` kept. */
function withInstruction(prompt: string, instruction: string): string {
  if (!instruction) return prompt;
  const at = prompt.lastIndexOf('<messages>');
  return at === -1
    ? `${prompt}\n\n${instruction}\n`
    : `${prompt.slice(0, at)}${instruction}\n\n${prompt.slice(at)}`;
}

/** The default of the summarization's `summaryPrompt` (its context schema's default), when readable. */
function defaultSummaryPrompt(m: LangChainMiddlewareLike): string | undefined {
  try {
    const schema = m.contextSchema as { safeParse?: (v: unknown) => { data?: { summaryPrompt?: unknown } } };
    const p = schema?.safeParse?.({})?.data?.summaryPrompt;
    return typeof p === 'string' ? p : undefined;
  } catch {
    return undefined;
  }
}

function isSummary(m: unknown): boolean {
  const kw = (m as { additional_kwargs?: { lc_source?: unknown } } | undefined)?.additional_kwargs;
  return kw?.lc_source === SUMMARIZATION_SIGNAL;
}

class LangChainIntegration<M> implements LangChainContinuity<M> {
  readonly middleware: M;
  private readonly _c: FrameworkContinuity;
  private readonly _session: (configurable: Record<string, unknown> | undefined) => string | undefined;
  private readonly _confirmed = new Set<string>();
  private readonly _ToolMessage: LangChainContinuityOptions['langchain']['ToolMessage'];

  constructor(options: LangChainContinuityOptions<M>) {
    this._c = createFrameworkContinuity(RUNTIME, options);
    this._session = options.sessionId ?? threadId;
    this._ToolMessage = options.langchain.ToolMessage;
    const lc = options.langchain;
    const restate = lc.tool(
      async (input: unknown, config?: { configurable?: Record<string, unknown> }) =>
        this._c.restateText(this._sessionOf(config?.configurable), input),
      { name: RESTATE_TOOL_NAME, description: RESTATE_TOOL_DESCRIPTION, schema: restateToolParameters() },
    );
    this.middleware = lc.createMiddleware({
      name: MIDDLEWARE_NAME,
      tools: [restate],
      wrapToolCall: (request: LangChainToolCallRequest, handler: (r: LangChainToolCallRequest) => unknown) =>
        this._wrapToolCall(request, handler),
    });
  }

  private _sessionOf(configurable: Record<string, unknown> | undefined): string | undefined {
    try {
      return this._session(configurable);
    } catch (e) {
      this._c.warn(`sessionId: ${(e as Error).message}`);
      return undefined;
    }
  }

  summarization<S extends LangChainMiddlewareLike, O extends { summaryPrompt?: string }>(
    factory: (options: O) => S,
    options: O,
  ): S {
    const inner = factory(options);
    const original = inner.beforeModel;
    const hook: ((state: unknown, runtime: LangChainRuntimeLike) => unknown) | undefined =
      typeof original === 'function' ? original : original?.hook;
    if (typeof hook !== 'function') {
      this._c.warn(`${inner.name}: no beforeModel hook to wrap; summarizations are not recorded`);
      return inner;
    }
    const fallback = defaultSummaryPrompt(inner);
    const wrapped = async (state: { messages?: unknown[] }, runtime: LangChainRuntimeLike) => {
      const sessionId = this._sessionOf(runtime?.configurable);
      if (!this._c.isSessionId(sessionId)) return hook.call(inner, state, runtime);
      const held = this._c.capture(sessionId, 'auto');
      // The prompt this run would use (the run's own, else the middleware's), with the sentence.
      const given = runtime?.context?.summaryPrompt;
      const base =
        typeof given === 'string' && given !== fallback
          ? given
          : (options.summaryPrompt ?? given ?? fallback);
      const ctx =
        typeof base === 'string'
          ? {
              ...runtime,
              context: { ...runtime?.context, summaryPrompt: withInstruction(base, held.instruction) },
            }
          : runtime;
      const result = (await hook.call(inner, state, ctx)) as { messages?: unknown[] } | undefined;
      if (!Array.isArray(result?.messages) || !result.messages.some(isSummary)) return result;
      const done = await this._c.compacted(sessionId, {
        signal: SUMMARIZATION_SIGNAL,
        held,
        trigger: 'auto',
      });
      if (!done?.context) return result;
      // Message-like objects are coerced by the messages reducer, as LangChain's own inputs are.
      return { ...result, messages: [...result.messages, { role: 'user', content: done.context }] };
    };
    const beforeModel = typeof original === 'function' ? wrapped : { ...original, hook: wrapped };
    return { ...inner, beforeModel };
  }

  async interruptWhen(request: LangChainToolCallRequest): Promise<boolean> {
    const answer = await this._gate(request);
    if (answer.verdict !== 'ask') return false;
    const id = request.toolCall?.id;
    if (id) {
      this._confirmed.add(id);
      if (this._confirmed.size > MAX_CONFIRMED)
        this._confirmed.delete(this._confirmed.values().next().value!);
    }
    return true;
  }

  private _gate(request: LangChainToolCallRequest) {
    return this._c.gate(this._sessionOf(request.runtime?.configurable), {
      name: request.toolCall?.name ?? '',
      input: request.toolCall?.args,
    });
  }

  private async _wrapToolCall(
    request: LangChainToolCallRequest,
    handler: (r: LangChainToolCallRequest) => unknown,
  ): Promise<unknown> {
    const answer = await this._gate(request);
    const id = request.toolCall?.id ?? '';
    if (answer.verdict === 'allow') return handler(request);
    if (answer.verdict === 'ask' && this._confirmed.delete(id)) return handler(request);
    const reason =
      answer.verdict === 'ask'
        ? `${answer.reason}\nThis tool call was not run: a human must confirm it (humanInTheLoopMiddleware with the continuity interruptWhen), or the decisions must be restated first.`
        : answer.reason;
    return new this._ToolMessage({
      content: reason,
      tool_call_id: id,
      name: request.toolCall?.name,
      status: 'error',
    });
  }

  restate(sessionId: string, decisions: Record<string, unknown>): Promise<RestateResult> {
    return this._c.restate(sessionId, decisions);
  }
}
