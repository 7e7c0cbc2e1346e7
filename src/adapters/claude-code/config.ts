/**
 * Claude Code's facts for the adapter: its runtime name, its tools, its environment variables,
 * and how its hooks and the agent's shell find the project and the session. Resolved once at the
 * edge ({@link resolveClaudeCodeEnv}) into one typed object.
 *
 * Lean (the gate loads it): node:path and the core's configuration and state modules.
 */
import { isAbsolute, join, resolve } from 'node:path';
import { type ContinuityEnv, type LoadedConfig, loadConfig, resolveEnv } from '../core/config.js';
import type { ToolKind } from '../core/events.js';
import { MCP_RESTATE_TOOL_NAME, MCP_SERVER_NAME } from '../core/mcp-names.js';
import type { Voice } from '../core/messages.js';
import { launcherFor } from '../core/process.js';
import { isRecord, readJsonFile, type StateDir, stateDirOf } from '../core/state.js';

export { onPath } from '../core/process.js';

/** The runtime name written on every compaction span and ledger record, and the spans' `service.name`. */
export const RUNTIME = 'claude-code';

/**
 * A runtime that speaks Claude Code's hook protocol: the same payloads (`session_id`,
 * `hook_event_name`, `tool_name`, `tool_input`, `trigger`, `source`), the same answers
 * (`hookSpecificOutput.permissionDecision`, `additionalContext`) and the same compaction order
 * (`PreCompact → PostCompact → SessionStart(compact)` or its Claude Code variant), under a name,
 * tools, variables and settings file of its own. Qwen Code is one (src/adapters/qwen-code); the
 * adapter's code is written once, over this table.
 */
