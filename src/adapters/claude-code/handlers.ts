/**
 * The recording hooks, translated onto the core: PreCompact (`pre`), SessionStart(compact),
 * PostCompact and InstructionsLoaded(compact) (`compacted` signals), the other SessionStarts
 * (`resumed`) and activity. Loaded only for those events (never by the gate's fast path): they use
 * the ledger, the digests and the exporter. None of them ever blocks: every failure becomes
 * evidence missing, a stderr line and exit 0. The compaction summary and custom instructions are
 * never read; the transcript is read locally for token counts only.
 */
import type { ActivityState } from '../../decision/model.js';
import { recordMeasured } from '../core/capture.js';
import type { AdapterConfig } from '../core/config.js';
import type { CompactedEvent, PreEvent } from '../core/events.js';
import { ledgerRederive } from '../core/evidence.js';
import type { Rederive } from '../core/gate.js';
import {
  compactedStep,
  firstInjection,
  type HookStepContext,
  markFreshSession,
  preCompactStep,
} from '../core/hook-steps.js';
import { compactionContext, summaryInstruction, templateNotice } from '../core/messages.js';
import type { SessionFiles } from '../core/pipeline.js';
import {
  newBoundaryId as coreBoundaryId,
  recordActivity,
  rememberSession,
  storableSessionId,
  systemNow,
  taskRecordLabel,
} from '../core/recording.js';
import { hookStartMs, readGateState } from '../core/state.js';
import { templateDecisionNames } from '../core/task-record.js';
import { noteSameActivity, trackStep } from '../core/track.js';
import { CLAUDE_CODE_DIALECT, type ClaudeCodeEnv, claudeCodeState, claudeCodeVoice } from './config.js';
import { boundaryEventOf, SIGNALS } from './events.js';
import type { HookRun } from './payload.js';
import { compactBoundaryTokens, lastReplyTokens } from './transcript.js';

/** A new boundary id: lower-case, time-ordered, opaque (`cc…` for Claude Code; the dialect's prefix otherwise). */
export function newBoundaryId(prefix = CLAUDE_CODE_DIALECT.boundaryPrefix): string {
  return coreBoundaryId(prefix);
}

/** The gate's slow path for Claude Code: the ledger and the classifier. */
export function rederive(config: AdapterConfig, env: ClaudeCodeEnv, warn?: (line: string) => void): Rederive {
  return ledgerRederive(config, claudeCodeState(env), taskRecordLabel(config), warn);
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
    // Never echoed: it may hold shell syntax or terminal escapes.
    run.warn(
      `${p.event}: session_id is invalid: not an opaque identifier (letters, digits and ._:@#+=/- only, not starting with . / or ~); nothing recorded`,
    );
    return '';
  }
  if (activity) return onActivity(run, session, activity);
  switch (p.event) {
    case 'PreCompact':
      return onPreCompact(run);
    case 'PostCompact':
      return onCompacted(run);
    case 'SessionStart':
      return p.source === 'compact' ? onCompacted(run) : onResumed(run, session);
    case 'InstructionsLoaded':
      if (p.loadReason === 'compact') await onCompacted(run);
      // InstructionsLoaded has no JSON output: Claude Code logs any as a failed hook.
      return '';
    default:
      return '';
  }
}

function prefixed(run: HookRun): (line: string) => void {
  return (line) => run.warn(`${run.payload.event}: ${line}`);
}

/** The core's recording-step context for this hook run (like Codex's, over Claude Code's own state and ids). */
function stepContext(run: HookRun, now: string): HookStepContext {
  return {
    config: run.config,
    state: claudeCodeState(run.env),
    sessionId: run.payload.sessionId,
    now,
    preHook: 'PreCompact',
    newBoundaryId: () => newBoundaryId(run.env.dialect.boundaryPrefix),
    warn: prefixed(run),
  };
}

/**
 * PreCompact: the pre capture of the task record (digests only), pending until a compaction
 * confirms it; prints the one sentence Claude Code appends to the summarizer's instructions.
 */
async function onPreCompact(run: HookRun): Promise<string> {
  const now = systemNow();
  const tokensBefore = run.local.transcriptPath ? lastReplyTokens(run.local.transcriptPath) : undefined;
  const event = boundaryEventOf(run.payload, now) as PreEvent;
  const names = await preCompactStep(stepContext(run, now), event, tokensBefore);
  if (names.length === 0) return '';
  if (run.env.dialect.preCompactOutput === 'text') return `${summaryInstruction(names)}\n`;
  return `${JSON.stringify({
    hookSpecificOutput: { hookEventName: 'PreCompact', additionalContext: summaryInstruction(names) },
  })}\n`;
}

/**
 * A post-compaction signal: confirms the pending pre (or opens a boundary whose pre is missing),
 * records it in the ledger and exports the pre span; SessionStart(compact) also asks the agent to
 * restate its decisions, once per boundary.
 */
async function onCompacted(run: HookRun): Promise<string> {
  const { payload: p, env } = run;
  const now = systemNow();
  const c = stepContext(run, now);
  const event = boundaryEventOf(p, now) as CompactedEvent;
  const step = await compactedStep(c, event);
  if (event.signal !== SIGNALS.sessionStart) return '';
  const b = readGateState(c.state, p.sessionId)?.boundary ?? step.state.boundary;
  if (!b || !firstInjection(c.state, p.sessionId, b.id)) return '';
  return `${JSON.stringify({
    hookSpecificOutput: {
      hookEventName: 'SessionStart',
      additionalContext: compactionContext(p.sessionId, b.decisionNames, claudeCodeVoice(env)),
    },
  })}\n`;
}

