/**
 * Codex CLI's hook input as the adapter keeps it: the first stage of the hook pipeline
 * (../core/pipeline.ts), stdin bytes → {@link CodexPayload}. Identifiers and enumerations only;
 * `transcript_path` is kept apart and read locally for token counts only; prompts, tool responses
 * and the last assistant message are never copied. Of the tool input the gate looks at the command
 * or patch text, only to decide.
 */
import type { AdapterConfig } from '../core/config.js';
import { headField, payloadHead, stringField, validSessionId } from '../core/process.js';
import { isRecord } from '../core/state.js';
import type { CodexEnv } from './config.js';
import type { CodexPayload } from './events.js';

/** Inputs used only inside this process and never stored or sent anywhere. */
export interface LocalInputs {
  /** The session's rollout file, read locally for token counts only. */
  transcriptPath?: string;
}

/** The result of reading a payload: the payload, or a one-line problem. */
export type PayloadResult =
  | { ok: true; payload: CodexPayload; local: LocalInputs; problem?: never }
  | { ok: false; problem: string; payload?: never; local?: never };

/** Turns a parsed Codex hook input into a {@link CodexPayload}, or names the first problem. */
export function toPayload(parsed: unknown): PayloadResult {
  const read = payloadHead(parsed);
  if (!read.ok) return { ok: false, problem: read.problem };
  const { raw } = read;
  const p: CodexPayload = { ...read.head };
  const toolName = stringField(raw, 'tool_name', 256);
  if (toolName) p.toolName = toolName;
  if (p.event === 'PreToolUse' && isRecord(raw.tool_input) && typeof raw.tool_input.command === 'string') {
    p.command = raw.tool_input.command;
  }
  const transcriptPath = stringField(raw, 'transcript_path');
  return { ok: true, payload: p, local: transcriptPath ? { transcriptPath } : {} };
}

/** Parses a hook's stdin; a payload over the size limit is read from its head only. */
export function parsePayload(buffer: Buffer, truncated: boolean): PayloadResult {
  if (truncated) {
    const head = buffer.subarray(0, 65536).toString('utf8');
    const event = headField(head, 'hook_event_name');
    const sessionId = headField(head, 'session_id');
    if (!event || !validSessionId(sessionId)) {
      return { ok: false, problem: 'input too large and its head names no event and session' };
    }
    const p: CodexPayload = { event, sessionId, truncated: true };
    const toolName = headField(head, 'tool_name');
    if (toolName) p.toolName = toolName;
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
  return toPayload(raw);
}

/** What every recording handler gets. */
export interface HookRun {
  payload: CodexPayload;
  local: LocalInputs;
  config: AdapterConfig;
  env: CodexEnv;
  warn: (line: string) => void;
}
