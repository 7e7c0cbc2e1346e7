/**
 * `continuity hook claude-code`: the one entry point for every Claude Code hook event, a thin
 * translation: stdin payload → core events; core answers → Claude Code's hook output. Reads the
 * event's JSON on stdin and exits 0, always; only the write gate (PreToolUse) ever blocks, and it
 * does so with the documented JSON answer, never with an exit code.
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
 * | anything else, malformed input | | exit 0, one line on stderr |
 *
 * Real order on Claude Code 2.1.328 (docs/claude-code.md): `PreCompact → SessionStart(compact) →
 * PostCompact`, InstructionsLoaded(compact) later or never; the core's assembly does not depend
 * on it. Subagent hooks carry the parent's `session_id` (plus `agent_id`/`agent_type`): they are
 * the session's, so a subagent's tool call is gated by the session's state and a subagent's
 * compaction is a boundary of the session.
 *
 * Reading the input: the adapter keeps only identifiers and enumerations; `transcript_path` is
 * kept apart ({@link LocalInputs}) and used only to read token counts locally, and
 * `compact_summary`, `custom_instructions`, prompts and tool payloads are never copied, so they
 * cannot reach the ledger or a span. Of the tool input the gate looks at the command and the
 * target file path, and only to decide; neither is stored. After a tool ran (`PostToolUse`) it
 * looks at its command and paths to tell whether the agent read the task record or the ledger
 * (the provenance of its next restatement, ../core/provenance.ts); nothing of them is stored.
 */

import { isAbsolute } from 'node:path';
import { COPILOT_DIALECT } from '../copilot/config.js';
import { insideCopilot } from '../copilot/inside.js';
import type { AdapterConfig } from '../core/config.js';
import type { ToolEvent } from '../core/events.js';
import { decideGate } from '../core/gate.js';
import { MCP_RESTATE_TOOL_NAME } from '../core/mcp-names.js';
import {
  armWatchdog,
  type HookIo,
  headField,
  payloadHead,
  processIo,
  runHookProcess,
  sessionIdProblem,
  stringField,
  withinHookDeadline,
} from '../core/process.js';
import { noteRecordRead, readTheRecord } from '../core/provenance.js';
import { activityStep, hookStartMs, isRecord, readActivityMark, readGateState } from '../core/state.js';
import {
  CLAUDE_CODE_DIALECT,
  type ClaudeCodeEnv,
  claudeCodeState,
  claudeCodeVoice,
  claudeEventName,
  type HookDialect,
  hookDeadlineMs,
  loadClaudeCodeConfig,
  resolveClaudeCodeEnv,
  resolveProjectDir,
  restateToolRegistered,
  runtimeEventName,
  toolKind,
} from './config.js';

export type { HookIo } from '../core/process.js';
export { MAX_PAYLOAD_BYTES, processIo, readAll, readStdin } from '../core/process.js';

// ── Input ─────────────────────────────────────────────────────────────────────────────────────
/**
 * The events the write gate answers: `PreToolUse`, and `PreSkillShellCommand` (Claude Code
 * 2.1.332 and later), which a skill's or a slash command's shell command (``!`…` ``) fires
 * instead of `PreToolUse`, with the same `tool_name` (`Bash`, `PowerShell`) and
 * `tool_input.command`. Its `allow` adds nothing; `deny` and `ask` keep the command from running.
 */
export const GATE_EVENTS: ReadonlySet<string> = new Set(['PreToolUse', 'PreSkillShellCommand']);

/** What the adapter keeps from a hook's input. */
export interface HookPayload {
  event: string;
  sessionId: string;
  /** Absolute working directory of the session; used locally to find the project, never stored. */
  cwd?: string;
  /** PreCompact / PostCompact. */
  trigger?: 'manual' | 'auto';
  /** SessionStart. */
  source?: string;
  /** InstructionsLoaded. */
  loadReason?: string;
  /** PreToolUse / PostToolUse. */
  toolName?: string;
  /** PreToolUse, Bash/PowerShell: the command, to refuse `continuity approve` (not stored). */
  command?: string;
  /** PreToolUse, Edit/Write/MultiEdit/NotebookEdit: the target path (not stored). */
  filePath?: string;
  /**
   * PostToolUse: the paths the tool was given (`file_path`, `notebook_path`, a search's `path`,
   * a glob's `pattern` or `glob`), to tell whether it read the task record (not stored).
   */
  readPaths?: string[];
  /** Notification. */
  notificationType?: string;
  /** Inside a subagent: its id and type (the session is the parent's). */
  agentId?: string;
  agentType?: string;
  /** True when the input was larger than {@link MAX_PAYLOAD_BYTES} and read from its head only. */
  truncated?: boolean;
}

