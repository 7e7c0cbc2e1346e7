/**
 * The Mastra integration: observational memory's Observer and Reflector replace raw history with
 * an observation log, so each observation or reflection cycle is a compaction. A thin translation
 * onto the in-process core (../in-process). What `@mastra/memory` 1.31.0 / `@mastra/core` 1.71.0
 * do, read from their shipped code and observed in test/frameworks/mastra:
 *
 * | Mastra | core | what the integration does |
 * | --- | --- | --- |
 * | `observation.instruction` | — | the sentence asking the Observer to keep the named decisions (names read when the options are built) |
 * | `onObservationStart` / `onReflectionStart` (awaited: `hookExecution: 'await'`) | capture, `pre` | the task record's digests, held pending |
 * | `afterObservation` (a transform, always awaited) | `compacted` | records the boundary and appends the request to restate to the observations that replace history |
 * | `onObservationEnd` (when no observations came) / `onReflectionEnd`, without `error` | `compacted` | records the boundary |
 * | `requireToolApproval` ({@link MastraContinuity.requireToolApproval}) | `tool` | true when the gate asks: Mastra suspends the call for a human |
 * | the tools' `execute` ({@link MastraContinuity.gateTools}) | `tool` | `deny` → the reason is the tool's result, the tool does not run |
 *
 * The session is the Mastra thread (`threadId`).
 */
import { summaryInstruction } from '../../adapters/core/messages.js';
import type { RestateResult } from '../../adapters/core/restatement.js';
import {
  createFrameworkContinuity,
  type FrameworkContinuity,
  type HeldCapture,
  RESTATE_TOOL_DESCRIPTION,
  RESTATE_TOOL_NAME,
  restateToolParameters,
} from '../in-process/continuity.js';
import type {
  MastraContinuityOptions,
  MastraCreateTool,
  MastraObservationalMemoryOptions,
  MastraObserveHookContext,
  MastraToolLike,
} from './types.js';

/** The runtime name on every span and ledger record of this integration. */
export const RUNTIME = 'mastra';
/** The compaction signals recorded for an observation and a reflection cycle. */
export const SIGNALS = Object.freeze({ observation: 'om_observation', reflection: 'om_reflection' });

/** What {@link createMastraContinuity} returns. */
export interface MastraContinuity {
  /**
   * `options` for `new Memory({ options: { observationalMemory } })` with the integration's hooks
   * chained before yours, `hookExecution: 'await'` and the Observer's instruction extended.
   */
  observationalMemory<O extends MastraObservationalMemoryOptions>(options: O): O;
  /** For `agent.generate(…, { requireToolApproval })` / `stream` (an execution option): true when the gate asks a human. */
  requireToolApproval(ctx: {
    toolName: string;
    args?: unknown;
    requestContext?: Record<string, unknown>;
  }): Promise<boolean>;
  /** The tools with their `execute` gated: a denied call returns the reason instead of running. */
  gateTools<T extends Record<string, MastraToolLike>>(tools: T): T;
  /** The restatement tool, built with Mastra's `createTool`. */
  restateTool<T>(createTool: MastraCreateTool<T>, inputSchema: unknown): T;
  /** The JSON Schema of the restatement tool's input (give it to your schema library when it needs one). */
  restateToolParameters(): Record<string, unknown>;
  /** Records a restatement of `sessionId` (what the tool does). Throws `InputError` for bad input. */
  restate(sessionId: string, decisions: Record<string, unknown>): Promise<RestateResult>;
}

/** Creates the integration for one application (any number of agents and threads). */
export function createMastraContinuity(options: MastraContinuityOptions = {}): MastraContinuity {
  return new MastraIntegration(createFrameworkContinuity(RUNTIME, options));
}

/** The thread of a tool call (`context.agent.threadId`), or of an approval's request context. */
function threadOf(context: unknown): string | undefined {
  const agent = (context as { agent?: { threadId?: unknown } } | undefined)?.agent;
  return typeof agent?.threadId === 'string' ? agent.threadId : undefined;
}

class MastraIntegration implements MastraContinuity {
  /** Captures held between a cycle's start and its end, by thread. */
  private readonly _held = new Map<string, HeldCapture>();
  private readonly _requests = new Map<string, string>();

  constructor(private readonly _c: FrameworkContinuity) {}

