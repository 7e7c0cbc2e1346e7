/**
 * The OpenCode adapter: the plugin's hooks, a thin translation onto the runtime-neutral core.
 * It runs inside OpenCode's own process (Bun), for as long as that process lives, so unlike a
 * hook process it keeps a little memory per session (./events.ts) and serializes its own work.
 *
 * | OpenCode | core | what it does |
 * | --- | --- | --- |
 * | `experimental.session.compacting` | `pre` | pre capture of the task record (pending until confirmed); adds the summary instruction (names only) to `output.context`. Never throws: a throw there breaks the session for good |
 * | `experimental.compaction.autocontinue` | `compacted` | confirms an automatic compaction before the agent's next model call (ledger + pre span in the background) |
 * | event `session.compacted` | `compacted` | confirms a manual compaction; joins an automatic one |
 * | event `message.updated` (the first reply after) | `measured` | the context fill after the compaction |
 * | `experimental.chat.system.transform` | — | while the boundary is unresolved, the restatement request (or what to do now) as one more system message; nothing for the summarizer's own call |
 * | `tool.execute.before` | `tool` | the write gate: `deny`, and `ask` (OpenCode's plugins cannot ask), throw with the words the model then reads as the tool's result |
 * | `dispose` | — | waits for the recordings still under way |
 *
 * Nothing here blocks OpenCode for long: the awaited hooks take the session lock and read small
 * files; the ledger appends and span exports of a confirmation run in the background (the gate
 * waits for them a bounded time, so a `continuity observe` sees the boundary). Prompts, tool
 * outputs and the summary are never read; of a tool's arguments the gate reads the command or
 * the path, only to decide. Warnings go to OpenCode's log (`client.app.log`), one line each,
 * never with a value.
 */
import { formatRfc3339Utc } from '../../decision/time.js';
import { captureNames, capturePre, recordMeasured, recordOpenedBoundary } from '../core/capture.js';
import { type AdapterConfig, type ContinuityEnv, policyVerdict, resolveEnv } from '../core/config.js';
import type { BoundaryEvent, GateAnswer } from '../core/events.js';
import { ledgerRederive, taskRecordNames } from '../core/evidence.js';
import { decideToolCall } from '../core/gate.js';
import {
  boundaryView,
  compactionContext,
  nextAction,
  summaryInstruction,
  type Voice,
} from '../core/messages.js';
import { oneLine } from '../core/process.js';
import { binPath } from '../core/project.js';
import { newBoundaryId as coreBoundaryId, storableSessionId, taskRecordLabel } from '../core/recording.js';
import {
  type GateState,
  isHealthy,
  isRecord,
  type PreCapture,
  readGateState,
  type StateDir,
  writeProjectSession,
} from '../core/state.js';
import { trackStep } from '../core/track.js';
import { loadOpencodeConfig, opencodeState, opencodeVoice, resolveProjectDir, toolEvents } from './config.js';
import { emptyMemory, type OpencodeInput, type SessionMemory, sessionOf, translate } from './events.js';
import type { AppLogBody, BusEvent, ContinuityHooks, PluginInput } from './types.js';

/** Most milliseconds the gate and the system transform wait for this session's recordings still under way. */
export const SETTLE_MS = 3000;

/** The first words of an `ask` answer: OpenCode's plugins cannot ask the human, so the call is stopped. */
export const ASK_PREFIX =
  'Stopped by the continuity gate: a human must confirm this first, and an OpenCode plugin cannot ask them. ' +
  'Tell the human what you want to do and why, and wait: they can do it themselves, or change the gate policy in .continuity/config.json.';

/**
 * The gate's reason when it could not reach a verdict (an error on its way, or its deadline): the
 * call is stopped, since silence would let it run on evidence nobody read.
 */
export const GATE_FAILED =
  'Stopped by the continuity gate: it could not check this tool call just now, so it cannot tell whether it is safe. Retry; ask the human if this repeats.';

/** Bus events the adapter reads; the rest (deltas, diffs, file events) are not even queued. */
const READ_EVENTS: ReadonlySet<string> = new Set([
  'message.part.updated',
  'message.updated',
  'session.compacted',
  'session.idle',
  'session.error',
]);