export interface HookDialect {
  /** The runtime name on spans and ledger records, `continuity hook <runtime>`, and the state directory's name. */
  readonly runtime: string;
  /** Tools the gate checks by default. */
  readonly gatedTools: readonly string[];
  /** Tools that run a command (`tool_input.command`). */
  readonly commandTools: ReadonlySet<string>;
  /** Tools that write a file (`tool_input.file_path` / `notebook_path`). */
  readonly fileTools: ReadonlySet<string>;
  /**
   * Tools that only read: never gated. When set, any other tool outside the gated list is unknown
   * to the gate and held while writes are held (`gate.unknownTools`); when not, it passes.
   */
  readonly readOnlyTools?: ReadonlySet<string>;
  /** How the restatement request and the gate's reasons name the consequential tools. */
  readonly consequentialTools: string;
  /** The variables the runtime sets: the project directory (hooks) and the session id (hooks and the agent's shell). */
  readonly env: { readonly projectDir: string; readonly sessionId: string };
  /** Prefix of the boundary ids this runtime's hooks make. */
  readonly boundaryPrefix: string;
  /** The project settings file init writes, relative to the project. */
  readonly settingsFile: string;
  /**
   * The runtime's settings files that load the continuity hooks (or MCP server): {@link settingsFile},
   * the other files init can write (`--settings`), and those the runtime reads hooks from beside
   * them (the user's, `~/`); a directory ends in `/`. The gate asks before a tool writes one
   * (`runtime_config_ask`).
   */
  readonly runtimeConfig: readonly string[];
  /**
   * The runtime's settings file of this machine only, beside {@link settingsFile} (Claude Code's
   * `.claude/settings.local.json`): where init puts hooks whose launcher is an absolute path of
   * this machine, so the committed file never holds one. None: such hooks go into
   * {@link settingsFile}, and init says so.
   */
  readonly localSettingsFile?: string;
  /**
   * The runtime replaces `$<env.projectDir>` in a hook command by the directory, shell-quoted,
   * before a shell sees it (Gemini CLI): init's project launcher then leaves the variable
   * unquoted. Default false: the shell expands the exported variable, which init quotes.
   */
  readonly projectDirQuoted?: boolean;
  /** The command word in `continuity init <word>`'s next-step line (the runtime's own command). */
  readonly command: string;
  /**
   * How PreCompact hands the summarizer its instruction: Claude Code appends a hook's plain
   * stdout to the compaction instructions (`text`); Qwen Code reads only
   * `hookSpecificOutput.additionalContext` and shows plain stdout as a message (`context`).
   */
  readonly preCompactOutput: 'text' | 'context';
  /**
   * The rules init adds to keep the agent's tools out of the evidence: Claude Code's
   * `permissions.deny` and `sandbox.filesystem.denyWrite` (`claude`); the deny rules only
   * (`permissions`: Qwen Code 0.24 warns that a top-level `sandbox` is a legacy setting it
   * ignores); none (`none`: the hooks file is not a settings file).
   */
  readonly protection: 'claude' | 'permissions' | 'none';
  /** The `tool_input` fields that name a file tool's target, first found wins. */
  readonly filePathFields: readonly string[];
  /** The events init registers (default: all of {@link hookRegistrations}'s). */
  readonly events?: ReadonlySet<string>;
  /** What a hooks file init creates starts with (e.g. Copilot's `{ "version": 1 }`); `--remove` deletes a file left with only this. */
  readonly settingsSeed?: Readonly<Record<string, unknown>>;
  /**
   * How the gate's `ask` is answered: as `ask` (default), or as `deny` for a runtime whose
   * non-interactive mode runs a tool it was asked to confirm (Copilot CLI 1.0.102 with
   * `--allow-all-tools`, recorded by test/copilot-e2e): the reason still says what the human can do.
   */
  readonly askAs?: 'deny';
  /**
   * For a runtime with no post-compaction hook (Copilot): when the session's own record shows a
   * compaction completed at or after `sinceMs`, the time it completed (RFC 3339); read locally,
   * never stored or sent. The next hook of the session confirms a pending pre capture with it, so
   * the record must be on disk before the runtime runs the next hook (Copilot's event log is
   * not: src/adapters/copilot/log.ts).
   */
  readonly compactionEvidence?: (
    env: NodeJS.ProcessEnv,
    sessionId: string,
    sinceMs: number,
    context: CompactionEvidenceContext,
  ) => string | undefined;
  /**
   * The runtime's names of Claude Code's events, where they differ (Gemini CLI: `PreToolUse` is
   * `BeforeTool`, `PreCompact` is `PreCompress`, …): init registers these names, and a payload's
   * `hook_event_name` is read back into Claude Code's. Default: Claude Code's own names.
   */
  readonly eventNames?: Readonly<Record<string, string>>;
  /** Init's hook timeouts are seconds; the runtime's unit is this many per second (Gemini CLI: 1000, milliseconds). Default 1. */
  readonly timeoutScale?: number;
  /**
   * How the gate answers: Claude Code's `hookSpecificOutput.permissionDecision` (`permission`,
   * the default), or a top-level `decision` and `reason` (`decision`: Gemini CLI's BeforeTool),
   * where `ask` is answered `deny` (a headless Gemini CLI waits forever on `ask`).
   */
  readonly gateAnswer?: 'permission' | 'decision';
  /**
   * For a runtime with no post-compaction context hook (Gemini CLI): the events (Claude Code's
   * names) whose answer carries the restatement request, once per boundary, as
   * `hookSpecificOutput.additionalContext`, after the boundary was confirmed from the runtime's record.
   */
  readonly restateOn?: ReadonlySet<string>;
  /** How the agent is shown the restatement command (see {@link Voice.restateForm}). */
  readonly restateForm: 'heredoc' | 'flags';
  /**
   * Whether the runtime runs a command hook with `async: true` in the background: init then
   * registers the activity hooks so (Claude Code 2.1.328 and 2.1.332, recorded; Qwen Code 0.24.4
   * reads the flag). Default false: the key is left out.
   */
  readonly asyncHooks?: boolean;
}

