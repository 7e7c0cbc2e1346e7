/**
 * `continuity hook claude-code`: the one entry point for every Claude Code hook event, a thin
 * translation over the core's hook pipeline (../core/pipeline.ts): stdin payload → core event
 * (./payload.ts, ./events.ts); core answer → Claude Code's hook output (here). Reads the event's
 * JSON on stdin and exits 0, always; only the write gate (PreToolUse) ever blocks, and it does so
 * with the documented JSON answer, never with an exit code.
 *
 * Lean on purpose: `bin/continuity.js` imports this module directly for `hook claude-code`, and
 * for the gate's fast path nothing but node built-ins and small local modules is loaded. The
 * recording handlers (ledger, digests, exporter) are imported only for their events.
 *
 * | event | core event | what it does |
 * | --- | --- | --- |
 * | PreToolUse | `tool` | the write gate |
 * | PreSkillShellCommand (2.1.332+) | `tool` | the write gate, for a skill's or slash command's shell command |
 * | PreCompact | `pre` | pre capture of the task record (pending until confirmed); stdout asks the summarizer to keep the named decisions |
 * | SessionStart (`compact`) | `compacted` | confirms the boundary (ledger + pre span); adds the restatement request to the context |
 * | PostCompact | `compacted` | confirms the boundary if nothing did yet; the summary is never read |
 * | InstructionsLoaded (`compact`) | `compacted` (repeatable) | confirms the boundary if nothing did yet; prints nothing (it has no JSON output) |
 * | SessionStart (`startup`, `resume`, `clear`, `fork`) | `resumed` | current session for `continuity observe`; late context-fill numbers |
 * | PostToolUse, PostToolUseFailure, UserPromptSubmit | `activity` working | |
 * | Notification (a type that awaits a human), PermissionRequest | `activity` waiting_human | |
 * | Stop | `activity` idle | |
 * | Interrupt (2.1.337+: a turn stopped by the user, another session or the runtime) | `activity` idle | Stop does not fire on an interrupt |
 * | anything else, malformed input | | exit 0, one line on stderr |
 *
 * Real order on Claude Code 2.1.328 (docs/claude-code.md): `PreCompact → SessionStart(compact) →
 * PostCompact`, InstructionsLoaded(compact) later or never; the core's assembly does not depend
 * on it. Subagent hooks carry the parent's `session_id` (plus `agent_id`/`agent_type`): they are
 * the session's, so a subagent's tool call is gated by the session's state and a subagent's
 * compaction is a boundary of the session.
 *
 * Reading the input: ./payload.ts keeps only identifiers and enumerations. After a tool ran
 * (`PostToolUse`) the adapter looks at its command and paths to tell whether the agent read the
 * task record or the ledger (the provenance of its next restatement, ../core/provenance.ts);
 * nothing of them is stored.
 */

import { isAbsolute } from 'node:path';
import { COPILOT_DIALECT } from '../copilot/config.js';
import { insideCopilot } from '../copilot/inside.js';
import type { GateAnswer } from '../core/events.js';
import { MCP_RESTATE_TOOL_NAME } from '../core/mcp-names.js';
import { type HookAdapter, type HookRoute, runHookPipeline, type SessionFiles } from '../core/pipeline.js';
import { type HookIo, processIo } from '../core/process.js';
import { noteRecordRead, readTheRecord } from '../core/provenance.js';
import {
  CLAUDE_CODE_DIALECT,
  claudeCodeState,
  claudeCodeVoice,
  type HookDialect,
  hookDeadlineMs,
  loadClaudeCodeConfig,
  resolveClaudeCodeEnv,
  resolveProjectDir,
  restateToolRegistered,
  runtimeEventName,
} from './config.js';
import { activityOf, toolEventOf } from './events.js';
import { GATE_EVENTS, type HookPayload, type HookRun, type LocalInputs, parsePayload } from './payload.js';

const RECORDING_EVENTS = new Set(['PreCompact', 'PostCompact', 'SessionStart', 'InstructionsLoaded']);

