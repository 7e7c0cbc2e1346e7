/**
 * The in-process continuity of an agent framework (LangChain JS, OpenAI Agents JS, Mastra): the
 * runtime-neutral core (src/adapters/core) driven from calls in the application's process, with
 * no hook payloads to read. Each framework integration (src/integrations/<framework>/) is a thin
 * translation of the framework's own events onto these calls:
 *
 * | call | core | when the integration makes it |
 * | --- | --- | --- |
 * | {@link FrameworkContinuity.capture} | the pre capture, in memory | before the framework replaces history (the digests of the task record then) |
 * | {@link FrameworkContinuity.preCompaction} | `pre` | the framework says a compaction starts (held pending until one is confirmed) |
 * | {@link FrameworkContinuity.compacted} | `compacted` | history was replaced; answers the words asking the agent to restate, once per boundary |
 * | {@link FrameworkContinuity.restate} | restated | the agent called the restatement tool |
 * | {@link FrameworkContinuity.gate} | `tool` | before a tool runs: `allow` (no objection), `ask` (a human confirms) or `deny` |
 *
 * Human approvals are not made here: a human records them with `continuity approve` in their own
 * terminal (another process, the same ledger), and the gate reads them from the ledger at the
 * next call, exactly as for the Claude Agent SDK adapter.
 *
 * Never throws into the agent: the recording calls resolve (problems go to `onWarning`), and a
 * gate that fails while this process knows a compaction of the session is unresolved answers
 * `ask`, never "no objection".
 */
import { resolve } from 'node:path';
import {
  ADAPTER_EVIDENCE_REASONS,
  captureNames,
  capturePre,
  recordOpenedBoundary,
} from '../../adapters/core/capture.js';
import {
  type AdapterConfig,
  type ContinuityEnv,
  loadConfig,
  resolveEnv,
} from '../../adapters/core/config.js';
import type { GateAnswer, ToolEvent, Trigger } from '../../adapters/core/events.js';
import { ledgerRederive, taskRecordNames } from '../../adapters/core/evidence.js';
import { decideGate } from '../../adapters/core/gate.js';
import {
  compactionContext,
  RESTATE_DECISIONS_DESCRIPTION,
  RESTATE_TOOL_DESCRIPTION,
  restateToolHint,
  summaryInstruction,
  type Voice,
} from '../../adapters/core/messages.js';
import { restateInProcess } from '../../adapters/core/observe.js';
import { launcherFor, oneLine } from '../../adapters/core/process.js';
import { binPath } from '../../adapters/core/project.js';
import { newBoundaryId, systemNow, taskRecordLabel } from '../../adapters/core/recording.js';
import { type RestateResult, renderRestatement } from '../../adapters/core/restatement.js';
import {
  createMarker,
  markerFile,
  type PreCapture,
  type StateDir,
  stateDirOf,
} from '../../adapters/core/state.js';
import { tracerSink } from '../../adapters/core/tracer-sink.js';
import { trackStep } from '../../adapters/core/track.js';
import { OPAQUE_ID_PATTERN } from '../../decision/model.js';
import { InputError } from '../../decision/problems.js';
import type { IntegrationOptions, ToolCallView } from './types.js';

/** The restatement tool every integration offers the agent (one name, whatever the framework). */
export const RESTATE_TOOL_NAME = 'continuity_restate';

/** The restatement tool's description, as the model reads it (the MCP tool's words). */
export { RESTATE_TOOL_DESCRIPTION };

/**
 * The restatement tool's input, as JSON Schema (every framework takes one). A fresh object per
 * call: a framework's validator may annotate the schema it is given (LangChain's
 * `@cfworker/json-schema` defines properties on it, observed), so it is never a shared or frozen one.
 */
export function restateToolParameters(): Record<string, unknown> {
  return {
    type: 'object',
    properties: {
      decisions: {
        type: 'object',
        description: RESTATE_DECISIONS_DESCRIPTION,
        additionalProperties: true,
      },
    },
    required: ['decisions'],
    additionalProperties: false,
  };
}

/** The pre capture taken before a framework replaced history, kept until the compaction is confirmed. */
export interface HeldCapture {
  readonly sessionId: string;
  readonly trigger?: Trigger;
  readonly capture: PreCapture;
  /** The decision names (for the summarizer's instruction). */
  readonly names: readonly string[];
  /** The sentence asking the summarizer to keep the named decisions verbatim; empty without names. */
  readonly instruction: string;
}

