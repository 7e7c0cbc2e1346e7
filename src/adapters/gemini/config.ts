/**
 * Gemini CLI's facts for the adapter. Gemini CLI 0.61 sends its command hooks Claude Code's
 * payload fields (`session_id`, `transcript_path`, `cwd`, `hook_event_name`, `tool_name`,
 * `tool_input`, `trigger`, `source`) under event names of its own, and reads a top-level
 * `decision`/`reason` and `hookSpecificOutput.additionalContext` from their stdout; so the adapter
 * is the Claude Code adapter's code over this table. What differs (recorded on 0.61.0,
 * docs/gemini-cli.md): `PreCompress` fires on every turn before the threshold check and its answer
 * is ignored, there is no post-compaction hook (a pending pre is confirmed from the session's
 * conversation file, src/adapters/gemini/transcript.ts), the restatement request rides on the next
 * AfterTool or BeforeAgent context, hook timeouts are milliseconds.
 *
 * Lean (the gate loads it).
 */
import type { HookDialect } from '../claude-code/config.js';
import { geminiCompactionEvidence } from './transcript.js';

/** The runtime name on spans and ledger records, and `continuity hook gemini`. */
export const GEMINI_RUNTIME = 'gemini';

/**
 * The tools the gate checks by default (Gemini CLI 0.61's built-in names): the file writers
 * (`write_file`, `replace`) and the shell. `save_memory` writes only Gemini's own memory file.
 */
export const GEMINI_GATED_TOOLS: readonly string[] = Object.freeze([
  'write_file',
  'replace',
  'run_shell_command',
]);

/** Gemini CLI's project settings file, where init writes the hooks. */
const GEMINI_SETTINGS = '.gemini/settings.json';

/** Gemini CLI, as a dialect of Claude Code's hook protocol. */
export const GEMINI_DIALECT: HookDialect = Object.freeze({
  runtime: GEMINI_RUNTIME,
  gatedTools: GEMINI_GATED_TOOLS,
  commandTools: new Set(['run_shell_command']),
  fileTools: new Set(['write_file', 'replace']),
  consequentialTools: 'write_file, replace, or a run_shell_command that changes anything',
  // Gemini sets GEMINI_PROJECT_DIR and GEMINI_SESSION_ID for hooks; the agent's shell gets neither.
  env: { projectDir: 'GEMINI_PROJECT_DIR', sessionId: 'GEMINI_SESSION_ID' },
  boundaryPrefix: 'gm',
  settingsFile: GEMINI_SETTINGS,
  // The project's and the user's settings both load hooks.
  runtimeConfig: [GEMINI_SETTINGS, `~/${GEMINI_SETTINGS}`],
  // Gemini CLI 0.61.0 replaces `$GEMINI_PROJECT_DIR` in a hook command by the directory, already
  // shell-quoted (its `expandCommand`, for every shell): inside double quotes that would break.
  projectDirQuoted: true,
  command: 'gemini',
  // PreCompress's answer is ignored by Gemini CLI: nothing reaches its summarizer.
  preCompactOutput: 'context',
  protection: 'none',
  filePathFields: ['file_path'],
  events: new Set(['PreToolUse', 'PreCompact', 'SessionStart', 'PostToolUse', 'UserPromptSubmit', 'Stop']),
  eventNames: {
    PreToolUse: 'BeforeTool',
    PreCompact: 'PreCompress',
    PostToolUse: 'AfterTool',
    UserPromptSubmit: 'BeforeAgent',
    Stop: 'AfterAgent',
  },
  timeoutScale: 1000,
  gateAnswer: 'decision',
  restateOn: new Set(['PostToolUse', 'UserPromptSubmit']),
  compactionEvidence: geminiCompactionEvidence,
  // Gemini rewrites `<` and `>` in added context as `&lt;` and `&gt;` (0.61.0): no here-document.
  restateForm: 'flags',
});