/** Inputs used only inside this process and never stored or sent anywhere. */
export interface LocalInputs {
  /** The session transcript, read locally for token counts only. */
  transcriptPath?: string;
}

/** The result of reading a payload: the payload, or a one-line problem. */
export type PayloadResult =
  | { ok: true; payload: HookPayload; local: LocalInputs; problem?: never }
  | { ok: false; problem: string; payload?: never; local?: never };

/** Turns a parsed object into a {@link HookPayload}, or names the first problem. */
export function toPayload(parsed: unknown, dialect: HookDialect = CLAUDE_CODE_DIALECT): PayloadResult {
  const read = payloadHead(parsed);
  if (!read.ok) return { ok: false, problem: read.problem };
  const { raw } = read;
  const p: HookPayload = { ...read.head, event: claudeEventName(dialect, read.head.event) };
  const loadReason = stringField(raw, 'load_reason', 64);
  if (loadReason) p.loadReason = loadReason;
  const toolName = stringField(raw, 'tool_name', 256);
  if (toolName) p.toolName = toolName;
  const notificationType = stringField(raw, 'notification_type', 64);
  if (notificationType) p.notificationType = notificationType;
  const agentId = stringField(raw, 'agent_id', 256);
  if (agentId) p.agentId = agentId;
  const agentType = stringField(raw, 'agent_type', 256);
  if (agentType !== undefined) p.agentType = agentType;
  if (GATE_EVENTS.has(p.event) && isRecord(raw.tool_input)) {
    const input = raw.tool_input;
    if (typeof input.command === 'string') p.command = input.command;
    // Any length: a long path can still resolve to a short one (`./././…`), so none is skipped.
    for (const field of dialect.filePathFields) {
      const path = stringField(input, field, Number.MAX_SAFE_INTEGER);
      if (path) {
        p.filePath = path;
        break;
      }
    }
  }
  if (p.event === 'PostToolUse' && isRecord(raw.tool_input)) {
    const input = raw.tool_input;
    if (typeof input.command === 'string') p.command = input.command;
    p.readPaths = ['file_path', 'notebook_path', 'path', 'pattern', 'glob']
      .map((k) => stringField(input, k, 4096))
      .filter((v): v is string => v !== undefined);
  }
  const transcriptPath = stringField(raw, 'transcript_path');
  return { ok: true, payload: p, local: transcriptPath ? { transcriptPath } : {} };
}

/**
 * Parses a hook's stdin. A payload over the size limit is read from its head: the identifying
 * fields come first in Claude Code's input, so the gate can still decide on the session's state.
 */
export function parsePayload(
  buffer: Buffer,
  truncated: boolean,
  dialect: HookDialect = CLAUDE_CODE_DIALECT,
): PayloadResult {
  if (truncated) {
    const head = buffer.subarray(0, 65536).toString('utf8');
    const event = headField(head, 'hook_event_name');
    const sessionId = headField(head, 'session_id');
    if (!event || sessionId === undefined || sessionIdProblem(sessionId)) {
      return { ok: false, problem: 'input too large and its head names no event and session' };
    }
    const p: HookPayload = { event: claudeEventName(dialect, event), sessionId, truncated: true };
    const toolName = headField(head, 'tool_name');
    if (toolName) p.toolName = toolName;
    // The target, when it comes before the content (Claude Code sends file_path first): the gate
    // still guards it, and asks whatever it finds, since the rest was not read.
    for (const field of dialect.filePathFields) {
      const filePath = headField(head, field);
      if (filePath) {
        p.filePath = filePath;
        break;
      }
    }
    const cwd = headField(head, 'cwd');
    if (cwd) p.cwd = cwd;
    return { ok: true, payload: p, local: {} };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(buffer.toString('utf8'));
  } catch {
    return { ok: false, problem: 'input is not valid JSON' };
  }
  return toPayload(raw, dialect);
}

// ── Dispatch ──────────────────────────────────────────────────────────────────────────────────
/**
 * `Notification` types that mean a human is awaited (the others, such as `auth_success` or
 * `agent_completed`, say nothing about the agent's activity). From the 2.1.328 binary and the
 * hooks documentation.
 */
export const HUMAN_AWAITED_NOTIFICATIONS: ReadonlySet<string> = new Set([
  'permission_prompt',
  'idle_prompt',
  'elicitation_dialog',
  'worker_permission_prompt',
  'agent_needs_input',
]);

