/**
 * The OpenAI Agents JS integration, as a thin translation onto the in-process core
 * (../in-process). What `@openai/agents` 0.20.0 does, read from its shipped code and observed in
 * test/frameworks/openai-agents:
 *
 * - `OpenAIResponsesCompactionSession` decides in `runCompaction` (called by the runner after each
 *   persisted turn) whether to compact (`shouldTriggerCompaction`, 10 candidate items by default),
 *   calls `POST /responses/compact`, and replaces the session's history with its output; it
 *   answers `null` when it did not compact. `responses.compact` takes no instructions, so the
 *   summary cannot be asked to keep anything: the restatement after is what verifies it.
 * - `needsApproval(runContext, input, callId)` of a tool is asked when the model calls it; `true`
 *   interrupts the run (`result.interruptions`) until `state.approve` / `state.reject`. A tool's
 *   `inputGuardrails` run just before it executes (after an approval); `rejectContent` gives the
 *   model a message instead of running it.
 *
 * | OpenAI Agents | core | what the integration does |
 * | --- | --- | --- |
 * | stream event `compaction_item_created` ({@link OpenAIAgentsContinuity.watchRun}) | capture at the run's start, `pre` + `compacted` | server-side compaction: records the boundary; the gate's answer asks the agent to restate |
 * | `runCompaction` of the watched session ({@link OpenAIAgentsContinuity.watchSession}) | capture, `pre` + `compacted` | captures before it runs; when it compacted, records the boundary and adds the request to restate to the session |
 * | tool `continuity_restate` ({@link OpenAIAgentsContinuity.restateTool}) | restated | post snapshot, classification, gate cache, post span |
 * | `needsApproval` ({@link OpenAIAgentsContinuity.needsApproval}) | `tool` | `true` when the gate asks a human |
 * | `inputGuardrails` ({@link OpenAIAgentsContinuity.inputGuardrail}) | `tool` | `deny` → `rejectContent` with the words; `ask` → allowed only once a human approved the call through `needsApproval`, else `rejectContent` |
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
  OpenAIAgentsCompactionSessionLike,
  OpenAIAgentsContinuityOptions,
  OpenAIAgentsRunContextLike,
  OpenAIAgentsToolFactory,
  OpenAIAgentsToolInputGuardrail,
} from './types.js';

/** The runtime name on every span and ledger record of this integration. */
export const RUNTIME = 'openai-agents';
/** The compaction signal recorded for a `runCompaction` that compacted. */
export const RESPONSES_COMPACT_SIGNAL = 'responses_compact';
/** The compaction signal recorded for a server-side compaction (`compaction_item_created`). */
export const COMPACTION_ITEM_SIGNAL = 'compaction_item_created';
/** The guardrail's name. */
export const GUARDRAIL_NAME = 'continuity_gate';
/** Tool calls a human approved through `needsApproval`, remembered until they run. */
const MAX_APPROVED = 1000;

/** What {@link createOpenAIAgentsContinuity} returns. */
export interface OpenAIAgentsContinuity {
  /**
   * Watches a compaction session (wraps its `runCompaction` in place, nothing else changes) and
   * returns it. `sessionId` defaults to the session's own `getSessionId()`.
   */
  watchSession<S extends OpenAIAgentsCompactionSessionLike>(session: S, sessionId?: string): S;
  /**
   * Watches a streamed run (`run(agent, input, { stream: true })`) for server-side compaction
   * (`modelSettings.contextManagement`): the task record is captured when the run starts, and a
   * `compaction_item_created` event records the boundary with that capture. Yields every event
   * unchanged. The agent learns to restate from the gate's answer at its next gated tool call.
   */
  watchRun<E>(sessionId: string, events: AsyncIterable<E>): AsyncGenerator<E, void, undefined>;
  /** The restatement tool, built with the SDK's `tool`. */
  restateTool<T>(tool: OpenAIAgentsToolFactory<T>): T;
  /** A tool's `needsApproval`: true when the continuity gate wants a human to confirm the call. */
  needsApproval(
    toolName: string,
  ): (runContext: OpenAIAgentsRunContextLike, input: unknown, callId?: string) => Promise<boolean>;
  /** The gate as a tool input guardrail (put it in each gated tool's `inputGuardrails`). */
  readonly inputGuardrail: OpenAIAgentsToolInputGuardrail;
  /** Records a restatement of `sessionId` (what the tool does). Throws `InputError` for bad input. */
  restate(sessionId: string, decisions: Record<string, unknown>): Promise<RestateResult>;
}