/** The text an answer throws into OpenCode (the tool's result the model reads), or nothing for `allow`. */
export function gateMessage(answer: GateAnswer): string | undefined {
  if (answer.verdict === 'allow') return undefined;
  return answer.verdict === 'ask' ? `${ASK_PREFIX}\n${answer.reason}` : answer.reason;
}

/**
 * The system message for a session whose latest boundary blocks or asks: the restatement request
 * while nothing was restated, else what to do now. `undefined` when the gate has no objection.
 */
export function boundaryNote(
  sessionId: string,
  state: GateState | undefined,
  config: AdapterConfig,
  voice: Voice,
): string | undefined {
  const b = state?.boundary;
  if (!b || isHealthy(b.state)) return undefined;
  const verdict = policyVerdict(config.gate.policy, b.state, b.reason);
  if (verdict === 'allow') return undefined;
  if (!b.observed && b.reason === 'post_observation_missing') {
    return compactionContext(sessionId, b.decisionNames, voice);
  }
  const how = verdict === 'deny' ? 'blocks' : 'stops (a human must confirm first)';
  return `[continuity] Until this is resolved the continuity gate ${how} ${voice.consequentialTools} (${b.state}: ${b.reason}).\n${nextAction(boundaryView(sessionId, b), voice)}`;
}

const newBoundaryId = () => coreBoundaryId('oc');

/** What the gate's deadline resolves to. */
const TIMED_OUT: unique symbol = Symbol('timed out');

/** A promise that settles after `ms` (never keeping the process alive). */
function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref?.());
}

/** What the adapter takes from its surroundings; the defaults are OpenCode's process. */
export interface AdapterDeps {
  /** The environment, read once. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** The clock in ms. Default `Date.now`. */
  clock?: () => number;
  /** Where warnings go. Default OpenCode's log through `client.app.log`. */
  warn?: (line: string) => void;
}

/** One session's in-process state. */
interface Session {
  memory: SessionMemory;
  /** This session's boundary steps, in order. */
  queue: Promise<void>;
  /** Ledger appends and exports under way. */
  recording: Set<Promise<void>>;
}

/** OpenCode's `client.app.log`, when the client has it. */
function appLog(client: unknown): ((body: AppLogBody) => unknown) | undefined {
  if (!isRecord(client) || !isRecord(client.app) || typeof client.app.log !== 'function') return undefined;
  const log = client.app.log as (o: { body: AppLogBody }) => unknown;
  return (body) => log.call(client.app, { body });
}