/** What {@link HookDialect.compactionEvidence} may read: the payload's transcript, and the adapter's state directory for markers. */
export interface CompactionEvidenceContext {
  /** The hook payload's `transcript_path`, read locally only. */
  readonly transcriptPath?: string;
  readonly state: StateDir;
}

/**
 * The tools the gate checks by default: those that change files or run commands. `MultiEdit` is
 * no longer a built-in tool of Claude Code 2.1.328; it stays in the list, harmlessly, for older
 * versions that still have it. `PowerShell` runs commands and is inspected like `Bash`.
 */
export const DEFAULT_GATED_TOOLS: readonly string[] = Object.freeze([
  'Edit',
  'Write',
  'MultiEdit',
  'NotebookEdit',
  'Bash',
  'PowerShell',
]);

/**
 * Claude Code's tools that only read, show or plan (2.1.328 and 2.1.332): never gated. A name
 * outside this list and {@link DEFAULT_GATED_TOOLS} (an `mcp__*` tool, `Task`/`Agent`, `Skill`,
 * a tool a later version adds, a lowercase `bash`) is unknown to the gate: while writes are held
 * it answers the unknown-tool policy (`gate.unknownTools`, default `ask`).
 */
export const READ_ONLY_TOOLS: ReadonlySet<string> = new Set([
  'Read',
  'Glob',
  'Grep',
  'LS',
  'NotebookRead',
  'WebFetch',
  'WebSearch',
  'TodoWrite',
  'TodoRead',
  'TaskOutput',
  'BashOutput',
  'KillShell',
  'KillBash',
  'ExitPlanMode',
  'EnterPlanMode',
  'AskUserQuestion',
  'ListMcpResourcesTool',
  'ReadMcpResourceTool',
  'ToolSearch',
]);

/**
 * Seconds before Claude Code gives up on each hook (what init writes as `timeout`). The gate must
 * answer fast (it takes tens of milliseconds; 5 s is a ceiling); PreCompact gets the most room
 * because it reads the task record and the ledger; a recording hook that times out loses only its
 * own evidence. Each hook's own deadline is a second below its timeout ({@link hookDeadlineMs}).
 */
export const HOOK_TIMEOUT_S: Readonly<Record<string, number>> = Object.freeze({
  PreToolUse: 5,
  PreSkillShellCommand: 5,
  PreCompact: 15,
  SessionStart: 10,
  PostCompact: 10,
  InstructionsLoaded: 10,
  PostToolUse: 5,
  UserPromptSubmit: 5,
  Notification: 5,
  PermissionRequest: 5,
  Stop: 5,
  Interrupt: 5,
});

/**
 * The deadline of one hook event, in milliseconds: `configured` (`CONTINUITY_HOOK_DEADLINE_MS`)
 * but at least a second below the event's timeout, so the hook answers (the gate `ask`) before
 * Claude Code gives up on it.
 */
export function hookDeadlineMs(event: string, configured: number): number {
  // Every dialect's hooks are registered by init with these timeouts (scaled to the runtime's
  // unit), and Copilot and Gemini let a tool run when its hook times out: the watchdog must answer
  // first there too.
  const timeout = (HOOK_TIMEOUT_S[event] ?? 5) * 1000;
  return Math.max(500, Math.min(configured, timeout - 1000));
}

/** How the restatement request and the gate's reasons name Claude Code's consequential tools. */
export const CONSEQUENTIAL_TOOLS =
  'Edit, Write, NotebookEdit, or a Bash or PowerShell command that changes anything';

/** Claude Code's environment variables the adapter reads. */
export const CLAUDE_ENV = {
  /** Set by Claude Code for hooks: the project directory. */
  projectDir: 'CLAUDE_PROJECT_DIR',
  /** Set by Claude Code for hooks and for the agent's Bash tool: the session id. */
  sessionId: 'CLAUDE_CODE_SESSION_ID',
} as const;

/** The project's MCP configuration file Claude Code reads (`continuity init` registers our server there). */
export const MCP_JSON = '.mcp.json';

