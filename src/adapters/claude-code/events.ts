/**
 * Claude Code's hook events as core events: the translation table, pure. What each event means
 * for continuity is decided here once, for the hooks and for the replay of the orders recorded
 * from the real binary (test/fixtures/claude-code-2.1.328/).
 */
import type { BoundaryEvent, ResumeSource } from '../core/events.js';
import type { HookPayload } from './hook.js';

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