/** The core event a payload is: the gate's tool call, a boundary step or activity to record, or nothing. */
export function routeOf(p: HookPayload, dialect: HookDialect = CLAUDE_CODE_DIALECT): HookRoute {
  if (GATE_EVENTS.has(p.event)) return { kind: 'gate', tools: [toolEventOf(p, dialect)] };
  const activity = activityOf(p);
  if (activity) return { kind: 'record', activity };
  if (p.event === 'Notification') return { kind: 'none' }; // a notification that awaits nobody
  if (RECORDING_EVENTS.has(p.event)) return { kind: 'record' };
  return { kind: 'none', line: `event ${p.event} is not used; nothing recorded` };
}

/** True when the session's current boundary still lacks its context-fill numbers (worth a transcript read). */
function wantsTokens(session: SessionFiles, nowMs: number): boolean {
  const cur = session.gate()?.track?.current;
  if (!cur || cur.tokens.after !== undefined) return false;
  return nowMs - Date.parse(cur.compactedAt) < 60 * 60 * 1000;
}

/** Claude Code's part of the hook pipeline, or that of a runtime speaking its protocol (`dialect`). */
export function claudeCodeAdapter(
  dialect: HookDialect = CLAUDE_CODE_DIALECT,
): HookAdapter<HookPayload, LocalInputs, HookRun> {
  return {
    name: dialect.runtime,
    parse: (buffer, truncated) => parsePayload(buffer, truncated, dialect),
    open(io, p, local) {
      const env = resolveClaudeCodeEnv(io.env, io.script, dialect);
      return {
        deadlineMs: hookDeadlineMs(p.event, env.core.hookDeadlineMs),
        configure(warn) {
          const projectDir = resolveProjectDir(env, p.cwd);
          const { config, warnings } = loadClaudeCodeConfig(projectDir, env);
          if (warnings.length > 0) warn(`config: ${warnings.join('; ')}`);
          return {
            run: { payload: p, local, config, env, projectDir, processEnv: io.env, warn },
            state: claudeCodeState(env),
            gate: {
              config,
              state: claudeCodeState(env),
              warn,
              // The gate's slow path (ledger, classifier), in the recording bundle: loaded only then.
              rederive: async (sessionId, cached) =>
                (await import('./handlers.js')).rederive(config, env, warn)(sessionId, cached),
              get voice() {
                return claudeCodeVoice(env);
              },
              launch: { script: io.script, path: env.path, execPath: process.execPath },
            },
          };
        },
      };
    },
    route: (p) => routeOf(p, dialect),
    gateOutput: (answer, p) => gateOutput(answer, dialect, p.event),
    // A runtime with no post-compaction hook: a pending pre is confirmed from the session's event
    // log by the next hook of the session, before the gate answers (the slow path, only then).
    settle(run, session) {
      if (!dialect.compactionEvidence || !session.gate()?.track?.pending) return undefined;
      return import('./handlers.js').then((h) => h.confirmFromLog(run, session)).then(() => true);
    },
    // Restating is how a held agent gets going again, also where every tool is gated (`*`): the
    // restate tool of the server the project's .mcp.json registers as ours is never held.
    exempt: (run, p) =>
      p.toolName === MCP_RESTATE_TOOL_NAME &&
      run.env.dialect === CLAUDE_CODE_DIALECT &&
      restateToolRegistered(run.projectDir),
    async observe(run, session) {
      const p = run.payload;
      if (p.event === 'PostToolUse') {
        // After the tool ran: did it read the task record or the ledger? (provenance of the next restatement)
        const ran = { paths: p.readPaths ?? [], ...(p.command !== undefined ? { command: p.command } : {}) };
        if (readTheRecord(ran, run.config, p.cwd && isAbsolute(p.cwd) ? p.cwd : run.projectDir))
          noteRecordRead(session.state, p.sessionId, () => session.gate());
      }
      // A runtime whose restatement request rides on an ordinary event (Gemini CLI): once per
      // boundary, while the session's boundary has no restatement yet.
      if (dialect.restateOn?.has(p.event)) {
        const b = session.gate()?.boundary;
        if (b && !b.observed) {
          return (await import('./handlers.js')).restatementContext(
            run,
            session,
            runtimeEventName(dialect, p.event),
          );
        }
      }
      return '';
    },
    // An unchanged activity is still recorded while the current boundary lacks its numbers.
    stale: (_run, session, nowMs) => wantsTokens(session, nowMs),
    // Claude Code runs the activity hooks in the background (init): an unchanged one still moves
    // the recorded time on, so a later stale report is recognised. Through the recording bundle:
    // the session lock stays out of the gate's fast-path bundle.
    sameActivity: (run, session, activity) =>
      import('./handlers.js').then((h) => h.sameActivity(run, session, activity)),
    record: (run, session, activity) => import('./handlers.js').then((h) => h.handle(run, session, activity)),
  };
}

