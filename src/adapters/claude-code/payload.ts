/**
 * Claude Code's hook input as the adapter keeps it: the first stage of the hook pipeline
 * (../core/pipeline.ts), stdin bytes → {@link HookPayload}. Only identifiers and enumerations are
 * kept; `transcript_path` is kept apart ({@link LocalInputs}) and used only to read token counts
 * locally; `compact_summary`, `custom_instructions`, prompts and tool payloads are never copied, so
 * they cannot reach the ledger or a span. Of the tool input the gate looks at the command and the
 * target file path, and only to decide; neither is stored. Shared by every dialect of Claude
 * Code's hook protocol (Qwen Code, Copilot CLI, Gemini CLI).
 */
import type { AdapterConfig } from '../core/config.js';
import { headField, payloadHead, sessionIdProblem, stringField } from '../core/process.js';
import { isRecord } from '../core/state.js';
import { CLAUDE_CODE_DIALECT, type ClaudeCodeEnv, claudeEventName, type HookDialect } from './config.js';

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
  /** True when the input was larger than the hook input bound (`MAX_PAYLOAD_BYTES`, ../core/process.ts) and read from its head only. */
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

/** What every recording handler gets. */
export interface HookRun {
  payload: HookPayload;
  local: LocalInputs;
  config: AdapterConfig;
  env: ClaudeCodeEnv;
  /** The project directory the configuration was loaded from (absolute; never stored). */
  projectDir: string;
  /** The hook process's environment (a runtime's own record is found through it, e.g. Copilot's event log). */
  processEnv: NodeJS.ProcessEnv;
  warn: (line: string) => void;
}
