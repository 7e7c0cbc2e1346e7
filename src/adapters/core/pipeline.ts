/**
 * One hook event, one path, read top to bottom: the pipeline every command hook runs (Claude
 * Code and the runtimes that speak its protocol, Codex CLI). A runtime adapter supplies the
 * translations at both ends ({@link HookAdapter}); the order of the stages and the state they
 * share live here, once.
 *
 * ```
 *  stdin ─► parse ─► open ─► route ─► load ─► settle ─► gate ──────────────────────────► answer ─► stdout
 *          payload   env,    core     state    pending    tool events → allow|ask|deny    runtime
 *          (runtime) config  event    files,   boundary   (../core/gate.ts)               output
 *                    (once)  (runtime) once    confirmed  │
 *                                              (runtime)  └► observe ─► record ──────────► answer
 *                                                            (runtime)  boundary step or
 *                                                                       activity → ledger + span
 *                                                                       (runtime's lazy bundle)
 * ```
 *
 * 1. **parse**: stdin → the runtime's payload (identifiers and enumerations only), or a problem.
 * 2. **open**: environment, project and configuration resolved once, with the hook's deadline
 *    armed (past it the gate asks and a recording hook answers nothing).
 * 3. **route**: which core event the payload is: a tool call for the gate, a boundary or activity
 *    step to record, or nothing.
 * 4. **load**: the session's state files ({@link SessionFiles}), each read at most once by this
 *    process outside a locked read-modify-write (which re-reads under the lock, on purpose).
 * 5. **settle** (a runtime with no post-compaction hook): a pending capture is confirmed from the
 *    runtime's own record before the gate answers.
 * 6. **gate** (`tool`): the core's verdict over the call's tool events (the most severe wins),
 *    translated into the runtime's answer. Lean: node built-ins and the core's small modules.
 * 7. **observe** and **record** (everything else): what the runtime does on an ordinary event
 *    (provenance, a restatement request riding on its context), then the boundary step or the
 *    activity change, recorded as evidence (ledger, span) by the runtime's recording bundle,
 *    loaded only now, within the deadline.
 *
 * Imports only the core's lean modules (no ledger, digest or exporter): it is in the gate's
 * fast-path bundle (dist/hook.cjs).
 */
import type { ActivityState } from '../../decision/model.js';
import type { GateAnswer, ToolEvent } from './events.js';
import { decideToolCall, type GateContext } from './gate.js';
import { armWatchdog, type HookIo, runHookProcess, withinHookDeadline } from './process.js';
import {
  type ActivityMark,
  activityStep,
  type GateState,
  hookStartMs,
  readActivityMark,
  readGateState,
  type StateDir,
} from './state.js';

// ── Stage types ───────────────────────────────────────────────────────────────────────────────
/** What every runtime's payload carries, whatever else it keeps. */
export interface PayloadBase {
  /** The runtime's event name, as the adapter names it. */
  event: string;
  sessionId: string;
  /** The session's working directory (used locally to find the project, never stored). */
  cwd?: string;
}

/** Stage 1's result: the payload and its local-only inputs, or a one-line problem. */
export type Parsed<P, L> =
  | { ok: true; payload: P; local: L; problem?: never }
  | { ok: false; problem: string; payload?: never; local?: never };

/**
 * Stage 3's result, the core event a payload is (runtime-neutral):
 * - `gate`: a tool is about to run; its tool events (a patch touching three files is three);
 * - `record`: a boundary step (`activity` absent) or an activity change, recorded as evidence;
 * - `none`: nothing to do; `line` says why, when it is worth a stderr line.
 */
export type HookRoute =
  | { kind: 'gate'; tools: readonly ToolEvent[] }
  | { kind: 'record'; activity?: ActivityState }
  | { kind: 'none'; line?: string };

/**
 * One session's state files as this hook process sees them: each read at most once, on first
 * use. A stage that writes one (a confirmation, a recording step) calls {@link forget} so a later
 * stage reads what was written.
 */
export interface SessionFiles {
  readonly state: StateDir;
  readonly sessionId: string;
  /** The gate cache (`gate.json`): boundary track and latest boundary state. */
  gate(): GateState | undefined;
  /** The latest recorded activity state and the start time of the hook that reported it. */
  activity(): ActivityMark | undefined;
  /** Drops what was read, after this process wrote the files. */
  forget(): void;
}

