/**
 * The recording hooks of Codex CLI, translated onto the core: PreCompact (`pre`), PostCompact and
 * SessionStart(compact) (`compacted` signals), the other SessionStarts (`resumed`) and activity.
 * Loaded only for those events (never by the gate's fast path). None of them ever blocks: every
 * failure becomes evidence missing, a stderr line and exit 0.
 *
 * Where the restatement request goes in: Codex passes SessionStart's `additionalContext` to the
 * model as a developer message and PreCompact's output to nobody. SessionStart(compact) fires
 * after PostCompact, in the same turn for a mid-turn automatic compaction, only at the next turn
 * for a manual one, and never when the process ends first; so SessionStart(resume) asks again
 * whenever the session's boundary still blocks writes. The gate's reasons carry the same
 * command, so an agent that never saw either still learns what to run.
 *
 * The summarizer: Codex compacts with the conversation itself as input, so the sentence asking it
 * to keep the named decisions (names only) rides in the same SessionStart context; a compaction
 * drops the older context, and the SessionStart(compact) context puts it back for the next one.
 */
import type { ActivityState } from '../../decision/model.js';
import { type AdapterConfig, policyVerdict } from '../core/config.js';
import type { CompactedEvent, PreEvent } from '../core/events.js';
import { ledgerRederive, taskRecordNames } from '../core/evidence.js';
import type { Rederive } from '../core/gate.js';
import {
  compactedStep,
  firstInjection,
  type HookStepContext,
  markFreshSession,
  preCompactStep,
} from '../core/hook-steps.js';
import { boundaryView, compactionContext, nextAction, summaryInstruction } from '../core/messages.js';
import type { SessionFiles } from '../core/pipeline.js';
import {
  newBoundaryId as coreBoundaryId,
  recordActivity,
  rememberSession,
  storableSessionId,
  systemNow,
  taskRecordLabel,
} from '../core/recording.js';
import { type GateBoundary, hookStartMs, readGateState } from '../core/state.js';
import { type CodexEnv, codexState, codexVoice } from './config.js';
import { boundaryEventOf, SIGNALS } from './events.js';
import type { HookRun } from './payload.js';
import { lastContextTokens } from './transcript.js';

/** A new boundary id: lower-case, time-ordered, opaque. */
export function newBoundaryId(): string {
  return coreBoundaryId('cx');
}

/** The gate's slow path for Codex: the ledger and the classifier. */
export function rederive(config: AdapterConfig, env: CodexEnv, warn?: (line: string) => void): Rederive {
  return ledgerRederive(config, codexState(env), taskRecordLabel(config), warn);
}

/**
 * Runs the handler of one recording event (the pipeline's record stage, ../core/pipeline.ts);
 * returns what the hook prints on stdout. `session`: the session's state files as this process
 * read them.
 */
export async function handle(
  run: HookRun,
  session: SessionFiles,
  activity: ActivityState | undefined,
): Promise<string> {
  const p = run.payload;
  if (!storableSessionId(p.sessionId)) {
    run.warn(`${p.event}: session_id is not an opaque identifier; nothing recorded`);
    return '';
  }
  if (activity) {
    await recordActivity(
      run.config,
      session.state,
      p.sessionId,
      activity,
      systemNow(),
      hookStartMs(),
      prefixed(run),
    );
    return '';
  }
  switch (p.event) {
    case 'PreCompact':
      await onPreCompact(run);
      return '';
    case 'PostCompact':
      await onCompacted(run);
      return '';
    case 'SessionStart':
      return p.source === 'compact' ? onCompacted(run) : onResumed(run, session);
    default:
      return '';
  }
}

function prefixed(run: HookRun): (line: string) => void {
  return (line) => run.warn(`${run.payload.event}: ${line}`);
}

/** The SessionStart output carrying `context` to the model, or nothing. */
function sessionStartOutput(context: string[]): string {
  const text = context.filter((c) => c.length > 0).join('\n\n');
  if (!text) return '';
  return `${JSON.stringify({ hookSpecificOutput: { hookEventName: 'SessionStart', additionalContext: text } })}\n`;
}

