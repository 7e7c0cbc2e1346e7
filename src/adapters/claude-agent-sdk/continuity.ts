/**
 * The Claude Agent SDK adapter: callbacks to spread into `options.hooks` (no process per event),
 * the restatement as an in-process MCP tool, and a helper for the query's stream messages, as a
 * thin translation onto the core (src/adapters/core). What fires when on 0.3.328 (observed with the
 * real package; docs/claude-agent-sdk.md):
 *
 * | SDK | core | what the adapter does |
 * | --- | --- | --- |
 * | `PreCompact` | `pre` | pre capture of the task record, pending; answers `systemMessage` asking the summary to keep the named decisions (names only). Never blocks the compaction |
 * | `SessionStart` (`compact`) | `compacted` | confirms the boundary (ledger + pre span); answers `additionalContext` asking the agent to restate, once per boundary |
 * | `PostCompact`, `InstructionsLoaded` (`compact`) | `compacted` | confirms it if nothing did yet, else joins it |
 * | stream `system/compact_boundary` ({@link AgentSdkContinuity.onMessage}) | `compacted` + `measured` | joins it (or confirms it, when no hook did) with `pre_tokens` / `post_tokens` |
 * | `UserPromptSubmit`, `PostToolUse`, `PostToolUseFailure` | activity | `working` (a ledger `activity` record when it changes) |
 * | `Stop`, `Interrupt` (0.3.337+) | activity | `idle`: Stop does not fire when the turn is interrupted |
 * | `PreToolUse` | `tool` | the write gate: `permissionDecision` `deny` or `ask` with the words; no objection is `{}` (never `allow`) |
 * | MCP tool `mcp__continuity__restate` | restated | the post snapshot, classification, gate cache and post span |
 *
 * `SessionStart` with `source` `startup` or `resume` never reaches callbacks on 0.3.328, so the
 * adapter learns a session at its first PreCompact or tool call.
 *
 * Never throws into the agent: every callback resolves. The gate's matcher has
 * `onFailure: 'block'` (a callback that failed anyway blocks the tool instead of letting it run,
 * the SDK's default), and a failure the gate catches while this process knows a compaction of the
 * session is unresolved answers `ask`, never "no objection".
 */
import { resolve } from 'node:path';
import { z } from 'zod';
import { OPAQUE_ID_PATTERN } from '../../decision/model.js';
import { InputError } from '../../decision/problems.js';
import { DEFAULT_GATED_TOOLS } from '../claude-code/config.js';
import { activityOf, boundaryEventOf, SIGNALS, toolEventOf } from '../claude-code/events.js';
import { type HookPayload, toPayload } from '../claude-code/payload.js';
import { captureNames, capturePre, recordMeasured, recordOpenedBoundary } from '../core/capture.js';
import { type AdapterConfig, type ContinuityEnv, loadConfig, resolveEnv } from '../core/config.js';
import type { CompactedEvent, GateAnswer, TokenCounts, Trigger } from '../core/events.js';
import { ledgerRederive, taskRecordNames } from '../core/evidence.js';
import { decideGate, type LaunchTrust } from '../core/gate.js';
import { RESTATE_DESCRIPTION } from '../core/mcp.js';
import { compactionContext, restateToolHint, summaryInstruction, type Voice } from '../core/messages.js';
import { restateInProcess } from '../core/observe.js';
import { oneLine } from '../core/process.js';
import { binPath } from '../core/project.js';
import {
  newBoundaryId as coreBoundaryId,
  recordActivity,
  systemNow,
  taskRecordLabel,
} from '../core/recording.js';
import { type RestateResult, renderRestatement } from '../core/restatement.js';
import { createMarker, isRecord, markerFile, type StateDir, writeProjectSession } from '../core/state.js';
import { tracerSink } from '../core/tracer-sink.js';
import { trackStep } from '../core/track.js';
import {
  agentSdkState,
  agentSdkVoice,
  HOOK_TIMEOUTS,
  MCP_SERVER_NAME,
  RESTATE_TOOL,
  RESTATE_TOOL_NAME,
  RUNTIME,
} from './config.js';
import type {
  AgentSdkContinuityOptions,
  AgentSdkHookCallback,
  AgentSdkHookMatcher,
  AgentSdkHookOutput,
  AgentSdkHooks,
  AgentSdkOptionsLike,
  AgentSdkToolResult,
} from './types.js';

