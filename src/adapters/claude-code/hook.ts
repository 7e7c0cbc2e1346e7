/**
 * `continuity hook claude-code`: the one entry point for every Claude Code hook event. Reads the
 * event's JSON on stdin and exits 0, always; only the write gate (PreToolUse) ever blocks, and
 * it does so with the documented JSON answer, never with an exit code.
 *
 * Lean on purpose: `bin/continuity.js` imports this module directly for `hook claude-code`, and
 * for the gate's fast path nothing but node built-ins and small local modules is loaded. The
 * recording handlers (ledger, digests, exporter) are imported only for their events.
 *
 * | event | what it does |
 * | --- | --- |
 * | PreToolUse | the write gate |
 * | PreCompact | pre snapshot of the task record → ledger + `continuity.compaction.pre` span |
 * | PostCompact | boundary record (trigger, time); the summary is never read |
 * | SessionStart | current session for `continuity observe`; after `compact`: boundary + context |
 * | InstructionsLoaded (`compact`) | boundary if not yet recorded + context once per boundary |
 * | PostToolUse, PostToolUseFailure, UserPromptSubmit | activity `working` |
 * | Notification, PermissionRequest | activity `waiting_human` |
 * | Stop | activity `idle` |
 * | anything else, malformed input | exit 0, one line on stderr |
 *
 * Reading the input: the JSON object Claude Code sends to every command hook. Documented common
 * fields: `session_id`, `transcript_path`, `cwd`, `hook_event_name`; per event: `trigger` and
 * `custom_instructions` (PreCompact), `trigger` and `compact_summary` (PostCompact), `source`
 * (SessionStart), `file_path`, `memory_type`, `load_reason` (InstructionsLoaded), `tool_name`,
 * `tool_input`, `tool_use_id` (PreToolUse). The adapter keeps only identifiers and enumerations;
 * `transcript_path`, `compact_summary`, `custom_instructions`, prompts and tool payloads are never
 * copied into a {@link HookPayload}, so they cannot reach the ledger or a span. Of the tool input
 * the gate looks at the Bash `command` and the target file path, and only to decide; neither is
 * stored.
 */
import type { AdapterConfig } from './config.js';
import { loadConfig, resolveProjectDir } from './config.js';
import { decideGate, gateOutput } from './gate.js';
import { fs, isRecord, readActivity } from './state.js';

// ── Input ─────────────────────────────────────────────────────────────────────────────────────
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

// ── Dispatch ──────────────────────────────────────────────────────────────────────────────────
/** Where the hook reads and writes. Default: file descriptors 0, 1, 2 and the process environment. */
export interface HookIo {
  /** Reads all of stdin (at most `limit` bytes kept). */
  readInput: () => Promise<{ buffer: Buffer; truncated: boolean }>;
  stdout: { write(s: string): unknown };
  stderr: { write(s: string): unknown };
  env: NodeJS.ProcessEnv;
}

// The default streams write straight to the file descriptors: creating process.stdout and
// process.stderr costs milliseconds the gate's fast path does not have, and a hook's output is
// small and must be complete before the process exits.
const fdWriter = (fd: number) => ({
  write: (s: string) => {
    if (s.length > 0) fs.writeSync(fd, s);
  },
});

/** The process's own stdin, stdout, stderr and environment. */
export function processIo(): HookIo {
  return { readInput: () => readStdin(), stdout: fdWriter(1), stderr: fdWriter(2), env: process.env };
}

/** Environment variable: the most milliseconds a recording hook may take. Default 8000. */
export const HOOK_DEADLINE_ENV = 'CONTINUITY_HOOK_DEADLINE_MS';
const DEFAULT_DEADLINE_MS = 8000;

const ACTIVITY_EVENTS: Readonly<Record<string, 'working' | 'waiting_human' | 'idle'>> = {
  PostToolUse: 'working',
  PostToolUseFailure: 'working',
  UserPromptSubmit: 'working',
  Notification: 'waiting_human',
  PermissionRequest: 'waiting_human',
  Stop: 'idle',
};

const RECORDING_EVENTS = new Set(['PreCompact', 'PostCompact', 'SessionStart', 'InstructionsLoaded']);

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim().slice(0, 500);
}

async function record(
  p: HookPayload,
  config: AdapterConfig,
  io: HookIo,
  warn: (l: string) => void,
): Promise<string> {
  const h = await import('./handlers.js');
  if (!h.storableSessionId(p.sessionId)) {
    warn(`${p.event}: session_id is not an opaque identifier; nothing recorded`);
    return '';
  }
  const ctx = { env: io.env, config, warn, now: h.systemNow };
  const activity = ACTIVITY_EVENTS[p.event];
  if (activity) return h.onActivity(p, activity, ctx);
  switch (p.event) {
    case 'PreCompact':
      return h.onPreCompact(p, ctx);
    case 'PostCompact':
      return h.onPostCompact(p, ctx);
    case 'SessionStart':
      return h.onSessionStart(p, ctx);
    default:
      return h.onInstructionsLoaded(p, ctx);
  }
}

/** Runs one hook invocation. Returns the exit code: always 0. */
export async function runClaudeCodeHook(io: HookIo = processIo()): Promise<number> {
  const lines: string[] = [];
  const warn = (l: string) => lines.push(oneLine(l));
  try {
    const { buffer, truncated } = await io.readInput();
    const parsed = parsePayload(buffer, truncated);
    if (!parsed.ok) {
      warn(`hook claude-code: ${parsed.problem}; nothing recorded`);
      return 0;
    }
    const p = parsed.payload;
    const projectDir = resolveProjectDir(io.env, p.cwd);
    const { config, warnings } = loadConfig(projectDir, io.env);
    if (warnings.length > 0) warn(`config: ${warnings.join('; ')}`);

    if (p.event === 'PreToolUse') {
      const decision = await decideGate(
        p,
        config,
        io.env,
        async (sessionId, cached) =>
          (await import('./rederive.js')).ledgerRederive(config, io.env)(sessionId, cached),
        warn,
      );
      io.stdout.write(gateOutput(decision));
      return 0;
    }
    const activity = ACTIVITY_EVENTS[p.event];
    if (activity && readActivity(p.sessionId, io.env) === activity) return 0; // unchanged: nothing to record
    if (!activity && !RECORDING_EVENTS.has(p.event)) {
      warn(`hook claude-code: event ${p.event} is not used; nothing recorded`);
      return 0;
    }
    const deadlineMs =
      Number(io.env[HOOK_DEADLINE_ENV]) > 0 ? Number(io.env[HOOK_DEADLINE_ENV]) : DEFAULT_DEADLINE_MS;
    let timer: NodeJS.Timeout | undefined;
    const out = await Promise.race([
      record(p, config, io, warn),
      new Promise<string>((resolveRace) => {
        timer = setTimeout(() => {
          warn(`${p.event}: gave up after ${deadlineMs} ms so the agent is not held up`);
          resolveRace('');
        }, deadlineMs);
      }),
    ]);
    clearTimeout(timer);
    if (out) io.stdout.write(out);
    return 0;
  } catch (e) {
    warn(`hook claude-code: ${(e as Error).message ?? String(e)}`);
    return 0;
  } finally {
    if (lines.length > 0) io.stderr.write(`continuity: ${lines.join(' | ')}\n`);
  }
}