/** The sentence for the summarizer, naming the task record's decisions (nothing without names). */
function summarizerContext(config: AdapterConfig): string {
  const names = taskRecordNames(config, taskRecordLabel(config));
  return names.length > 0 ? summaryInstruction(names) : '';
}

/** The core's recording-step context for this hook run (like Claude Code's, over Codex's own state and ids). */
function stepContext(run: HookRun, now: string): HookStepContext {
  return {
    config: run.config,
    state: codexState(run.env),
    sessionId: run.payload.sessionId,
    now,
    preHook: 'PreCompact',
    newBoundaryId,
    warn: prefixed(run),
  };
}

/**
 * PreCompact: the pre capture of the task record (digests only), pending until a compaction
 * confirms it, with the context fill Codex compacts from. Prints nothing: Codex shows PreCompact
 * output to nobody.
 */
async function onPreCompact(run: HookRun): Promise<void> {
  const now = systemNow();
  const tokensBefore = run.local.transcriptPath ? lastContextTokens(run.local.transcriptPath) : undefined;
  const event = boundaryEventOf(run.payload, now) as PreEvent;
  await preCompactStep(stepContext(run, now), event, tokensBefore);
}

/**
 * A post-compaction signal: confirms the pending pre (or opens a boundary whose pre is missing),
 * records it in the ledger and exports the pre span; SessionStart(compact) also asks the agent to
 * restate its decisions, once per boundary.
 */
async function onCompacted(run: HookRun): Promise<string> {
  const { payload: p, config, env } = run;
  const now = systemNow();
  const c = stepContext(run, now);
  const event = boundaryEventOf(p, now) as CompactedEvent;
  const step = await compactedStep(c, event);
  if (event.signal !== SIGNALS.sessionStart) return '';
  const b = readGateState(c.state, p.sessionId)?.boundary ?? step.state.boundary;
  const ask =
    b && firstInjection(c.state, p.sessionId, b.id)
      ? compactionContext(p.sessionId, b.decisionNames, codexVoice(env))
      : '';
  return sessionStartOutput([ask, summarizerContext(config)]);
}

/** What SessionStart(resume) tells the agent about a boundary that still blocks writes. */
function resumeContext(sessionId: string, b: GateBoundary, env: CodexEnv): string {
  if (!b.observed && b.state === 'unverified' && b.reason === 'post_observation_missing') {
    return compactionContext(sessionId, b.decisionNames, codexVoice(env));
  }
  return [
    `[continuity] This session's last compaction is ${b.state} (${b.reason}); the continuity gate blocks consequential tools until that is resolved.`,
    nextAction(boundaryView(sessionId, b), codexVoice(env)),
  ].join('\n');
}

/**
 * SessionStart other than `compact`: the project's current session (for `continuity observe`).
 * `startup`, `clear` and `fork` start a session id of their own with no boundary. `resume` keeps
 * the session and its boundaries, and asks again for what the boundary still needs: a
 * SessionStart(compact) may never have reached the model (the process ended before the next
 * turn), and a human may have approved a change since (the ledger is read, not the cache).
 */
async function onResumed(run: HookRun, session: SessionFiles): Promise<string> {
  const { payload: p, config, env } = run;
  const now = systemNow();
  const state = codexState(env);
  rememberSession(state, config.projectDir, p.sessionId, now, prefixed(run));
  if (p.source !== 'resume') {
    await markFreshSession(state, p.sessionId, now, run.config.env.ledgerPath);
    return sessionStartOutput([summarizerContext(config)]);
  }
  let gs = session.gate();
  try {
    gs = (await rederive(config, env)(p.sessionId, gs)) ?? gs;
  } catch (e) {
    run.warn(`${p.event}: ledger not read (${(e as Error).message.split('\n')[0]}); using the cached state`);
  }
  const b = gs?.boundary;
  const blocks = b && policyVerdict(config.gate.policy, b.state, b.reason) !== 'allow';
  const context = b && blocks ? resumeContext(p.sessionId, b, env) : '';
  // Marked as given (the resume path asks again whatever the marker says); a marker that cannot
  // be written does not cost the agent its restatement request.
  if (context && b) firstInjection(state, p.sessionId, b.id);
  return sessionStartOutput([context, summarizerContext(config)]);
}
