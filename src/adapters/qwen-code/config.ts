/**
 * Qwen Code's facts for the adapter. Qwen Code 0.24 speaks Claude Code's hook protocol (the same
 * payload fields, the same `hookSpecificOutput` answers, `PreCompact → PostCompact →
 * SessionStart(compact)` recorded on the real binary: docs/qwen-code.md), so the adapter is the
 * Claude Code adapter's code over this table: Qwen's tool names, variables and settings file.
 *
 * Lean (the gate loads it).
 */
import type { HookDialect } from '../claude-code/config.js';

/** The runtime name on spans and ledger records, and `continuity hook qwen-code`. */
export const QWEN_RUNTIME = 'qwen-code';

/**
 * The tools the gate checks by default (Qwen Code 0.24.4's `ToolNames`): the file writers and
 * the shell. `exec` runs model-written code that calls other tools; it is gated too, as a tool
 * whose effect the gate cannot read.
 */
export const QWEN_GATED_TOOLS: readonly string[] = Object.freeze([
  'write_file',
  'edit',
  'notebook_edit',
  'run_shell_command',
  'exec',
]);

/** Qwen Code's project settings file, where init writes the hooks. */
const QWEN_SETTINGS = '.qwen/settings.json';

/** Qwen Code, as a dialect of Claude Code's hook protocol. */
export const QWEN_CODE_DIALECT: HookDialect = Object.freeze({
  runtime: QWEN_RUNTIME,
  gatedTools: QWEN_GATED_TOOLS,
  commandTools: new Set(['run_shell_command']),
  fileTools: new Set(['write_file', 'edit', 'notebook_edit']),
  consequentialTools: 'write_file, edit, notebook_edit, or a run_shell_command that changes anything',
  // Qwen Code sets QWEN_PROJECT_DIR (and CLAUDE_PROJECT_DIR) for hooks, QWEN_CODE_SESSION_ID for
  // hooks and for the agent's shell commands (observed on 0.24.4).
  env: { projectDir: 'QWEN_PROJECT_DIR', sessionId: 'QWEN_CODE_SESSION_ID' },
  boundaryPrefix: 'qw',
  settingsFile: QWEN_SETTINGS,
  // The project's and the user's settings both load hooks.
  runtimeConfig: [QWEN_SETTINGS, `~/${QWEN_SETTINGS}`],
  command: 'qwen',
  // PreCompact's plain stdout is only a message in Qwen; `additionalContext` reaches the summarizer.
  preCompactOutput: 'context',
  protection: 'permissions',
  filePathFields: ['file_path', 'notebook_path'],
  // Qwen rewrites `<` and `>` in added context as `&lt;` and `&gt;` (0.24.4): no here-document.
  restateForm: 'flags',
});