/** Creates the integration for one application (any number of agents and sessions). */
export function createOpenAIAgentsContinuity(
  options: OpenAIAgentsContinuityOptions = {},
): OpenAIAgentsContinuity {
  return new OpenAIAgentsIntegration(
    createFrameworkContinuity(RUNTIME, options),
    options.sessionKey ?? 'sessionId',
  );
}

class OpenAIAgentsIntegration implements OpenAIAgentsContinuity {
  readonly inputGuardrail: OpenAIAgentsToolInputGuardrail;
  private readonly _approved = new Set<string>();

  constructor(
    private readonly _c: FrameworkContinuity,
    private readonly _key: string,
  ) {
    this.inputGuardrail = {
      type: 'tool_input',
      name: GUARDRAIL_NAME,
      run: async ({ context, toolCall }) => {
        const answer = await this._c.gate(this._session(context), {
          name: toolCall?.name ?? '',
          input: parseArguments(toolCall?.arguments),
        });
        if (answer.verdict === 'allow') return { behavior: { type: 'allow' } };
        if (answer.verdict === 'ask' && toolCall?.callId && this._approved.delete(toolCall.callId))
          return { behavior: { type: 'allow' } };
        const message =
          answer.verdict === 'ask'
            ? `${answer.reason}\nThis tool call was not run: a human must approve it (the tool's needsApproval with the continuity gate), or the decisions must be restated first.`
            : answer.reason;
        return { behavior: { type: 'rejectContent', message } };
      },
    };
  }

  private _session(runContext: OpenAIAgentsRunContextLike | undefined): string | undefined {
    const ctx = runContext?.context;
    const id =
      typeof ctx === 'object' && ctx !== null ? (ctx as Record<string, unknown>)[this._key] : undefined;
    return this._c.isSessionId(id) ? id : undefined;
  }

  watchSession<S extends OpenAIAgentsCompactionSessionLike>(session: S, sessionId?: string): S {
    const original = session.runCompaction.bind(session);
    const c = this._c;
    session.runCompaction = async (...args: unknown[]) => {
      let id = sessionId;
      try {
        id ??= await session.getSessionId();
      } catch (e) {
        c.warn(`getSessionId: ${(e as Error).message}`);
      }
      const held = c.isSessionId(id) ? c.capture(id, 'auto') : undefined;
      const result = await original(...args);
      if (result === null || result === undefined || !held || !id) return result;
      const done = await c.compacted(id, { signal: RESPONSES_COMPACT_SIGNAL, held, trigger: 'auto' });
      if (done?.context) {
        try {
          await session.addItems([{ role: 'user', content: done.context }]);
        } catch (e) {
          c.warn(
            `${RESPONSES_COMPACT_SIGNAL}: the request to restate could not be added (${(e as Error).message})`,
          );
        }
      }
      return result;
    };
    return session;
  }

  async *watchRun<E>(sessionId: string, events: AsyncIterable<E>): AsyncGenerator<E, void, undefined> {
    const held = this._c.isSessionId(sessionId) ? this._c.capture(sessionId, 'auto') : undefined;
    for await (const e of events) {
      const ev = e as { type?: unknown; name?: unknown } | undefined;
      if (held && ev?.type === 'run_item_stream_event' && ev.name === COMPACTION_ITEM_SIGNAL) {
        await this._c.compacted(sessionId, { signal: COMPACTION_ITEM_SIGNAL, held, trigger: 'auto' });
      }
      yield e;
    }
  }

  restateTool<T>(tool: OpenAIAgentsToolFactory<T>): T {
    return tool({
      name: RESTATE_TOOL_NAME,
      description: RESTATE_TOOL_DESCRIPTION,
      parameters: restateToolParameters(),
      strict: false,
      execute: (input, runContext) => this._c.restateText(this._session(runContext), input),
    });
  }

  needsApproval(toolName: string) {
    return async (
      runContext: OpenAIAgentsRunContextLike,
      input: unknown,
      callId?: string,
    ): Promise<boolean> => {
      const answer = await this._c.gate(this._session(runContext), { name: toolName, input });
      if (answer.verdict !== 'ask') return false;
      if (callId) {
        this._approved.add(callId);
        if (this._approved.size > MAX_APPROVED) this._approved.delete(this._approved.values().next().value!);
      }
      return true;
    };
  }

  restate(sessionId: string, decisions: Record<string, unknown>): Promise<RestateResult> {
    return this._c.restate(sessionId, decisions);
  }
}

/** A tool call's JSON arguments, or `undefined` when they do not parse (the gate then reads the call by name). */
function parseArguments(text: string | undefined): unknown {
  if (typeof text !== 'string') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
