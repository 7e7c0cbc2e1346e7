/**
 * Claude Code's hook events as core events: the translation table, pure. What each event means
 * for continuity is decided here once, for the hooks and for the replay of the orders recorded
 * from the real binary (test/fixtures/claude-code-2.1.328/).
 */
import type { BoundaryEvent, ResumeSource, ToolEvent } from '../core/events.js';
import { CLAUDE_CODE_DIALECT, type HookDialect, toolKind } from './config.js';
import type { HookPayload } from './payload.js';

/**
 * Claude Code's post-compaction signals, as the core's assembly names them. InstructionsLoaded
 * fires once per instruction file, so it is `repeatable`.
 */
export const SIGNALS = {
  sessionStart: 'session_start_compact',
  postCompact: 'post_compact',
  instructionsLoaded: 'instructions_loaded_compact',
  /** A dialect with no post-compaction hook: the runtime's own record of a completed compaction (Copilot's `session.compaction_complete`). */
  compactionLog: 'compaction_log',
} as const;

const RESUME_SOURCES: ReadonlySet<string> = new Set(['startup', 'resume', 'clear', 'fork']);

/** The boundary event a hook payload is, if any (`at`: the time it arrived). */
export function boundaryEventOf(p: HookPayload, at: string): BoundaryEvent | undefined {
  const trigger = p.trigger ? { trigger: p.trigger } : {};
  switch (p.event) {
    case 'PreCompact':
      return { type: 'pre', at, ...trigger };
    case 'PostCompact':
      return { type: 'compacted', at, signal: SIGNALS.postCompact, ...trigger };
    case 'SessionStart':
      return p.source === 'compact' ? { type: 'compacted', at, signal: SIGNALS.sessionStart } : undefined;
    case 'InstructionsLoaded':
      return p.loadReason === 'compact'
        ? { type: 'compacted', at, signal: SIGNALS.instructionsLoaded, repeatable: true }
        : undefined;
    default:
      return undefined;
  }
}

/** How a SessionStart that is not a compaction (re)starts the session, if it is one. */
export function resumeSourceOf(p: HookPayload): ResumeSource | undefined {
  return p.event === 'SessionStart' && p.source && RESUME_SOURCES.has(p.source)
    ? (p.source as ResumeSource)
    : undefined;
}

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
    // The turn was stopped (Esc, a denied permission, a rewind, an SDK interrupt()): Stop does not
    // fire then, so without this the session would stay `working` while nothing runs.
    case 'Interrupt':
      return 'idle';
    default:
      return undefined;
  }
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