  observationalMemory<O extends MastraObservationalMemoryOptions>(options: O): O {
    const user = options.hooks ?? {};
    const c = this._c;
    const names = c.decisionNames();
    const instruction = names.length > 0 ? summaryInstruction(names) : '';
    const start = (signal: string) => async (info?: MastraObserveHookContext) => {
      const id = info?.threadId;
      if (c.isSessionId(id)) {
        const held = c.capture(id, 'auto');
        this._held.set(`${signal}:${id}`, held);
        await c.preCompaction(held);
      }
    };
    const end = (signal: string) => async (result: { error?: Error } & MastraObserveHookContext) => {
      const id = result?.threadId;
      if (!c.isSessionId(id)) return;
      const held = this._held.get(`${signal}:${id}`);
      this._held.delete(`${signal}:${id}`);
      if (result.error || !held) return;
      await c.compacted(id, { signal, trigger: 'auto' });
    };
    const chain =
      <A>(ours: (a: A) => Promise<void>, theirs: ((a: A) => unknown) | undefined) =>
      async (a: A) => {
        await ours(a);
        await theirs?.(a);
      };
    const hooks = {
      ...user,
      onObservationStart: chain(start(SIGNALS.observation), user.onObservationStart),
      onObservationEnd: chain(end(SIGNALS.observation), user.onObservationEnd),
      onReflectionStart: chain(start(SIGNALS.reflection), user.onReflectionStart),
      onReflectionEnd: chain(end(SIGNALS.reflection), user.onReflectionEnd),
      // The observations are final here, before they are persisted and replace history; this
      // transform is awaited on every path, while the end hook may fire after the agent's next
      // step has asked for its tools (observed on 1.31.0), so the boundary is recorded here.
      afterObservation: async (input: { observations: string } & MastraObserveHookContext) => {
        const theirs = (await user.afterObservation?.(input)) ?? undefined;
        const text = theirs?.observations ?? input.observations;
        const id = input.threadId;
        if (!c.isSessionId(id)) return theirs;
        const held = this._held.get(`${SIGNALS.observation}:${id}`);
        this._held.delete(`${SIGNALS.observation}:${id}`);
        if (held) await c.compacted(id, { signal: SIGNALS.observation, trigger: 'auto' });
        return { observations: `${text}\n\n${this._request(id)}` };
      },
    };
    const observation = { ...(options.observation ?? {}) };
    if (instruction) {
      observation.instruction = observation.instruction
        ? `${observation.instruction}\n${instruction}`
        : instruction;
    }
    return { ...options, hooks, hookExecution: 'await', observation };
  }

  /** The request to restate, in the observations (names of the task record; the tool). */
  private _request(sessionId: string): string {
    let text = this._requests.get(sessionId);
    if (!text) {
      const names = this._c.decisionNames();
      const body = names.map((n) => `"${n}": <value as JSON>`).join(', ');
      text =
        `[continuity] This conversation's history was replaced by observations. Before your next consequential action, ` +
        `restate the task decisions (${names.map((n) => `"${n}"`).join(', ')}) from your own understanding with the tool ` +
        `${RESTATE_TOOL_NAME}: {"decisions": {${body}}}. Until then the continuity gate holds consequential tools.`;
      this._requests.set(sessionId, text);
    }
    return text;
  }

  async requireToolApproval(ctx: {
    toolName: string;
    args?: unknown;
    requestContext?: Record<string, unknown>;
  }): Promise<boolean> {
    // The thread as 1.71.0 hands it (observed): `MastraMemory.thread.id` of the request context
    // (a plain object; a `RequestContext` is read with `get`).
    const rc = ctx.requestContext as { get?: (key: string) => unknown; MastraMemory?: unknown } | undefined;
    const memory = (typeof rc?.get === 'function' ? rc.get('MastraMemory') : rc?.MastraMemory) as
      | { thread?: { id?: unknown } }
      | undefined;
    const id = memory?.thread?.id;
    const answer = await this._c.gate(typeof id === 'string' ? id : undefined, {
      name: ctx.toolName,
      input: ctx.args,
    });
    return answer.verdict === 'ask';
  }

  gateTools<T extends Record<string, MastraToolLike>>(tools: T): T {
    const out: Record<string, MastraToolLike> = {};
    for (const [name, t] of Object.entries(tools)) {
      const execute = t.execute;
      if (typeof execute !== 'function') {
        out[name] = t;
        continue;
      }
      out[name] = {
        ...t,
        execute: async (inputData: unknown, context?: unknown) => {
          const answer = await this._c.gate(threadOf(context), { name: t.id ?? name, input: inputData });
          // `ask` reached execute only through Mastra's approval (requireToolApproval): a human approved it.
          if (answer.verdict === 'deny') return answer.reason;
          return execute.call(t, inputData, context);
        },
      };
    }
    return out as T;
  }

  restateTool<T>(createTool: MastraCreateTool<T>, inputSchema: unknown): T {
    return createTool({
      id: RESTATE_TOOL_NAME,
      description: RESTATE_TOOL_DESCRIPTION,
      inputSchema,
      execute: (inputData, context) => this._c.restateText(threadOf(context), inputData),
    });
  }

  restateToolParameters(): Record<string, unknown> {
    return restateToolParameters();
  }

  restate(sessionId: string, decisions: Record<string, unknown>): Promise<RestateResult> {
    return this._c.restate(sessionId, decisions);
  }
}