/** The activity a hook event reports, if any. */
export function activityOf(p: HookPayload): 'working' | 'waiting_human' | 'idle' | undefined {
  switch (p.event) {
    case 'PostToolUse':
    case 'PostToolUseFailure':
    case 'UserPromptSubmit':
      return 'working';
    case 'PermissionRequest':
      return 'waiting_human';
    case 'Notification':
      return p.notificationType && HUMAN_AWAITED_NOTIFICATIONS.has(p.notificationType)
        ? 'waiting_human'
        : undefined;
    case 'Stop':
      return 'idle';
    default:
      return undefined;
  }
}

const RECORDING_EVENTS = new Set(['PreCompact', 'PostCompact', 'SessionStart', 'InstructionsLoaded']);

/** What every recording handler gets. */
export interface HookRun {
  payload: HookPayload;
  local: LocalInputs;
  config: AdapterConfig;
  env: ClaudeCodeEnv;
  warn: (line: string) => void;
}

/** True when the session's current boundary still lacks its context-fill numbers (worth a transcript read). */
function wantsTokens(env: ClaudeCodeEnv, sessionId: string, nowMs: number): boolean {
  const cur = readGateState(claudeCodeState(env), sessionId)?.track?.current;
  if (!cur || cur.tokens.after !== undefined) return false;
  return nowMs - Date.parse(cur.compactedAt) < 60 * 60 * 1000;
}

/**
 * Runs one hook invocation of Claude Code, or of a runtime that speaks its hook protocol
 * (`dialect`). Returns the exit code: always 0.
 */
