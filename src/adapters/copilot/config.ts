/**
 * GitHub Copilot CLI's facts for the adapter. Copilot 1.0 runs hooks written in Claude Code's
 * format from `.github/hooks/*.json` and sends them Claude Code's payloads (tool names translated
 * to Claude's: `bash` → `Bash`, `create` → `Write`, `edit` → `Edit`), and honours Claude Code's
 * PreToolUse answer; so the adapter is the Claude Code adapter's code over this table. What
 * differs (recorded on 1.0.102, docs/copilot.md): no post-compaction hook (a pending pre is
 * confirmed from Copilot's event log, src/adapters/copilot/log.ts), a file tool's target in
 * `tool_input.path`, no session variable in the agent's shell, and a hooks file that is not a
 * settings file.
 *
 * Lean (the gate loads it).
 */
import { dirname } from 'node:path';
import { CLAUDE_RUNTIME_CONFIG, type HookDialect } from '../claude-code/config.js';
import { copilotCompactionEvidence } from './log.js';

/** The runtime name on spans and ledger records, and `continuity hook copilot`. */
export const COPILOT_RUNTIME = 'copilot';

/** The tools the gate checks by default, by the Claude Code names Copilot gives its hooks. */
export const COPILOT_GATED_TOOLS: readonly string[] = Object.freeze([
  'Write',
  'Edit',
  'MultiEdit',
  'NotebookEdit',
  'Bash',
  'PowerShell',
  'apply_patch',
]);

/** The hooks file init writes; Copilot reads every JSON file of its directory. */
const COPILOT_HOOKS_FILE = '.github/hooks/continuity.json';

/** GitHub Copilot CLI, as a dialect of Claude Code's hook protocol. */
export const COPILOT_DIALECT: HookDialect = Object.freeze({
  runtime: COPILOT_RUNTIME,
  gatedTools: COPILOT_GATED_TOOLS,
  commandTools: new Set(['Bash', 'PowerShell']),
  fileTools: new Set(['Write', 'Edit', 'MultiEdit', 'NotebookEdit', 'apply_patch']),
  consequentialTools: 'create, edit, apply_patch, or a bash command that changes anything',
  // Copilot sets CLAUDE_PROJECT_DIR for Claude-format hooks; it gives the agent's shell no session id.
  env: { projectDir: 'CLAUDE_PROJECT_DIR', sessionId: 'COPILOT_CONTINUITY_SESSION_ID' },
  boundaryPrefix: 'cp',
  settingsFile: COPILOT_HOOKS_FILE,
  // Copilot runs every `.github/hooks/*.json`, and Claude Code's project hooks and `.mcp.json` too.
  runtimeConfig: [`${dirname(COPILOT_HOOKS_FILE)}/`, ...CLAUDE_RUNTIME_CONFIG],
  // Copilot loads every `.github/hooks/*.json` (1.0.102, recorded by test/copilot-e2e): a hooks
  // file that runs this machine's path goes beside the committed one, git-ignored.
  localSettingsFile: '.github/hooks/continuity.local.json',
  command: 'copilot',
  // Copilot's preCompact is a notification: no answer reaches its summarizer.
  preCompactOutput: 'context',
  protection: 'none',
  filePathFields: ['path', 'file_path'],
  events: new Set(['PreToolUse', 'PreCompact', 'SessionStart', 'PostToolUse', 'UserPromptSubmit', 'Stop']),
  settingsSeed: { version: 1 },
  compactionEvidence: copilotCompactionEvidence,
  // Copilot's prompt mode with --allow-all-tools runs a tool its hook asked to confirm.
  askAs: 'deny',
  restateForm: 'heredoc',
});