/**
 * For a runtime with no post-compaction hook (Copilot): confirms the session's pending pre capture
 * when the runtime's own record shows a compaction completed after it (the signal
 * `compaction_log`). A compaction that was cancelled or is still running confirms nothing, so
 * it never opens a boundary. Answers nothing.
 */
export async function confirmFromLog(run: HookRun, session: SessionFiles): Promise<string> {
  const { payload: p, env } = run;
  const evidence = env.dialect.compactionEvidence;
  const pending = session.gate()?.track?.pending;
  if (!evidence || !pending) return '';
  const completedAt = evidence(run.processEnv, p.sessionId, Date.parse(pending.at), {
    ...(run.local.transcriptPath ? { transcriptPath: run.local.transcriptPath } : {}),
    state: claudeCodeState(env),
  });
  if (!completedAt) return '';
  const now = systemNow();
  await compactedStep(stepContext(run, now), {
    type: 'compacted',
    at: now,
    signal: SIGNALS.compactionLog,
    ...(pending.trigger ? { trigger: pending.trigger } : {}),
  });
  return '';
}

/**
 * For a runtime whose restatement request rides on an ordinary event's context (Gemini CLI's
 * AfterTool and BeforeAgent): the request, once per boundary, when the session has a current
 * boundary; else nothing. `<` and `>` are escaped by Gemini, so the dialect uses the flags form.
 */
export function restatementContext(run: HookRun, session: SessionFiles, hookEventName: string): string {
  const { payload: p, env } = run;
  const state = session.state;
  const b = session.gate()?.boundary;
  if (!b || b.observed || !firstInjection(state, p.sessionId, b.id)) return '';
  return `${JSON.stringify({
    hookSpecificOutput: {
      hookEventName,
      additionalContext: compactionContext(p.sessionId, b.decisionNames, claudeCodeVoice(env)),
    },
  })}\n`;
}

/**
 * SessionStart other than `compact`: the project's current session (for `continuity observe`).
 * `startup`, `clear` and `fork` start a session id of their own with no boundary: `/clear` wipes
 * the context on purpose and starts a new session, so it is not a compaction (nothing was
 * summarised; the old session's boundaries stay with the old id). `resume` keeps the session and
 * its boundaries. Late context-fill numbers of the current boundary are read here too.
 */
async function onResumed(run: HookRun, session: SessionFiles): Promise<string> {
  const { payload: p, config, env } = run;
  const now = systemNow();
  const state = claudeCodeState(env);
  rememberSession(state, config.projectDir, p.sessionId, now, prefixed(run));
  if (p.source !== 'resume') await markFreshSession(state, p.sessionId, now, config.env.ledgerPath);
  await measureLate(run, session, now);
  return templateOutput(run);
}

/**
 * A task record still init's template: `systemMessage`, the field Claude Code shows the user (in
 * the terminal, and as the hook's message in `-p` and stream-json output), not the model's
 * context. The stderr line of a hook that exits 0 is all but hidden.
 */
function templateOutput(run: HookRun): string {
  // Claude Code's field; the other dialects that share these handlers keep their stderr line.
  if (run.env.dialect.runtime !== CLAUDE_CODE_DIALECT.runtime) return '';
  const names = templateDecisionNames(run.config.taskRecordPath);
  if (!names) return '';
  return `${JSON.stringify({ systemMessage: templateNotice(taskRecordLabel(run.config), names) })}\n`;
}

/**
 * Context fill learnt after the compaction: the transcript's `compact_boundary` record, written by
 * Claude Code after PostCompact, gives the numbers before and after. Recorded once per boundary.
 */
async function measureLate(run: HookRun, session: SessionFiles, now: string): Promise<void> {
  const { payload: p, config } = run;
  const path = run.local.transcriptPath;
  if (!path) return;
  const state = session.state;
  const cur = session.gate()?.track?.current;
  if (!cur || cur.tokens.after !== undefined) return;
  const since = cur.pre ? Date.parse(cur.pre.at) - 2000 : Date.parse(cur.compactedAt) - 60_000;
  const tokens = compactBoundaryTokens(path, since);
  if (!tokens || (tokens.before === undefined && tokens.after === undefined)) return;
  const step = await trackStep(
    state,
    p.sessionId,
    { event: { type: 'measured', at: now, tokens } },
    now,
    () => [],
  );
  const o = step.assembly.outcome;
  const b = step.assembly.track.current;
  if (o.kind === 'measured' && o.changed && b && o.boundaryId === cur.boundaryId) {
    await recordMeasured(config, p.sessionId, b, prefixed(run));
  }
}

/** A repeat of the recorded activity: only its time moves on (../core/track.ts `noteSameActivity`). */
export function sameActivity(run: HookRun, session: SessionFiles, activity: ActivityState): Promise<void> {
  return noteSameActivity(session.state, run.payload.sessionId, activity, hookStartMs(), prefixed(run));
}

/** Activity: record a change of the activity state (ledger + `continuity.activity` span). */
async function onActivity(run: HookRun, session: SessionFiles, stateName: ActivityState): Promise<string> {
  const { payload: p, config } = run;
  const now = systemNow();
  await measureLate(run, session, now).catch((e: Error) =>
    run.warn(`${p.event}: ${e.message.split('\n')[0]}`),
  );
  await recordActivity(config, session.state, p.sessionId, stateName, now, hookStartMs(), prefixed(run));
  return '';
}