/** Builds the plugin's hooks for one OpenCode instance. Never throws into OpenCode except as the gate. */
export function createContinuityHooks(input: PluginInput, deps: AdapterDeps = {}): ContinuityHooks {
  const processEnv = deps.env ?? process.env;
  const env: ContinuityEnv = resolveEnv(processEnv);
  const clock = deps.clock ?? Date.now;
  const projectDir = resolveProjectDir(input.directory, input.worktree);
  const state: StateDir = opencodeState(env);
  const voice = opencodeVoice(processEnv.PATH ?? '');
  // What the restatement exemption trusts: this package's own binary (OpenCode runs on Bun, so the
  // launcher's `node` is the one on PATH).
  const launch = { script: binPath(), path: processEnv.PATH ?? '', execPath: process.execPath };
  const log = appLog(input.client);
  const said = new Set<string>();
  const warn =
    deps.warn ??
    ((line: string) => {
      const message = `continuity: ${oneLine(line)}`;
      if (said.has(message) || said.size > 200) return;
      said.add(message);
      try {
        Promise.resolve(log?.({ service: 'continuity', level: 'warn', message })).catch(() => {});
      } catch {
        // A log that cannot be written must not break OpenCode.
      }
    });
  const sessions = new Map<string, Session>();

  const session = (id: string): Session => {
    let s = sessions.get(id);
    if (!s) {
      s = { memory: emptyMemory(), queue: Promise.resolve(), recording: new Set() };
      sessions.set(id, s);
    }
    return s;
  };
  const nowOf = (ms: number) => formatRfc3339Utc(ms);
  const loadConfig = (): AdapterConfig => {
    const { config, warnings } = loadOpencodeConfig(projectDir, env);
    for (const w of warnings) warn(`config: ${w}`);
    return config;
  };
  /** Runs `fn` after this session's earlier steps; its failure is a warning. */
  const enqueue = (id: string, what: string, fn: () => Promise<void>): Promise<void> => {
    const s = session(id);
    const next = s.queue.then(fn).catch((e: Error) => warn(`${what}: ${e.message.split('\n')[0]}`));
    s.queue = next;
    return next;
  };
  /** Runs a recording in the background, tracked so the gate and `dispose` can wait for it. */
  const record = (id: string, what: string, fn: () => Promise<void>): void => {
    const s = session(id);
    const p: Promise<void> = fn()
      .catch((e: Error) => warn(`${what}: ${e.message.split('\n')[0]}`))
      .finally(() => s.recording.delete(p));
    s.recording.add(p);
  };
  /** Waits, at most `ms`, until this session's queued steps and recordings are done. */
  const settle = async (id: string, ms = SETTLE_MS): Promise<void> => {
    const s = sessions.get(id);
    if (!s) return;
    await Promise.race([Promise.allSettled([s.queue, ...s.recording]), delay(ms)]);
  };
  /** One translation step: the session's memory moves on; returns the core event, if any. */
  const translateFor = (id: string, i: OpencodeInput): BoundaryEvent | undefined => {
    const s = session(id);
    const r = translate(s.memory, i);
    s.memory = r.memory;
    return r.event;
  };

  /** Applies a core boundary event: durable assembly step, then the ledger in the background. */
  const boundaryStep = async (
    id: string,
    event: BoundaryEvent,
    config: AdapterConfig,
    capture?: PreCapture,
  ): Promise<void> => {
    const at = event.at;
    const label = taskRecordLabel(config);
    if (event.type === 'pre') {
      const c = capture!;
      const step = await trackStep(state, id, { event, boundaryId: newBoundaryId(), capture: c }, at, () =>
        captureNames(c),
      );
      writeProjectSession(state, config.projectDir, id, at);
      const o = step.assembly.outcome;
      if (o.kind === 'pending' && o.discarded)
        warn('an earlier compaction never completed; its capture is discarded');
      return;
    }
    if (event.type === 'compacted') {
      const step = await trackStep(state, id, { event, boundaryId: newBoundaryId() }, at, () =>
        taskRecordNames(config, label),
      );
      const o = step.assembly.outcome;
      const b = step.assembly.track.current;
      if ((o.kind === 'confirmed' || o.kind === 'opened_pre_missing') && b) {
        if (o.kind === 'opened_pre_missing') {
          warn('compaction without a capture before it; continuity cannot be verified for it');
        }
        writeProjectSession(state, config.projectDir, id, at);
        record(id, 'boundary', () => recordOpenedBoundary(config, state, id, b, warn));
      }
      return;
    }
    const step = await trackStep(state, id, { event }, at, () => []);
    const o = step.assembly.outcome;
    const b = step.assembly.track.current;
    if (o.kind === 'measured' && o.changed && b && o.boundaryId === b.boundaryId) {
      record(id, 'context fill', () => recordMeasured(config, id, b, warn));
    }
  };

  /** The session's gate state as the gate sees it: the cache, re-derived from the ledger when it blocks. */
  const gateState = async (id: string, config: AdapterConfig): Promise<GateState | undefined> => {
    const cached = readGateState(state, id);
    if (cached?.boundary === null || (cached?.boundary && isHealthy(cached.boundary.state))) return cached;
    return (await ledgerRederive(config, state, taskRecordLabel(config))(id, cached)) ?? cached;
  };

  return {
    async event({ event }: { event: BusEvent }) {
      try {
        if (!READ_EVENTS.has(event.type)) return;
        const id = sessionOf(event);
        if (!id || !storableSessionId(id)) return;
        const atMs = clock();
        void enqueue(id, event.type, async () => {
          const core = translateFor(id, { kind: 'event', event, at: nowOf(atMs), atMs });
          if (core) await boundaryStep(id, core, loadConfig());
        });
      } catch (e) {
        warn(`${event?.type}: ${(e as Error).message}`);
      }
    },

    async 'experimental.session.compacting'(inp, out) {
      // A throw here breaks the OpenCode session for good (every later prompt retries the
      // compaction and fails): nothing leaves this hook but the added context.
      try {
        const id = inp?.sessionID;
        if (typeof id !== 'string' || !storableSessionId(id)) return;
        const atMs = clock();
        const at = nowOf(atMs);
        const config = loadConfig();
        const capture = capturePre({ config, label: taskRecordLabel(config), now: at, sessionId: id }, warn);
        const names = captureNames(capture);
        if (names.length > 0 && Array.isArray(out?.context)) out.context.push(summaryInstruction(names));
        const event = translateFor(id, { kind: 'compacting', at, atMs })!;
        const done = enqueue(id, 'pre capture', () => boundaryStep(id, event, config, capture));
        await Promise.race([done, delay(env.hookDeadlineMs)]);
      } catch (e) {
        warn(`compacting: ${(e as Error).message?.split('\n')[0]}`);
      }
    },

    async 'experimental.compaction.autocontinue'(inp) {
      try {
        const id = inp?.sessionID;
        if (typeof id !== 'string' || !storableSessionId(id)) return;
        const atMs = clock();
        const event = translateFor(id, { kind: 'autocontinue', at: nowOf(atMs), atMs })!;
        const config = loadConfig();
        const done = enqueue(id, 'compaction', () => boundaryStep(id, event, config));
        await Promise.race([done, delay(env.hookDeadlineMs)]);
      } catch (e) {
        warn(`autocontinue: ${(e as Error).message?.split('\n')[0]}`);
      }
    },

    async 'experimental.chat.system.transform'(inp, out) {
      try {
        const id = inp?.sessionID;
        if (typeof id !== 'string' || !storableSessionId(id) || !Array.isArray(out?.system)) return;
        // The summarizer's own call: it has the instruction already, and is not the agent.
        if (sessions.get(id)?.memory.summarizing) return;
        await settle(id);
        const config = loadConfig();
        const note = boundaryNote(id, await gateState(id, config), config, voice);
        if (note) out.system.push(note);
      } catch (e) {
        warn(`system transform: ${(e as Error).message?.split('\n')[0]}`);
      }
    },

    async 'tool.execute.before'(inp, out) {
      let message: string | undefined;
      try {
        const id = inp?.sessionID;
        if (typeof id === 'string' && typeof inp.tool === 'string') {
          await settle(id);
          const config = loadConfig();
          const ctx = {
            config,
            state,
            rederive: ledgerRederive(config, state, taskRecordLabel(config)),
            voice,
            warn,
            launch,
          };
          // OpenCode awaits this hook with no time limit of its own: a step that never settled
          // (a lock, a file) would hold the tool call, and the agent, for ever. Past the deadline
          // the call is stopped.
          const answer: GateAnswer | typeof TIMED_OUT = await Promise.race([
            decideToolCall(id, toolEvents(inp.tool, out?.args), ctx),
            delay(env.hookDeadlineMs).then((): typeof TIMED_OUT => TIMED_OUT),
          ]);
          if (answer === TIMED_OUT) {
            warn(`gate: no verdict within ${env.hookDeadlineMs} ms; the call is stopped`);
            message = GATE_FAILED;
          } else {
            message = gateMessage(answer);
          }
        }
      } catch (e) {
        warn(`gate: ${(e as Error).message?.split('\n')[0]}`);
        // Never open on unknown evidence: a gate that failed on its way to a verdict stops the call.
        message = GATE_FAILED;
      }
      if (message !== undefined) throw new Error(message);
    },

    async dispose() {
      const all = [...sessions.values()].flatMap((s) => [s.queue, ...s.recording]);
      await Promise.race([Promise.allSettled(all), delay(env.hookDeadlineMs)]);
    },
  };
}