/** Claude Code's project settings file, where init writes the hooks. */
const CLAUDE_SETTINGS = '.claude/settings.json';

/**
 * Claude Code's settings files that load hooks: the project's (init's default), the machine's
 * own (`init --settings .claude/settings.local.json`), the user's (its hooks, and a
 * `disableAllHooks` there, reach every project), and `.mcp.json` (the restate server).
 */
export const CLAUDE_RUNTIME_CONFIG: readonly string[] = Object.freeze([
  CLAUDE_SETTINGS,
  '.claude/settings.local.json',
  MCP_JSON,
  `~/${CLAUDE_SETTINGS}`,
]);

/** Claude Code itself. */
export const CLAUDE_CODE_DIALECT: HookDialect = Object.freeze({
  runtime: RUNTIME,
  gatedTools: DEFAULT_GATED_TOOLS,
  commandTools: new Set(['Bash', 'PowerShell']),
  fileTools: new Set(['Edit', 'Write', 'MultiEdit', 'NotebookEdit']),
  readOnlyTools: READ_ONLY_TOOLS,
  consequentialTools: CONSEQUENTIAL_TOOLS,
  env: CLAUDE_ENV,
  boundaryPrefix: 'cc',
  settingsFile: CLAUDE_SETTINGS,
  localSettingsFile: '.claude/settings.local.json',
  runtimeConfig: CLAUDE_RUNTIME_CONFIG,
  command: 'claude',
  preCompactOutput: 'text',
  protection: 'claude',
  filePathFields: ['file_path', 'notebook_path'],
  restateForm: 'heredoc',
  asyncHooks: true,
});

/** Claude Code's name of the runtime's event `name` (see {@link HookDialect.eventNames}). */
export function claudeEventName(dialect: HookDialect, name: string): string {
  if (!dialect.eventNames) return name;
  for (const [claude, theirs] of Object.entries(dialect.eventNames)) if (theirs === name) return claude;
  return name;
}

/** The runtime's name of Claude Code's event `name` (see {@link HookDialect.eventNames}). */
export function runtimeEventName(dialect: HookDialect, name: string): string {
  return dialect.eventNames?.[name] ?? name;
}

/** What a tool is to the gate, in `dialect`'s tool names (Claude Code's by default). */
export function toolKind(toolName: string | undefined, dialect: HookDialect = CLAUDE_CODE_DIALECT): ToolKind {
  if (toolName && dialect.commandTools.has(toolName)) return 'command';
  if (toolName && dialect.fileTools.has(toolName)) return 'file_write';
  // A dialect that lists its read-only tools has every other tool unknown to the gate (held while
  // writes are held); one that does not keeps them ungated.
  const readOnly = dialect.readOnlyTools;
  if (!readOnly) return 'other';
  // The restate tool is not here: the hook lets it through only when the project's .mcp.json
  // registers it as ours (./hook.ts); an impostor of the same name is unknown, held.
  if (toolName && readOnly.has(toolName)) return 'read_only';
  return 'unknown';
}

/** The environment of a Claude Code hook or of `continuity observe`, resolved once. */
export interface ClaudeCodeEnv {
  core: ContinuityEnv;
  /** The runtime whose hooks these are: Claude Code, or one that speaks its protocol. */
  dialect: HookDialect;
  /** The dialect's project variable (`CLAUDE_PROJECT_DIR`), when absolute. */
  projectDir?: string;
  /** The dialect's session variable (`CLAUDE_CODE_SESSION_ID`; the agent's shell has it). */
  sessionId?: string;
  /** `PATH`, to tell whether `continuity` is on it. */
  path: string;
  /** The script this process runs (`bin/continuity.js`), for the launcher the messages print. */
  script?: string;
}