/** The `compact_boundary` stream message, as a signal of the core's assembly. */
export const COMPACT_BOUNDARY_SIGNAL = 'compact_boundary';

/** Tool-use ids remembered to find the session of a restatement tool call. */
const MAX_TOOL_CALLS = 1000;
/** The `_meta` key under which the SDK hands an MCP tool handler its tool-use id (observed on 0.3.328). */
const TOOL_USE_ID_META = 'claudecode/toolUseId';

/** What {@link createAgentSdkContinuity} returns. */
export interface AgentSdkContinuity<S = unknown> {
  /** Callbacks to spread into the query's `options.hooks` (or merge with {@link options}). */
  readonly hooks: AgentSdkHooks;
  /** `{ continuity: <in-process MCP server> }` for `options.mcpServers`; empty without `sdk`. */
  readonly mcpServers: Record<string, S>;
  /**
   * The permission the restatement tool needs in `default` mode (`options.allowedTools`); an MCP
   * tool that is not allowed is denied without calling it. Empty without `sdk`.
   */
  readonly allowedTools: readonly string[];
  /** `base` with the hooks, the MCP server and its permission merged in (nothing of `base` is dropped). */
  options<O extends AgentSdkOptionsLike>(base: O): O;
  /**
   * Reads one message of the query's stream: a `compact_boundary` confirms or joins the boundary
   * with its context-fill numbers. Resolves when recorded; never throws.
   */
  onMessage(message: unknown): Promise<void>;
  /** The query's messages, unchanged, each read by {@link onMessage} first. */
  watch<T>(messages: AsyncIterable<T>): AsyncGenerator<T, void, undefined>;
  /**
   * Records the agent's restatement of `sessionId`'s decisions (what the MCP tool does): name →
   * value, or name → `{ value, observedAt?, revision?, source? }`. Throws `InputError` for bad input.
   */
  restate(sessionId: string, decisions: Record<string, unknown>): Promise<RestateResult>;
}

/** A new boundary id, `sdk-<time>-<random>` (Claude Code's are `cc-…`). */
function newBoundaryId(): string {
  return coreBoundaryId('sdk');
}