/** What a confirmed compaction answers. */
export interface Compacted {
  boundaryId: string;
  names: string[];
  /**
   * The words asking the agent to restate with the restatement tool: once per boundary (the first
   * signal of a boundary gets them, later ones `undefined`).
   */
  context?: string;
}

/** What the framework says of a compaction that replaced the history. */
export interface CompactedOptions {
  /** The framework's event, recorded as the compaction signal. */
  signal: string;
  /** A capture held in memory until now (recorded first, then confirmed). */
  held?: HeldCapture;
  trigger?: Trigger;
  tokensBefore?: number;
  tokensAfter?: number;
}

/** The gate's answer, with `ask` kept distinct: each integration maps it onto its framework's human step. */
export type FrameworkGateAnswer = GateAnswer;

/** The in-process continuity of one application (any number of sessions). */
export interface FrameworkContinuity {
  readonly runtime: string;
  /** True when `sessionId` can be recorded (an opaque id: no path, no secret shape). */
  isSessionId(sessionId: unknown): sessionId is string;
  /** The task record's decision names now, most critical first (none when it cannot be read). Never throws. */
  decisionNames(): string[];
  /** The task record's digests now, in memory (nothing written). Never throws. */
  capture(sessionId: string, trigger?: Trigger): HeldCapture;
  /** The framework says a compaction starts: the capture is held pending until one is confirmed. Never throws. */
  preCompaction(held: HeldCapture): Promise<void>;
  /**
   * History was replaced: confirms the pending capture (or, with `held`, records it first) and
   * records the boundary. `signal` names the framework's event. Never throws.
   */
  compacted(sessionId: string, options: CompactedOptions): Promise<Compacted | undefined>;
  /** Records the agent's restatement. Throws `InputError` for bad input (nothing written). */
  restate(sessionId: string, decisions: Record<string, unknown>): Promise<RestateResult>;
  /** The restatement tool's handler: the text the agent reads. Never throws. */
  restateText(sessionId: string | undefined, input: unknown): Promise<string>;
  /** Decides a tool call of `sessionId`. The restatement tool always passes. Never throws. */
  gate(sessionId: string | undefined, call: ToolCallView): Promise<FrameworkGateAnswer>;
  /** One line to the application's log (sanitised). */
  warn(line: string): void;
}