/** The session's state files, read lazily and at most once each ({@link SessionFiles}). */
export function sessionFiles(state: StateDir, sessionId: string): SessionFiles {
  let gate: { value: GateState | undefined } | undefined;
  let activity: { value: ActivityMark | undefined } | undefined;
  return {
    state,
    sessionId,
    gate() {
      gate ??= { value: readGateState(state, sessionId) };
      return gate.value;
    },
    activity() {
      activity ??= { value: readActivityMark(state, sessionId) };
      return activity.value;
    },
    forget() {
      gate = undefined;
      activity = undefined;
    },
  };
}

/**
 * Stage 2, first half: the environment, resolved once. The deadline is armed before anything else
 * is read; {@link configure} then finds the project and loads its configuration.
 */
export interface Resolved<R> {
  /** The hook's own deadline in ms (below the runtime's timeout). */
  deadlineMs: number;
  /** The project and its configuration; `undefined` when the session is not a continuity project. */
  configure(warn: (line: string) => void): Configured<R> | undefined;
}

/** Stage 2, second half: what the rest of the pipeline runs with, resolved once. */
export interface Configured<R> {
  /** The runtime's own run record (payload, configuration, environment), handed to its steps. */
  run: R;
  /** The runtime adapter's state directory. */
  state: StateDir;
  /**
   * What the gate needs besides the tool call (config, state, slow path, words, launcher). A fresh
   * object per process: the pipeline sets its `cached` to the session's files. Its `voice` may be
   * a getter, so the words are worked out only when a verdict needs them (never on the fast path).
   */
  gate: GateContext;
}

/**
 * A runtime adapter's part of the pipeline: its wire format in, its answers out, and the few
 * steps only it has. Everything else (the order, the deadline, the state read once, the gate's
 * verdict over several tool events, the activity short-cut) is the pipeline's.
 */
export interface HookAdapter<P extends PayloadBase, L, R> {
  /** The runtime's name in stderr lines (`hook <name>: …`). */
  readonly name: string;
  /** 1. stdin → payload. */
  parse(buffer: Buffer, truncated: boolean): Parsed<P, L>;
  /** 2. The environment and the hook's deadline, then the project and its configuration. */
  open(io: HookIo, payload: P, local: L): Resolved<R>;
  /** 3. The core event the payload is (pure). */
  route(payload: P): HookRoute;
  /** The runtime's output for the gate's answer (nothing for `allow`); the watchdog's too, so it never throws. */
  gateOutput(answer: GateAnswer, payload: P): string;
  /** The reason of the watchdog's `ask` when the gate runs out of time. Default {@link GATE_TIMED_OUT}. */
  readonly timedOutReason?: string;
  /**
   * 5. For a runtime with no post-compaction hook: confirms a pending capture from the runtime's
   * own record. Resolves `true` when the state is settled (nothing pending, or confirmed).
   */
  settle?(run: R, session: SessionFiles): Promise<boolean> | undefined;
  /** 6. A tool call the gate never holds (the runtime's own restate tool): the pipeline answers nothing. */
  exempt?(run: R, payload: P): boolean;
  /** 7a. Steps of an ordinary event before it is recorded; returns what to print. */
  observe?(run: R, session: SessionFiles): Promise<string>;
  /** 7b. Whether an unchanged activity is still worth a record (late context-fill numbers). */
  stale?(run: R, session: SessionFiles, nowMs: number): boolean;
  /**
   * 7b. A repeat of the recorded activity, not recorded: for a runtime whose hooks run in the
   * background and may finish out of order, the recorded time moves on (so a later stale report
   * is recognised, ./track.ts `noteSameActivity`).
   */
  sameActivity?(run: R, session: SessionFiles, activity: ActivityState): Promise<void>;
  /** 7c. The recording step (loaded lazily: ledger, digests, exporter); returns what to print. */
  record(run: R, session: SessionFiles, activity: ActivityState | undefined): Promise<string>;
}

// ── The gate's answers the pipeline gives itself ──────────────────────────────────────────────
/** The reason of a gate that ran out of its own deadline (inline: the messages may be what hangs). */
export const GATE_TIMED_OUT =
  'The continuity gate asks a human first: it ran out of time while inspecting this tool call, so it cannot tell whether it is safe.';

/** The reason of a gate that failed before it reached a verdict (an error on its path). */
export const GATE_FAILED =
  'The continuity gate asks a human first: it failed while inspecting this tool call, so it cannot tell whether it is safe.';