/**
 * Runs one hook invocation of Claude Code, or of a runtime that speaks its hook protocol
 * (`dialect`). Returns the exit code: always 0.
 */
export function runClaudeCodeHook(
  io: HookIo = processIo(),
  requested: HookDialect = CLAUDE_CODE_DIALECT,
): Promise<number> {
  const adapter = claudeCodeAdapter(requested);
  return runHookPipeline(
    io,
    requested.runtime === CLAUDE_CODE_DIALECT.runtime ? speakingCopilotInside(io, adapter) : adapter,
  );
}

type ClaudeCodeAdapter = ReturnType<typeof claudeCodeAdapter>;

/**
 * Copilot CLI runs the hooks of `.claude/settings.json` too: there they speak its dialect (its
 * state, its compaction evidence, its answers), decided from the payload and the hook's
 * environment (../copilot/inside.ts) before any later stage runs, every stage then Copilot's.
 */
function speakingCopilotInside(io: HookIo, claude: ClaudeCodeAdapter): ClaudeCodeAdapter {
  let chosen = claude;
  return {
    get name() {
      return chosen.name;
    },
    parse(buffer, truncated) {
      const parsed = claude.parse(buffer, truncated);
      if (parsed.ok && insideCopilot(io.env, parsed.payload.sessionId, parsed.local.transcriptPath)) {
        chosen = claudeCodeAdapter(COPILOT_DIALECT);
        return chosen.parse(buffer, truncated);
      }
      return parsed;
    },
    open: (hookIo, payload, local) => chosen.open(hookIo, payload, local),
    route: (payload) => chosen.route(payload),
    gateOutput: (answer, payload) => chosen.gateOutput(answer, payload),
    get timedOutReason() {
      return chosen.timedOutReason;
    },
    settle: (run, session) => chosen.settle?.(run, session),
    exempt: (run, payload) => chosen.exempt?.(run, payload) ?? false,
    observe: (run, session) => chosen.observe?.(run, session) ?? Promise.resolve(''),
    stale: (run, session, nowMs) => chosen.stale?.(run, session, nowMs) ?? false,
    sameActivity: (run, session, activity) =>
      chosen.sameActivity?.(run, session, activity) ?? Promise.resolve(),
    record: (run, session, activity) => chosen.record(run, session, activity),
  };
}

/**
 * The hook output for a gate answer: the documented JSON of `event` (`PreToolUse`, or
 * `PreSkillShellCommand`, whose output has the same fields; for a dialect that reads a top-level
 * `decision`, `{ decision: "deny", reason }` for `deny` and `ask` alike), or nothing for `allow`.
 */
export function gateOutput(
  answer: GateAnswer,
  dialect: HookDialect = CLAUDE_CODE_DIALECT,
  event = 'PreToolUse',
): string {
  if (answer.verdict === 'allow') return '';
  if (dialect.gateAnswer === 'decision') {
    // `ask` is answered `deny`: a headless Gemini CLI (0.61.0, `-p`) waits forever for a
    // confirmation nobody can give. The reason still says what the human can do.
    return `${JSON.stringify({ decision: 'deny', reason: answer.reason })}\n`;
  }
  const verdict = answer.verdict === 'ask' && dialect.askAs === 'deny' ? 'deny' : answer.verdict;
  return `${JSON.stringify({
    hookSpecificOutput: {
      hookEventName: event,
      permissionDecision: verdict,
      permissionDecisionReason: answer.reason,
    },
  })}\n`;
}