/** One line, no absolute path: warnings go to the application's log. */
function sanitize(line: string): string {
  return oneLine(line.replace(/(?:^|(?<=[\s'"(=:]))\/[^\s'")]+/g, '<path>'));
}

/** The words of an integration: `continuity` as the agent's shell would start it, tools named generically. */
function frameworkVoice(path: string): Voice {
  return {
    launcher: launcherFor(path, binPath()),
    consequentialTools: 'any tool call that changes something',
  };
}

/** Creates the in-process continuity of one framework integration. */
export function createFrameworkContinuity(
  runtime: string,
  options: IntegrationOptions = {},
): FrameworkContinuity {
  return new InProcess(runtime, options);
}

class InProcess implements FrameworkContinuity {
  readonly runtime: string;
  private readonly _env: ContinuityEnv;
  private readonly _projectDir: string;
  private readonly _state: StateDir;
  private readonly _voice: Voice;
  private readonly _sink;
  private readonly _warn: (line: string) => void;
  private readonly _gatedTools: readonly string[];
  private readonly _describe: IntegrationOptions['describeTool'];
  /** Sessions this process saw a compaction of that no healthy verdict has resolved since. */
  private readonly _unresolved = new Set<string>();

  constructor(runtime: string, options: IntegrationOptions) {
    this.runtime = runtime;
    const raw = options.env ?? process.env;
    this._env = resolveEnv(
      options.taskRecord !== undefined ? { ...raw, CONTINUITY_TASK_RECORD: options.taskRecord } : raw,
    );
    this._projectDir = resolve(options.projectDir ?? process.cwd());
    this._state = stateDirOf(this._env.stateRoot, runtime);
    this._voice = frameworkVoice(raw.PATH ?? '');
    this._sink = tracerSink(options.tracerProvider);
    this._gatedTools = options.gatedTools ?? ['*'];
    this._describe = options.describeTool;
    const onWarning = options.onWarning ?? ((l: string) => process.stderr.write(`continuity: ${l}\n`));
    this._warn = (line) => {
      try {
        onWarning(sanitize(line));
      } catch {
        // The application's logger must not break a callback either.
      }
    };
  }

  warn(line: string): void {
    this._warn(line);
  }

  isSessionId(sessionId: unknown): sessionId is string {
    return typeof sessionId === 'string' && OPAQUE_ID_PATTERN.test(sessionId);
  }

  private _config(): AdapterConfig {
    const { config, warnings } = loadConfig(this._projectDir, this._env, {
      runtime: this.runtime,
      gatedTools: this._gatedTools,
    });
    if (warnings.length > 0) this._warn(`config: ${warnings.join('; ')}`);
    return { ...config, spanSink: this._sink };
  }

  decisionNames(): string[] {
    try {
      const config = this._config();
      return taskRecordNames(config, taskRecordLabel(config));
    } catch {
      return [];
    }
  }

  capture(sessionId: string, trigger?: Trigger): HeldCapture {
    const now = systemNow();
    let capture: PreCapture;
    try {
      const config = this._config();
      capture = capturePre({ config, label: taskRecordLabel(config), now, sessionId }, (l) =>
        this._warn(`capture: ${l}`),
      );
    } catch (e) {
      this._warn(`capture: ${(e as Error).message}`);
      capture = { ok: false, capturedAt: now, reason: ADAPTER_EVIDENCE_REASONS.captureFailed, names: [] };
    }
    const names = captureNames(capture);
    return {
      sessionId,
      ...(trigger ? { trigger } : {}),
      capture,
      names,
      instruction: names.length > 0 ? summaryInstruction(names) : '',
    };
  }

  async preCompaction(held: HeldCapture): Promise<void> {
    try {
      await this._trackPre(held);
    } catch (e) {
      this._warn(`pre capture not kept: ${(e as Error).message}`);
    }
  }

  private async _trackPre(held: HeldCapture): Promise<void> {
    if (!this.isSessionId(held.sessionId)) return;
    const step = await trackStep(
      this._state,
      held.sessionId,
      {
        event: {
          type: 'pre',
          at: held.capture.capturedAt,
          ...(held.trigger ? { trigger: held.trigger } : {}),
        },
        boundaryId: newBoundaryId(this.runtime),
        capture: held.capture,
      },
      held.capture.capturedAt,
      () => [...held.names],
    );
    const o = step.assembly.outcome;
    if (o.kind === 'pending' && o.discarded)
      this._warn('an earlier compaction start was never followed by a compaction; it is discarded');
  }

  async compacted(sessionId: string, options: CompactedOptions): Promise<Compacted | undefined> {
    try {
      if (!this.isSessionId(sessionId)) {
        this._warn(`${options.signal}: the session id is not an opaque identifier; nothing recorded`);
        return undefined;
      }
      if (options.held) await this._trackPre(options.held);
      return await this._compacted(sessionId, options);
    } catch (e) {
      this._warn(`${options.signal}: ${(e as Error).message}`);
      return undefined;
    }
  }

  private async _compacted(
    sessionId: string,
    options: Omit<CompactedOptions, 'held'>,
  ): Promise<Compacted | undefined> {
    const config = this._config();
    const label = taskRecordLabel(config);
    const warn = (l: string) => this._warn(`${options.signal}: ${l}`);
    const at = systemNow();
    const tokens = {
      ...(options.tokensBefore !== undefined ? { before: options.tokensBefore } : {}),
      ...(options.tokensAfter !== undefined ? { after: options.tokensAfter } : {}),
    };
    const step = await trackStep(
      this._state,
      sessionId,
      {
        event: {
          type: 'compacted',
          at,
          signal: options.signal,
          ...(options.trigger ? { trigger: options.trigger } : {}),
          ...(Object.keys(tokens).length > 0 ? { tokens } : {}),
        },
        boundaryId: newBoundaryId(this.runtime),
      },
      at,
      () => taskRecordNames(config, label),
    );
    const o = step.assembly.outcome;
    const current = step.assembly.track.current;
    if ((o.kind === 'confirmed' || o.kind === 'opened_pre_missing') && current) {
      if (o.kind === 'opened_pre_missing')
        warn('compaction without a capture before it; continuity cannot be verified for it');
      this._unresolved.add(sessionId);
      await recordOpenedBoundary(config, this._state, sessionId, current, warn);
    }
    const b = step.state.boundary;
    if (!b) return undefined;
    const first = createMarker(markerFile(this._state, sessionId, b.id, 'injected'));
    return {
      boundaryId: b.id,
      names: [...b.decisionNames],
      ...(first ? { context: this._context(sessionId, b.decisionNames) } : {}),
    };
  }

  /** What the agent is asked after compaction: the core's words, then the tool. */
  private _context(sessionId: string, names: readonly string[]): string {
    return `${compactionContext(sessionId, names, this._voice)}\n\n${toolHint(names)}`;
  }

  restate(sessionId: string, decisions: Record<string, unknown>): Promise<RestateResult> {
    const { _state: state, _voice: voice, _warn: warn, _unresolved: unresolved } = this;
    const tool = { name: RESTATE_TOOL_NAME, config: () => this._config(), state, voice, warn, unresolved };
    return restateInProcess(tool, sessionId, decisions);
  }

  async restateText(sessionId: string | undefined, input: unknown): Promise<string> {
    try {
      if (!this.isSessionId(sessionId)) {
        return 'continuity: this run has no session id continuity can record; nothing recorded.';
      }
      const decisions = isObject(input) && isObject(input.decisions) ? input.decisions : undefined;
      if (!decisions) return 'continuity: expected {"decisions": {name: value, …}}; nothing recorded.';
      return renderRestatement(await this.restate(sessionId, decisions));
    } catch (e) {
      if (e instanceof InputError) return `continuity: ${e.message}`;
      this._warn(`restate: ${(e as Error)?.message ?? String(e)}`);
      return 'continuity: the restatement could not be recorded; ask the human to check the continuity ledger.';
    }
  }

  async gate(sessionId: string | undefined, call: ToolCallView): Promise<FrameworkGateAnswer> {
    if (call.name === RESTATE_TOOL_NAME) return { verdict: 'allow', code: 'not_gated' };
    try {
      // A run without a session id continuity can follow has no boundary to gate on.
      if (!this.isSessionId(sessionId)) return { verdict: 'allow', code: 'no_compaction' };
      const config = this._config();
      const answer = await decideGate(sessionId, this._toolEvent(call), {
        config,
        state: this._state,
        rederive: ledgerRederive(config, this._state, taskRecordLabel(config)),
        voice: this._voice,
        warn: (l) => this._warn(`gate: ${l}`),
      });
      if (answer.verdict === 'allow') {
        if (answer.code === 'state_allows') this._unresolved.delete(sessionId);
        if (answer.code === 'state_unknown' && this._unresolved.has(sessionId))
          return askOnFailure('state_unknown');
        return answer;
      }
      const hint = answer.code === 'state_blocks' ? `\n${toolHint([])}` : '';
      return { ...answer, reason: `${answer.reason}${hint}` };
    } catch (e) {
      this._warn(`gate: ${(e as Error)?.message ?? String(e)}`);
      return sessionId !== undefined && this._unresolved.has(sessionId)
        ? askOnFailure('gate_failed')
        : { verdict: 'allow', code: 'not_gated' };
    }
  }

  private _toolEvent(call: ToolCallView): ToolEvent {
    let d: ReturnType<NonNullable<IntegrationOptions['describeTool']>> = { kind: 'other' };
    if (this._describe) {
      try {
        d = this._describe(call);
      } catch (e) {
        this._warn(`describeTool: ${(e as Error).message}; the call is inspected as one that cannot be read`);
        return { type: 'tool', toolName: call.name, kind: 'file_write', truncated: true };
      }
    }
    if (d.kind === 'command')
      return {
        type: 'tool',
        toolName: call.name,
        kind: 'command',
        ...(d.command !== undefined ? { command: d.command } : {}),
      };
    if (d.kind === 'file_write')
      return {
        type: 'tool',
        toolName: call.name,
        kind: 'file_write',
        ...(d.filePath !== undefined ? { filePath: d.filePath } : {}),
      };
    return { type: 'tool', toolName: call.name, kind: 'other' };
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function toolHint(names: readonly string[]): string {
  return restateToolHint(RESTATE_TOOL_NAME, names);
}

function askOnFailure(code: 'state_unknown' | 'gate_failed'): FrameworkGateAnswer {
  return {
    verdict: 'ask',
    code,
    reason:
      `The continuity gate asks a human first (${code}): this session was compacted and the gate could not read ` +
      'whether its task decisions survived. A human confirms consequential actions until it can.',
  };
}