/** One line, no absolute path: warnings go to the application's log. */
function sanitize(line: string): string {
  return oneLine(line.replace(/(?:^|(?<=[\s'"(=:]))\/[^\s'")]+/g, '<path>'));
}

/** A token count from the stream (the SDK reports integers). */
function count(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : undefined;
}

const EMPTY: AgentSdkHookOutput = {};

/**
 * Creates the adapter for one application: hooks, MCP server, stream helper. One instance serves
 * any number of queries and sessions (state is per session, on disk, under the session's lock).
 */
export function createAgentSdkContinuity<S = unknown>(
  options: AgentSdkContinuityOptions<S> = {},
): AgentSdkContinuity<S> {
  return new AgentSdkAdapter(options);
}

class AgentSdkAdapter<S> implements AgentSdkContinuity<S> {
  readonly hooks: AgentSdkHooks;
  readonly mcpServers: Record<string, S>;
  readonly allowedTools: readonly string[];
  private readonly _env: ContinuityEnv;
  private readonly _projectDir: string;
  private readonly _state: StateDir;
  private readonly _voice: Voice;
  /** What the restatement exemption trusts: this package's own binary. */
  private readonly _launch: LaunchTrust;
  private readonly _sink;
  private readonly _warn: (line: string) => void;
  private readonly _mcp: boolean;
  /** Tool-use id → session, from PreToolUse, for the restatement tool's handler. */
  private readonly _toolSessions = new Map<string, string>();
  private _lastSession: string | undefined;
  /** Sessions this process saw a compaction of that no healthy verdict has resolved since. */
  private readonly _unresolved = new Set<string>();

  constructor(options: AgentSdkContinuityOptions<S>) {
    const raw = options.env ?? process.env;
    this._env = resolveEnv(
      options.taskRecord !== undefined ? { ...raw, CONTINUITY_TASK_RECORD: options.taskRecord } : raw,
    );
    this._projectDir = resolve(options.projectDir ?? process.cwd());
    this._state = agentSdkState(this._env.stateRoot);
    this._voice = agentSdkVoice(raw.PATH ?? '');
    this._launch = { script: binPath(), path: raw.PATH ?? '', execPath: process.execPath };
    this._sink = tracerSink(options.tracerProvider);
    const onWarning = options.onWarning ?? ((l: string) => process.stderr.write(`continuity: ${l}\n`));
    this._warn = (line) => {
      try {
        onWarning(sanitize(line));
      } catch {
        // The application's logger must not break a callback either.
      }
    };
    const guarded = (
      event: string,
      fn: (input: unknown, id: string | undefined) => Promise<AgentSdkHookOutput>,
    ) => this._guard(event, fn);
    this.hooks = {
      PreCompact: [
        { hooks: [guarded('PreCompact', (i) => this._recording(i))], timeout: HOOK_TIMEOUTS.preCompact },
      ],
      SessionStart: [
        { hooks: [guarded('SessionStart', (i) => this._recording(i))], timeout: HOOK_TIMEOUTS.compacted },
      ],
      PostCompact: [
        { hooks: [guarded('PostCompact', (i) => this._recording(i))], timeout: HOOK_TIMEOUTS.compacted },
      ],
      InstructionsLoaded: [
        {
          hooks: [guarded('InstructionsLoaded', (i) => this._recording(i))],
          timeout: HOOK_TIMEOUTS.compacted,
        },
      ],
      PreToolUse: [
        {
          hooks: [guarded('PreToolUse', (i, id) => this._gate(i, id))],
          timeout: HOOK_TIMEOUTS.preToolUse,
          onFailure: 'block',
        },
      ],
      UserPromptSubmit: [this._activityMatcher('UserPromptSubmit')],
      PostToolUse: [this._activityMatcher('PostToolUse')],
      PostToolUseFailure: [this._activityMatcher('PostToolUseFailure')],
      Stop: [this._activityMatcher('Stop')],
      Interrupt: [this._activityMatcher('Interrupt')],
    };
    this._mcp = options.sdk !== undefined;
    this.mcpServers = {};
    this.allowedTools = [];
    if (options.sdk) {
      const restate = options.sdk.tool(
        RESTATE_TOOL,
        RESTATE_DESCRIPTION,
        {
          decisions: z
            .record(z.string(), z.unknown())
            .describe('decision name → its value as you understand it now (any JSON value)'),
        },
        (args, extra) => this._restateTool(args, extra),
        { alwaysLoad: true },
      );
      this.mcpServers = {
        [MCP_SERVER_NAME]: options.sdk.createSdkMcpServer({
          name: MCP_SERVER_NAME,
          version: '0.1.0',
          tools: [restate as never],
        }),
      };
      this.allowedTools = [RESTATE_TOOL_NAME];
    }
  }

  options<O extends AgentSdkOptionsLike>(base: O): O {
    const hooks: Record<string, unknown[]> = { ...(base.hooks as Record<string, unknown[]> | undefined) };
    for (const [event, matchers] of Object.entries(this.hooks))
      hooks[event] = [...(hooks[event] ?? []), ...matchers];
    const out: AgentSdkOptionsLike = { ...base, hooks };
    if (this._mcp) {
      out.mcpServers = { ...base.mcpServers, ...this.mcpServers };
      const allowed = base.allowedTools ?? [];
      out.allowedTools = allowed.includes(RESTATE_TOOL_NAME) ? [...allowed] : [...allowed, RESTATE_TOOL_NAME];
    }
    return out as O;
  }

  async onMessage(message: unknown): Promise<void> {
    try {
      if (!isRecord(message) || message.type !== 'system' || message.subtype !== 'compact_boundary') return;
      const sessionId = message.session_id;
      if (typeof sessionId !== 'string' || !OPAQUE_ID_PATTERN.test(sessionId)) return;
      const meta = isRecord(message.compact_metadata) ? message.compact_metadata : {};
      const trigger: Trigger | undefined =
        meta.trigger === 'manual' || meta.trigger === 'auto' ? meta.trigger : undefined;
      const before = count(meta.pre_tokens);
      const after = count(meta.post_tokens);
      const tokens: TokenCounts = {
        ...(before !== undefined ? { before } : {}),
        ...(after !== undefined ? { after } : {}),
      };
      const now = systemNow();
      await this._compacted(
        sessionId,
        { type: 'compacted', at: now, signal: COMPACT_BOUNDARY_SIGNAL, ...(trigger ? { trigger } : {}) },
        tokens,
      );
    } catch (e) {
      this._warn(`compact_boundary: ${(e as Error).message ?? String(e)}`);
    }
  }

  async *watch<T>(messages: AsyncIterable<T>): AsyncGenerator<T, void, undefined> {
    for await (const m of messages) {
      await this.onMessage(m);
      yield m;
    }
  }

  restate(sessionId: string, decisions: Record<string, unknown>): Promise<RestateResult> {
    const { _state: state, _voice: voice, _warn: warn, _unresolved: unresolved } = this;
    const tool = { name: RESTATE_TOOL_NAME, config: () => this._config(), state, voice, warn, unresolved };
    return restateInProcess(tool, sessionId, decisions);
  }

  // ── Callbacks ─────────────────────────────────────────────────────────────────────────────

  /** Wraps a callback: it always resolves, within the hook deadline for the recording ones. */
  private _guard(
    event: string,
    fn: (input: unknown, id: string | undefined) => Promise<AgentSdkHookOutput>,
  ): AgentSdkHookCallback {
    return async (input, toolUseID) => {
      let timer: NodeJS.Timeout | undefined;
      try {
        if (event === 'PreToolUse') return await fn(input, toolUseID);
        const deadline = this._env.hookDeadlineMs;
        return await Promise.race([
          fn(input, toolUseID),
          new Promise<AgentSdkHookOutput>((done) => {
            timer = setTimeout(() => {
              this._warn(`${event}: gave up after ${deadline} ms so the agent is not held up`);
              done(EMPTY);
            }, deadline);
            timer.unref?.();
          }),
        ]);
      } catch (e) {
        this._warn(`${event}: ${(e as Error)?.message ?? String(e)}`);
        return event === 'PreToolUse' ? this._failedGate(input) : EMPTY;
      } finally {
        clearTimeout(timer);
      }
    };
  }

  private _config(): AdapterConfig {
    const { config, warnings } = loadConfig(this._projectDir, this._env, {
      runtime: RUNTIME,
      gatedTools: DEFAULT_GATED_TOOLS,
    });
    if (warnings.length > 0) this._warn(`config: ${warnings.join('; ')}`);
    return { ...config, spanSink: this._sink };
  }

  private _label(config: AdapterConfig): string {
    return taskRecordLabel(config);
  }

  private _payload(input: unknown): HookPayload | undefined {
    const r = toPayload(input);
    if (!r.ok) {
      this._warn(`${r.problem}; nothing recorded`);
      return undefined;
    }
    if (!OPAQUE_ID_PATTERN.test(r.payload.sessionId)) {
      this._warn(`${r.payload.event}: session_id is not an opaque identifier; nothing recorded`);
      return undefined;
    }
    this._lastSession = r.payload.sessionId;
    return r.payload;
  }

  /** PreCompact, SessionStart, PostCompact, InstructionsLoaded. */
  private async _recording(input: unknown): Promise<AgentSdkHookOutput> {
    const p = this._payload(input);
    if (!p) return EMPTY;
    const now = systemNow();
    const event = boundaryEventOf(p, now);
    if (!event || event.type === 'measured') return EMPTY;
    writeProjectSession(this._state, this._projectDir, p.sessionId, now);
    if (event.type === 'pre') return this._pre(p.sessionId, event.trigger, now);
    const b = await this._compacted(p.sessionId, event, undefined);
    if (event.signal !== SIGNALS.sessionStart || !b) return EMPTY;
    if (!createMarker(markerFile(this._state, p.sessionId, b.id, 'injected'))) return EMPTY;
    return {
      hookSpecificOutput: {
        hookEventName: 'SessionStart',
        additionalContext: this._context(p.sessionId, b.names),
      },
    };
  }

  /** The pre capture, pending until a compaction confirms it; the summarizer's one sentence. */
  private async _pre(
    sessionId: string,
    trigger: Trigger | undefined,
    now: string,
  ): Promise<AgentSdkHookOutput> {
    const config = this._config();
    const warn = (l: string) => this._warn(`PreCompact: ${l}`);
    const capture = capturePre({ config, label: this._label(config), now, sessionId }, warn);
    try {
      const step = await trackStep(
        this._state,
        sessionId,
        {
          event: { type: 'pre', at: now, ...(trigger ? { trigger } : {}) },
          boundaryId: newBoundaryId(),
          capture,
        },
        now,
        () => captureNames(capture),
      );
      const o = step.assembly.outcome;
      if (o.kind === 'pending' && o.discarded)
        warn('an earlier PreCompact was never followed by a compaction; it is discarded');
    } catch (e) {
      warn(`pre capture not kept: ${(e as Error).message}`);
    }
    const names = captureNames(capture);
    // Only `systemMessage` counts in a PreCompact answer; `hookSpecificOutput` would void it (observed).
    return names.length > 0 ? { systemMessage: summaryInstruction(names) } : EMPTY;
  }

  /**
   * A post-compaction signal: confirms the pending pre (or opens a boundary whose pre is missing),
   * records it; joins an existing one otherwise. `tokens` (compact_boundary's) are recorded too.
   */
  private async _compacted(
    sessionId: string,
    event: CompactedEvent,
    tokens: TokenCounts | undefined,
  ): Promise<{ id: string; names: string[] } | undefined> {
    const config = this._config();
    const label = this._label(config);
    const warn = (l: string) => this._warn(`${event.signal}: ${l}`);
    const step = await trackStep(
      this._state,
      sessionId,
      { event, boundaryId: newBoundaryId() },
      event.at,
      () => taskRecordNames(config, label),
    );
    const o = step.assembly.outcome;
    const opened = o.kind === 'confirmed' || o.kind === 'opened_pre_missing';
    let current = step.assembly.track.current;
    let measured = false;
    if (tokens && (tokens.before !== undefined || tokens.after !== undefined)) {
      const m = await trackStep(
        this._state,
        sessionId,
        { event: { type: 'measured', at: event.at, tokens } },
        event.at,
        () => [],
      );
      const mo = m.assembly.outcome;
      measured = mo.kind === 'measured' && mo.changed && mo.boundaryId === current?.boundaryId;
      if (measured) current = m.assembly.track.current;
    }
    if (opened && current) {
      if (o.kind === 'opened_pre_missing')
        warn('compaction without a PreCompact capture; continuity cannot be verified for it');
      this._unresolved.add(sessionId);
      await recordOpenedBoundary(config, this._state, sessionId, current, warn);
    } else if (measured && current) {
      await recordMeasured(config, sessionId, current, warn);
    }
    const b = step.state.boundary;
    return b ? { id: b.id, names: b.decisionNames } : undefined;
  }

  /** What the agent is asked after compaction: the core's words, and the tool when there is one. */
  private _context(sessionId: string, names: readonly string[]): string {
    const text = compactionContext(sessionId, names, this._voice);
    return this._mcp ? `${text}\n\n${this._toolHint(names)}` : text;
  }

  private _toolHint(names: readonly string[]): string {
    return restateToolHint(RESTATE_TOOL_NAME, names);
  }

  // ── Activity ──────────────────────────────────────────────────────────────────────────────

  /** A matcher recording the activity `event` reports (Claude Code's mapping, ../claude-code/events.ts). */
  private _activityMatcher(event: string): AgentSdkHookMatcher {
    return {
      hooks: [this._guard(event, (i) => this._activity(i, Date.now()))],
      timeout: HOOK_TIMEOUTS.compacted,
    };
  }

  /**
   * Working on a prompt or a tool's result, idle at Stop and at an interrupt (Stop does not fire
   * when the turn is interrupted). `atMs` is when the SDK called back: callbacks run in the order
   * of the events, so a later event's report is never overtaken by an earlier one's.
   */
  private async _activity(input: unknown, atMs: number): Promise<AgentSdkHookOutput> {
    const p = this._payload(input);
    if (!p) return EMPTY;
    const activity = activityOf(p);
    if (!activity) return EMPTY;
    const config = this._config();
    await recordActivity(config, this._state, p.sessionId, activity, systemNow(), atMs, (l) =>
      this._warn(`${p.event}: ${l}`),
    );
    return EMPTY;
  }

  // ── The gate ──────────────────────────────────────────────────────────────────────────────

  private async _gate(input: unknown, toolUseID: string | undefined): Promise<AgentSdkHookOutput> {
    const p = this._payload(input);
    if (!p) return EMPTY;
    if (this._isRestateTool(p, input)) {
      // Restating is how a held agent gets going again: always let it through, and remember
      // which session this call belongs to (the handler is not told).
      if (toolUseID) {
        this._toolSessions.set(toolUseID, p.sessionId);
        if (this._toolSessions.size > MAX_TOOL_CALLS)
          this._toolSessions.delete(this._toolSessions.keys().next().value!);
      }
      return EMPTY;
    }
    const config = this._config();
    const answer = await decideGate(p.sessionId, toolEventOf(p), {
      config,
      state: this._state,
      rederive: ledgerRederive(config, this._state, this._label(config)),
      voice: this._voice,
      warn: (l) => this._warn(`PreToolUse: ${l}`),
      launch: this._launch,
    });
    return this._answer(p.sessionId, answer);
  }

  private _answer(sessionId: string, answer: GateAnswer): AgentSdkHookOutput {
    if (answer.verdict === 'allow') {
      if (answer.code === 'state_allows') this._unresolved.delete(sessionId);
      // No verdict from the evidence while this process saw a compaction it has not seen resolved.
      if (answer.code === 'state_unknown' && this._unresolved.has(sessionId))
        return this._askOnFailure('state_unknown');
      return EMPTY;
    }
    const hint = answer.code === 'state_blocks' && this._mcp ? `\n${this._toolHint([])}` : '';
    return {
      hookSpecificOutput: {
        hookEventName: 'PreToolUse',
        permissionDecision: answer.verdict,
        permissionDecisionReason: `${answer.reason}${hint}`,
      },
    };
  }

  /** The gate failed: `ask` when a compaction of the session is unresolved here, else no objection. */
  private _failedGate(input: unknown): AgentSdkHookOutput {
    const sid = isRecord(input) && typeof input.session_id === 'string' ? input.session_id : undefined;
    return sid !== undefined && this._unresolved.has(sid) ? this._askOnFailure('gate_failed') : EMPTY;
  }

  private _askOnFailure(code: string): AgentSdkHookOutput {
    return {
      hookSpecificOutput: {
        hookEventName: 'PreToolUse',
        permissionDecision: 'ask',
        permissionDecisionReason:
          `The continuity gate asks a human first (${code}): this session was compacted and the gate could not read ` +
          'whether its task decisions survived. A human confirms consequential actions until it can.',
      },
    };
  }

  private _isRestateTool(p: HookPayload, input: unknown): boolean {
    if (!this._mcp || p.toolName !== RESTATE_TOOL_NAME || !isRecord(input)) return false;
    // Only our in-process server's tool: a configured server of the same name never has source `sdk`.
    const server = input.mcp_server;
    return isRecord(server) && server.name === MCP_SERVER_NAME && server.source === 'sdk';
  }

  private async _restateTool(args: unknown, extra: unknown): Promise<AgentSdkToolResult> {
    const text = (t: string, isError = false): AgentSdkToolResult => ({
      content: [{ type: 'text', text: t }],
      ...(isError ? { isError: true } : {}),
    });
    try {
      const meta = isRecord(extra) && isRecord(extra._meta) ? extra._meta : {};
      const toolUseId = meta[TOOL_USE_ID_META];
      const sessionId =
        (typeof toolUseId === 'string' ? this._toolSessions.get(toolUseId) : undefined) ?? this._lastSession;
      if (!sessionId) {
        return text('continuity: no session is known to this application yet; nothing recorded.', true);
      }
      const decisions = isRecord(args) && isRecord(args.decisions) ? args.decisions : undefined;
      if (!decisions)
        return text('continuity: expected {"decisions": {name: value, …}}; nothing recorded.', true);
      return text(renderRestatement(await this.restate(sessionId, decisions)));
    } catch (e) {
      if (e instanceof InputError) return text(`continuity: ${e.message}`, true);
      this._warn(`restate: ${(e as Error)?.message ?? String(e)}`);
      return text(
        'continuity: the restatement could not be recorded; ask the human to check the continuity ledger.',
        true,
      );
    }
  }
}
