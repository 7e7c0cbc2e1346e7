/**
 * Reading a hook's stdin: the JSON object Claude Code sends to every command hook. Lean (the gate
 * reads it): no zod, no copies of fields the adapter does not use.
 *
 * Documented common fields: `session_id`, `transcript_path`, `cwd`, `hook_event_name`; per event:
 * `trigger` and `custom_instructions` (PreCompact), `trigger` and `compact_summary` (PostCompact),
 * `source` (SessionStart), `file_path`, `memory_type`, `load_reason` (InstructionsLoaded),
 * `tool_name`, `tool_input`, `tool_use_id` (PreToolUse). The adapter keeps only identifiers and
 * enumerations; `transcript_path`, `compact_summary`, `custom_instructions`, prompts and tool
 * payloads are never copied into a {@link HookPayload}, so they cannot reach the ledger or a span.
 * Of the tool input the gate looks at the Bash `command` and the target file path, and only to
 * decide; neither is stored.
 */
import { fs } from './builtins.js';
import { isRecord } from './fsio.js';

/** Largest stdin the hook parses (bytes). Larger input is drained and read from its head only. */
export const MAX_PAYLOAD_BYTES = 32 * 1024 * 1024;
/** Longest session id accepted (the ledger's opaque id limit). */
const MAX_ID = 256;

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
  /** PreToolUse, Bash only: the command, to refuse `continuity approve` (not stored). */
  command?: string;
  /** PreToolUse, Edit/Write/MultiEdit/NotebookEdit: the target path (not stored). */
  filePath?: string;
  /** Notification. */
  notificationType?: string;
  /** True when the input was larger than {@link MAX_PAYLOAD_BYTES} and read from its head only. */
  truncated?: boolean;
}

/** The result of reading a payload: the payload, or a one-line problem. */
export type PayloadResult =
  | { ok: true; payload: HookPayload; problem?: never }
  | { ok: false; problem: string; payload?: never };

/** Reads all of a stream into one buffer, keeping at most `limit` bytes (the rest is drained). */
export async function readAll(
  stream: NodeJS.ReadableStream,
  limit = MAX_PAYLOAD_BYTES,
): Promise<{ buffer: Buffer; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  for await (const chunk of stream) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    if (size + buf.length > limit) {
      truncated = true;
      if (size < limit) chunks.push(buf.subarray(0, limit - size));
      size = limit;
      continue; // keep draining so the writer never sees a broken pipe
    }
    chunks.push(buf);
    size += buf.length;
  }
  return { buffer: Buffer.concat(chunks), truncated };
}

/**
 * Reads all of fd 0 with blocking reads, keeping at most `limit` bytes and draining the rest.
 * Cheaper than `process.stdin` (no stream to set up). Falls back to the stream when stdin is
 * non-blocking (EAGAIN) or not readable this way.
 */
export async function readStdin(limit = MAX_PAYLOAD_BYTES): Promise<{ buffer: Buffer; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  const chunk = Buffer.allocUnsafe(1 << 16);
  try {
    for (;;) {
      const n = fs.readSync(0, chunk, 0, chunk.length, null);
      if (n === 0) break;
      if (size + n > limit) {
        truncated = true;
        if (size < limit) chunks.push(Buffer.from(chunk.subarray(0, limit - size)));
        size = limit;
        continue;
      }
      chunks.push(Buffer.from(chunk.subarray(0, n)));
      size += n;
    }
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EOF') return { buffer: Buffer.concat(chunks), truncated };
    if (size === 0 && (code === 'EAGAIN' || code === 'EISDIR' || code === 'EINVAL'))
      return readAll(process.stdin, limit);
    throw e;
  }
  return { buffer: Buffer.concat(chunks), truncated };
}

function str(obj: Record<string, unknown>, key: string, max = 4096): string | undefined {
  const v = obj[key];
  return typeof v === 'string' && v.length <= max ? v : undefined;
}

function validSessionId(id: unknown): id is string {
  // Control characters and white space never belong in an id; the strict opaque-id pattern is
  // checked by the recording paths before anything is stored.
  return typeof id === 'string' && id.length > 0 && id.length <= MAX_ID && !/[\s\u0000-\u001f]/.test(id);
}

// In a truncated payload only top-level fields before the huge one can be trusted. A field name
// inside a JSON string has its quotes escaped, so an unescaped `"name":"value"` is structural.
function headField(head: string, key: string): string | undefined {
  const m = new RegExp(`(?<!\\\\)"${key}"\\s*:\\s*"([^"\\\\]{1,4096})"`).exec(head);
  return m?.[1];
}

/** Turns a parsed object into a {@link HookPayload}, or names the first problem. */
export function toPayload(raw: unknown): PayloadResult {
  if (!isRecord(raw)) return { ok: false, problem: 'input is not a JSON object' };
  const event = str(raw, 'hook_event_name', 128);
  if (!event) return { ok: false, problem: 'hook_event_name is missing' };
  if (!validSessionId(raw.session_id))
    return { ok: false, problem: `${event}: session_id is missing or invalid` };
  const p: HookPayload = { event, sessionId: raw.session_id };
  const cwd = str(raw, 'cwd');
  if (cwd) p.cwd = cwd;
  const trigger = raw.trigger;
  if (trigger === 'manual' || trigger === 'auto') p.trigger = trigger;
  const source = str(raw, 'source', 64);
  if (source) p.source = source;
  const loadReason = str(raw, 'load_reason', 64);
  if (loadReason) p.loadReason = loadReason;
  const toolName = str(raw, 'tool_name', 256);
  if (toolName) p.toolName = toolName;
  const notificationType = str(raw, 'notification_type', 64);
  if (notificationType) p.notificationType = notificationType;
  if (event === 'PreToolUse' && isRecord(raw.tool_input)) {
    const input = raw.tool_input;
    if (typeof input.command === 'string') p.command = input.command;
    const path = str(input, 'file_path') ?? str(input, 'notebook_path');
    if (path) p.filePath = path;
  }
  return { ok: true, payload: p };
}

/**
 * Parses a hook's stdin. A payload over the size limit is read from its head: the identifying
 * fields come first in Claude Code's input, so the gate can still decide on the session's state.
 */
export function parsePayload(buffer: Buffer, truncated: boolean): PayloadResult {
  if (truncated) {
    const head = buffer.subarray(0, 65536).toString('utf8');
    const event = headField(head, 'hook_event_name');
    const sessionId = headField(head, 'session_id');
    if (!event || !validSessionId(sessionId)) {
      return { ok: false, problem: 'input too large and its head names no event and session' };
    }
    const p: HookPayload = { event, sessionId, truncated: true };
    const toolName = headField(head, 'tool_name');
    if (toolName) p.toolName = toolName;
    const cwd = headField(head, 'cwd');
    if (cwd) p.cwd = cwd;
    return { ok: true, payload: p };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(buffer.toString('utf8'));
  } catch {
    return { ok: false, problem: 'input is not valid JSON' };
  }
  return toPayload(raw);
}