export function runClaudeCodeHook(
  io: HookIo = processIo(),
  requested: HookDialect = CLAUDE_CODE_DIALECT,
): Promise<number> {
  return runHookProcess(io, requested.runtime, async (warn) => {
    const { buffer, truncated } = await io.readInput();
    let dialect = requested;
    let parsed = parsePayload(buffer, truncated, dialect);
    // Copilot CLI runs the hooks of `.claude/settings.json` too: there they speak its dialect.
    if (
      parsed.ok &&
      dialect.runtime === CLAUDE_CODE_DIALECT.runtime &&
      insideCopilot(io.env, parsed.payload.sessionId, parsed.local.transcriptPath)
    ) {
      dialect = COPILOT_DIALECT;
      parsed = parsePayload(buffer, truncated, dialect);
    }
    const name = dialect.runtime;
    if (!parsed.ok) {
      warn(`hook ${name}: ${parsed.problem}; nothing recorded`);
      return;
    }
    const p = parsed.payload;
    const env = resolveClaudeCodeEnv(io.env, io.script, dialect);
    const gateEvent = GATE_EVENTS.has(p.event);
    const deadline = hookDeadlineMs(p.event, env.core.hookDeadlineMs);
    // Past its deadline the gate asks and a recording hook answers nothing, and the process exits:
    // Claude Code never sees a hook of ours time out (and `onFailure: "block"` on the gate's
    // registration blocks the tool if one ever does).
    armWatchdog(
      io,
      deadline,
      () =>
        gateEvent
          ? gateOutput({ verdict: 'ask', code: 'gate_failed', reason: GATE_TIMED_OUT }, dialect, p.event)
          : '',
      `hook ${name}: ${p.event}: gave up after ${deadline} ms${gateEvent ? '; asking' : ' so the agent is not held up'}`,
    );
    const projectDir = resolveProjectDir(env, p.cwd);
    const { config, warnings } = loadClaudeCodeConfig(projectDir, env);
    if (warnings.length > 0) warn(`config: ${warnings.join('; ')}`);

    // A runtime with no post-compaction hook: a pending pre is confirmed from the session's event
    // log by the next hook of the session, before the gate answers (the slow path, only then).
    let confirmed = true;
    if (dialect.compactionEvidence && readGateState(claudeCodeState(env), p.sessionId)?.track?.pending) {
      const run: HookRun = { payload: p, local: parsed.local, config, env, warn };
      confirmed = false;
      const confirming = import('./handlers.js')
        .then((h) => h.confirmFromLog(run, io.env))
        .then((out) => {
          confirmed = true;
          return out;
        });
      await withinHookDeadline(confirming, deadline - 250, p.event, warn);
    }
    if (gateEvent && !confirmed) {
      // A compaction may have completed that could not be confirmed in time: the cache does not
      // know it yet, so what it says is no verdict. Never allow on it.
      io.stdout.write(
        gateOutput(
          { verdict: 'ask', code: 'state_unknown', reason: COMPACTION_UNCONFIRMED },
          dialect,
          p.event,
        ),
      );
      return;
    }
    if (gateEvent) {
      // Restating is how a held agent gets going again, also where every tool is gated (`*`): the
      // restate tool of the server the project's .mcp.json registers as ours is never held.
      if (
        p.toolName === MCP_RESTATE_TOOL_NAME &&
        env.dialect === CLAUDE_CODE_DIALECT &&
        restateToolRegistered(projectDir)
      )
        return;
      const answer = await decideGate(p.sessionId, toolEventOf(p, dialect), {
        config,
        state: claudeCodeState(env),
        rederive: async (sessionId, cached) =>
          (await import('./handlers.js')).rederive(config, env, warn)(sessionId, cached),
        get voice() {
          return claudeCodeVoice(env);
        },
        warn,
        launch: { script: io.script, path: env.path, execPath: process.execPath },
      });
      io.stdout.write(gateOutput(answer, dialect, p.event));
      return;
    }
    if (p.event === 'PostToolUse') {
      // After the tool ran: did it read the task record or the ledger? (provenance of the next restatement)
      const ran = { paths: p.readPaths ?? [], ...(p.command !== undefined ? { command: p.command } : {}) };
      if (readTheRecord(ran, config, p.cwd && isAbsolute(p.cwd) ? p.cwd : projectDir))
        noteRecordRead(claudeCodeState(env), p.sessionId);
    }
    // A runtime whose restatement request rides on an ordinary event (Gemini CLI): once per
    // boundary, while the session's boundary has no restatement yet.
    if (dialect.restateOn?.has(p.event)) {
      const b = readGateState(claudeCodeState(env), p.sessionId)?.boundary;
      if (b && !b.observed) {
        const run: HookRun = { payload: p, local: parsed.local, config, env, warn };
        const context = (await import('./handlers.js')).restatementContext(
          run,
          runtimeEventName(dialect, p.event),
        );
        if (context) io.stdout.write(context);
      }
    }
    const activity = activityOf(p);
    if (activity) {
      // Unchanged or stale activity (a background hook of an earlier event finishing late, see
      // recordActivity): nothing to record, unless the current boundary still lacks its numbers.
      // An unchanged one still moves the recorded time on, so a later stale report is recognised.
      const state = claudeCodeState(env);
      const step = activityStep(readActivityMark(state, p.sessionId), activity, hookStartMs());
      if (step !== 'changed' && !wantsTokens(env, p.sessionId, Date.now())) {
        if (step === 'same')
          await (await import('../core/track.js')).noteSameActivity(
            state,
            p.sessionId,
            activity,
            hookStartMs(),
            warn,
          );
        return;
      }
    } else if (p.event === 'Notification') {
      return; // a notification that awaits nobody
    } else if (!RECORDING_EVENTS.has(p.event)) {
      warn(`hook ${name}: event ${p.event} is not used; nothing recorded`);
      return;
    }
    const run: HookRun = { payload: p, local: parsed.local, config, env, warn };
    const handled = import('./handlers.js').then((h) => h.handle(run, activity));
    const out = await withinHookDeadline(handled, deadline - 250, p.event, warn);
    if (out) io.stdout.write(out);
  });
}

/** The core's tool event for a `PreToolUse` payload: the tool, what kind it is, what the gate inspects. */
export function toolEventOf(p: HookPayload, dialect: HookDialect = CLAUDE_CODE_DIALECT): ToolEvent {
  return {
    type: 'tool',
    toolName: p.toolName ?? '',
    kind: toolKind(p.toolName, dialect),
    ...(p.command !== undefined ? { command: p.command } : {}),
    ...(p.filePath !== undefined ? { filePath: p.filePath } : {}),
    ...(p.truncated ? { truncated: true } : {}),
  };
}

/** The reason of a gate whose session's pending compaction could not be confirmed in time. */
const COMPACTION_UNCONFIRMED =
  'The continuity gate asks a human first: a compaction of this session may have completed, and it could not be confirmed in time, so the gate cannot tell whether writes are held.';

/** The reason of a gate that ran out of its own deadline (inline: the messages may be what hangs). */
const GATE_TIMED_OUT =
  'The continuity gate asks a human first: it ran out of time while inspecting this tool call, so it cannot tell whether it is safe.';

/**
 * The hook output for a gate answer: the documented JSON of `event` (`PreToolUse`, or
 * `PreSkillShellCommand`, whose output has the same fields; for a dialect that reads a top-level
 * `decision`, `{ decision: "deny", reason }` for `deny` and `ask` alike), or nothing for `allow`.
 */
export function gateOutput(
  answer: import('../core/events.js').GateAnswer,
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