/** The reason of a gate whose session's pending compaction could not be confirmed in time. */
export const COMPACTION_UNCONFIRMED =
  'The continuity gate asks a human first: a compaction of this session may have completed, and it could not be confirmed in time, so the gate cannot tell whether writes are held.';

// ── The pipeline ──────────────────────────────────────────────────────────────────────────────
/** Runs one hook process of `adapter`'s runtime over `io`. Returns the exit code: always 0. */
export function runHookPipeline<P extends PayloadBase, L, R>(
  io: HookIo,
  adapter: HookAdapter<P, L, R>,
): Promise<number> {
  const name = adapter.name;
  return runHookProcess(io, name, async (warn) => {
    // 1. payload
    const { buffer, truncated } = await io.readInput();
    const parsed = adapter.parse(buffer, truncated);
    if (!parsed.ok) {
      warn(`hook ${name}: ${parsed.problem}; nothing recorded`);
      return;
    }
    const p = parsed.payload;
    // 2. environment and deadline; 3. the core event.
    const resolved = adapter.open(io, p, parsed.local);
    const { deadlineMs } = resolved;
    const route = adapter.route(p);
    const gateEvent = route.kind === 'gate';
    // Past its deadline the gate asks and a recording hook answers nothing, and the process exits:
    // the runtime never sees a hook of ours time out.
    const timedOut = adapter.timedOutReason ?? GATE_TIMED_OUT;
    armWatchdog(
      io,
      deadlineMs,
      () =>
        gateEvent ? adapter.gateOutput({ verdict: 'ask', code: 'gate_failed', reason: timedOut }, p) : '',
      `hook ${name}: ${p.event}: gave up after ${deadlineMs} ms${gateEvent ? '; asking' : ' so the agent is not held up'}`,
    );
    // Whatever throws from here on, a gate event answers: an empty answer is the runtime's
    // `allow`, and a gate that failed has no verdict.
    try {
      // 2. project and configuration, under the deadline.
      const opened = resolved.configure(warn);
      if (!opened) return; // not a continuity project
      const { run } = opened;
      // 4. the session's state, read once (lazily).
      const session = sessionFiles(opened.state, p.sessionId);

      // 5. a pending boundary confirmed before anything answers from the state (slow path, only then).
      const settling = adapter.settle?.(run, session);
      if (settling) {
        let settled = false;
        await withinHookDeadline(
          settling.then((ok) => {
            settled = ok;
            session.forget();
            return '';
          }),
          deadlineMs - 250,
          p.event,
          warn,
        );
        if (!settled && gateEvent) {
          // A compaction may have completed that could not be confirmed in time: the cache does not
          // know it yet, so what it says is no verdict. Never allow on it.
          io.stdout.write(
            adapter.gateOutput({ verdict: 'ask', code: 'state_unknown', reason: COMPACTION_UNCONFIRMED }, p),
          );
          return;
        }
      }

      // 6. gate
      if (route.kind === 'gate') {
        if (adapter.exempt?.(run, p)) return;
        const ctx = opened.gate; // not spread: that would call the `voice` getter
        ctx.cached = () => session.gate();
        const answer = await decideToolCall(p.sessionId, route.tools, ctx);
        io.stdout.write(adapter.gateOutput(answer, p));
        return;
      }

      // 7. observe, then record the boundary step or the activity change.
      if (adapter.observe) {
        const out = await adapter.observe(run, session);
        if (out) io.stdout.write(out);
      }
      if (route.kind === 'none') {
        if (route.line) warn(`hook ${name}: ${route.line}`);
        return;
      }
      const activity = route.activity;
      if (activity) {
        // Unchanged or stale activity (a background hook of an earlier event finishing late, see
        // recordActivity): nothing to record, unless the adapter still wants something of it.
        const step = activityStep(session.activity(), activity, hookStartMs());
        if (step !== 'changed' && !adapter.stale?.(run, session, Date.now())) {
          if (step === 'same') await adapter.sameActivity?.(run, session, activity);
          return;
        }
      }
      const out = await withinHookDeadline(
        adapter.record(run, session, activity),
        deadlineMs - 250,
        p.event,
        warn,
      );
      if (out) io.stdout.write(out);
    } catch (e) {
      if (gateEvent) {
        io.stdout.write(adapter.gateOutput({ verdict: 'ask', code: 'gate_failed', reason: GATE_FAILED }, p));
      }
      throw e;
    }
  });
}