/** Resolves the environment once: `env` is normally `process.env`, `script` `process.argv[1]`. */
export function resolveClaudeCodeEnv(
  env: NodeJS.ProcessEnv,
  script?: string,
  dialect: HookDialect = CLAUDE_CODE_DIALECT,
): ClaudeCodeEnv {
  const dir = env[dialect.env.projectDir];
  const session = env[dialect.env.sessionId];
  return {
    core: resolveEnv(env),
    dialect,
    ...(dir && isAbsolute(dir) ? { projectDir: resolve(dir) } : {}),
    ...(session ? { sessionId: session } : {}),
    path: env.PATH ?? '',
    ...(script ? { script } : {}),
  };
}

/** The adapter's state directory under the state root. */
export function claudeCodeState(env: ClaudeCodeEnv): StateDir {
  return stateDirOf(env.core.stateRoot, env.dialect.runtime);
}

/**
 * The project directory of a hook or command: `CLAUDE_PROJECT_DIR` (set by Claude Code for
 * hooks), else the hook payload's `cwd`, else the process's working directory.
 */
export function resolveProjectDir(env: ClaudeCodeEnv, payloadCwd?: string): string {
  if (env.projectDir) return env.projectDir;
  if (payloadCwd && isAbsolute(payloadCwd)) return resolve(payloadCwd);
  return process.cwd();
}

/** Loads the project's configuration with Claude Code's defaults. */
export function loadClaudeCodeConfig(projectDir: string, env: ClaudeCodeEnv): LoadedConfig {
  return loadConfig(projectDir, env.core, {
    runtime: env.dialect.runtime,
    gatedTools: env.dialect.gatedTools,
    runtimeConfig: env.dialect.runtimeConfig,
  });
}

/**
 * How the agent's shell starts continuity: `continuity` when it is on PATH, else
 * `node <this checkout's bin/continuity.js>`.
 */
export function launcher(env: ClaudeCodeEnv): string {
  return launcherFor(env.path, env.script);
}

/** The subcommand our server entry runs, by which init and the hooks recognise it. */
export const MCP_SERVE_ARGS: readonly string[] = Object.freeze(['mcp', '--runtime', 'claude-code']);

/** True when a `.mcp.json` server entry is ours (its arguments end in `mcp --runtime claude-code`). */
export function isOurServer(entry: unknown): boolean {
  if (!isRecord(entry) || !Array.isArray(entry.args)) return false;
  const args = entry.args as unknown[];
  const at = args.length - MCP_SERVE_ARGS.length;
  return at >= 0 && MCP_SERVE_ARGS.every((a, i) => args[at + i] === a);
}

/**
 * True when the project's `.mcp.json` registers our server, so the agent can be told about the
 * tool. Never throws: an unreadable or foreign file means "not registered" (the shell command is
 * offered as well, always).
 */
export function restateToolRegistered(projectDir: string | undefined): boolean {
  if (!projectDir) return false;
  const doc = readJsonFile(join(projectDir, MCP_JSON));
  return isRecord(doc) && isRecord(doc.mcpServers) && isOurServer(doc.mcpServers[MCP_SERVER_NAME]);
}

/**
 * The words' voice for Claude Code: with the restatement tool where the project's `.mcp.json`
 * registers our server (`continuity init claude-code` does), which the words then offer first
 * (Claude Code's dialect only: that server restates for Claude Code).
 */
export function claudeCodeVoice(env: ClaudeCodeEnv, projectDir = env.projectDir): Voice {
  const voice: Voice = {
    launcher: launcher(env),
    consequentialTools: env.dialect.consequentialTools,
    restateForm: env.dialect.restateForm,
  };
  // The server init registers is `mcp --runtime claude-code`: it restates for Claude Code's
  // adapter, so another dialect that loads `.mcp.json` (Copilot CLI does) is offered the command.
  // By name: the recording hooks' bundle holds its own copy of this module (and of the dialect).
  if (env.dialect.runtime === RUNTIME && restateToolRegistered(projectDir))
    voice.restateTool = MCP_RESTATE_TOOL_NAME;
  return voice;
}
