/**
 * Codex CLI's hook events as core events: the translation table, pure. What each event means for
 * continuity is decided here once, for the hooks and for the replay of the orders recorded from
 * the real binary (test/fixtures/codex-0.171.0/).
 *
 * | Codex event | core event |
 * | --- | --- |
 * | PreCompact (`trigger` auto / manual) | `pre` |
 * | PostCompact | `compacted` (`post_compact`) |
 * | SessionStart `source: "compact"` | `compacted` (`session_start_compact`) |
 * | SessionStart `startup` / `resume` / `fork` / `clear` | `resumed` |
 * | PreToolUse | `tool` |
 * | PostToolUse, UserPromptSubmit | `activity` working |
 * | PermissionRequest | `activity` waiting_human |
 * | Stop | `activity` idle |
 *
 * On 0.171.0 PostCompact always comes first; SessionStart(compact) follows it in the same turn
 * for an automatic mid-turn compaction, at the start of the next turn for a manual one, and never
 * when the process ends before that turn (docs/codex.md). The core's assembly takes any order.
 */
import type { BoundaryEvent, ResumeSource, ToolEvent } from '../core/events.js';
import { toolKind } from './config.js';
import { patchTargets } from './patch.js';

/** What the adapter keeps from a Codex hook's input (identifiers and enumerations only). */
export interface CodexPayload {
  event: string;
  sessionId: string;
  /** Absolute working directory of the session; used locally to find the project, never stored. */
  cwd?: string;
  /** PreCompact / PostCompact. */
  trigger?: 'manual' | 'auto';
  /** SessionStart. */
  source?: string;
  /** PreToolUse / PostToolUse / PermissionRequest. */
  toolName?: string;
  /** PreToolUse: `tool_input.command`, the shell command or the patch text (inspected, never stored). */
  command?: string;
  /** True when the input was too large and was read from its head only. */
  truncated?: boolean;
}

/** Codex's post-compaction signals, as the core's assembly names them. */
export const SIGNALS = {
  postCompact: 'post_compact',
  sessionStart: 'session_start_compact',
} as const;

const RESUME_SOURCES: ReadonlySet<string> = new Set(['startup', 'resume', 'clear', 'fork']);

// Like Claude Code's table on purpose, for the events Codex shares with it; each runtime's table stays in its folder.
/** The boundary event a hook payload is, if any (`at`: the time it arrived). */
export function boundaryEventOf(p: CodexPayload, at: string): BoundaryEvent | undefined {
  const trigger = p.trigger ? { trigger: p.trigger } : {};
  switch (p.event) {
    case 'PreCompact':
      return { type: 'pre', at, ...trigger };
    case 'PostCompact':
      return { type: 'compacted', at, signal: SIGNALS.postCompact, ...trigger };
    case 'SessionStart':
      return p.source === 'compact' ? { type: 'compacted', at, signal: SIGNALS.sessionStart } : undefined;
    default:
      return undefined;
  }
}

/** How a SessionStart that is not a compaction (re)starts the session, if it is one. */
export function resumeSourceOf(p: CodexPayload): ResumeSource | undefined {
  return p.event === 'SessionStart' && p.source && RESUME_SOURCES.has(p.source)
    ? (p.source as ResumeSource)
    : undefined;
}

/** The activity a hook event reports, if any. */
export function activityOf(p: CodexPayload): 'working' | 'waiting_human' | 'idle' | undefined {
  switch (p.event) {
    case 'PostToolUse':
    case 'UserPromptSubmit':
      return 'working';
    case 'PermissionRequest':
      return 'waiting_human';
    case 'Stop':
      return 'idle';
    default:
      return undefined;
  }
}

/**
 * The tool events of one PreToolUse call: one per target file of a patch (a patch may touch
 * several), the command of a shell call, an uninspectable write when no target could be read.
 */
export function toolEventsOf(p: CodexPayload): ToolEvent[] {
  const kind = toolKind(p.toolName);
  const base = { type: 'tool' as const, toolName: p.toolName ?? '', kind };
  if (kind === 'command') {
    return [
      {
        ...base,
        ...(p.command !== undefined ? { command: p.command } : {}),
        ...(p.truncated ? { truncated: true } : {}),
      },
    ];
  }
  if (kind === 'file_write') {
    const targets = p.command !== undefined && !p.truncated ? patchTargets(p.command) : undefined;
    if (!targets) return [{ ...base, truncated: true }];
    return targets.map((filePath) => ({ ...base, filePath }));
  }
  return [base];
}
