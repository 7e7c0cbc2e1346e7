/**
 * The edges of a hook process, runtime-neutral: reading the event from stdin, writing the answer
 * to stdout and one line to stderr (always exit 0), the hook deadline of a recording handler, and
 * how the agent's shell starts `continuity`. Shared by every
 * adapter whose runtime runs a command per hook event (Claude Code, Codex CLI).
 *
 * Lean on purpose (the write gate loads it on every tool call): `node:fs` and `node:path`.
 */

import { accessSync, constants, readSync, writeSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
import { SECRET_SHAPE_PATTERN } from '../../decision/rules.js';
import { isRecord } from './state.js';

/** Largest stdin a hook parses (bytes). Larger input is drained and read from its head only. */
export const MAX_PAYLOAD_BYTES = 32 * 1024 * 1024;

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
      const n = readSync(0, chunk, 0, chunk.length, null);
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

/** Where a hook reads and writes. Default: file descriptors 0, 1, 2 and the process environment. */
export interface HookIo {
  /** Reads all of stdin (at most `limit` bytes kept). */
  readInput: () => Promise<{ buffer: Buffer; truncated: boolean }>;
  stdout: { write(s: string): unknown };
  stderr: { write(s: string): unknown };
  env: NodeJS.ProcessEnv;
  /** The script this process runs (`process.argv[1]`), for the launcher the messages print. */
  script?: string;
  /**
   * Ends the process (the real process's `process.exit`). Only a hook that owns its process arms
   * the watchdog ({@link armWatchdog}); an in-process caller (a test) leaves it out.
   */
  exit?: (code: number) => never;
}

// The default streams write straight to the file descriptors: creating process.stdout and
// process.stderr costs milliseconds the gate's fast path does not have, and a hook's output is
// small and must be complete before the process exits.
const fdWriter = (fd: number) => ({
  write: (s: string) => {
    if (s.length > 0) writeSync(fd, s);
  },
});

/** The process's own stdin, stdout, stderr and environment. */
export function processIo(): HookIo {
  return {
    readInput: () => readStdin(),
    stdout: fdWriter(1),
    stderr: fdWriter(2),
    env: process.env,
    ...(process.argv[1] ? { script: process.argv[1] } : {}),
    exit: (code: number) => process.exit(code),
  };
}

/**
 * The hook's own deadline, enforced below the runtime's timeout: when the process is still running
 * `ms` after this call, `answer` (the fail-closed answer: the gate's `ask`, a recording hook's
 * nothing) goes to stdout, `line` to stderr, and the process exits 0 at once, whatever it was
 * waiting for (a lock, the ledger's slow path, the exporter). A timer cannot interrupt a blocked
 * synchronous read, so the hooks never make one: every file they read is opened with
 * `O_NONBLOCK` and checked to be a regular file first ({@link openRegularFile} in ./state.ts).
 * Returns the function that disarms it. Without `io.exit` (an in-process caller) nothing is armed.
 */
export function armWatchdog(io: HookIo, ms: number, answer: () => string, line: string): () => void {
  const exit = io.exit;
  if (!exit) return () => {};
  const fire = (why: string) => {
    try {
      io.stdout.write(answer());
      io.stderr.write(`continuity: ${oneLine(why)}\n`);
    } finally {
      exit(0);
    }
  };
  const timer = setTimeout(() => fire(line), ms);
  timer.unref();
  // A hook whose work waits on a promise that can never settle (nothing left to wake it) would
  // otherwise end quietly when the event loop drains: for the gate, no output is "no objection".
  const drained = () => {
    if (!hookSettled) fire(`${line} (nothing left to wait for)`);
  };
  process.once('beforeExit', drained);
  return () => {
    clearTimeout(timer);
    process.off('beforeExit', drained);
  };
}

/** Set once {@link runHookProcess}'s body has settled: the watchdog's drain check then stands down. */
let hookSettled = false;

/** The absolute path of the executable named `name` on `path`, or undefined. */
export function findOnPath(name: string, path: string): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (!dir || !isAbsolute(dir)) continue;
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {
      // Not in this directory.
    }
  }
  return undefined;
}

/** True when an executable named `name` is on `path`. */
export function onPath(name: string, path: string): boolean {
  return findOnPath(name, path) !== undefined;
}

/** A word as one shell word: as is when it is plain, else single-quoted. */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * The launcher for a runtime whose agent shell does not share the hook's `PATH` (a login shell
 * that rebuilds it): absolute, so it runs as printed. `continuity`'s absolute path when it is on
 * `path`, else this Node (`execPath`) running `script` when that is `bin/continuity.js`.
 */
export function absoluteLauncherFor(path: string, script: string | undefined, execPath: string): string {
  const found = findOnPath('continuity', path);
  if (found) return shellWord(found);
  if (script && /(?:^|\/)continuity(?:\.js)?$/.test(script) && isAbsolute(script)) {
    return `${shellWord(execPath)} ${shellWord(script)}`;
  }
  return 'continuity';
}

/**
 * How the agent's shell starts continuity: `continuity` when it is on `path`, else
 * `node <this checkout's bin/continuity.js>` (what `continuity init` writes into the hooks when
 * `continuity` is not on PATH), so the command the messages print runs as printed.
 */
export function launcherFor(path: string, script: string | undefined): string {
  if (onPath('continuity', path)) return 'continuity';
  if (script && /(?:^|\/)continuity(?:\.js)?$/.test(script) && isAbsolute(script)) {
    return `node ${script}`;
  }
  return 'continuity';
}

/** One line for stderr: white space folded, at most 500 characters. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim().slice(0, 500);
}

// ── One hook process ──────────────────────────────────────────────────────────────────────────
/**
 * Runs one hook process of a runtime whose hooks are commands. `body` reports problems through
 * `warn` (folded to one line each); a throw is reported as `hook <runtime>: <message>`. Whatever
 * happens, the problems go to stderr as one `continuity: a | b` line at the end and the exit code
 * is 0: a hook never breaks the agent.
 */
export async function runHookProcess(
  io: HookIo,
  runtime: string,
  body: (warn: (line: string) => void) => Promise<void>,
): Promise<number> {
  const lines: string[] = [];
  const warn = (l: string) => lines.push(oneLine(l));
  try {
    await body(warn);
  } catch (e) {
    warn(`hook ${runtime}: ${(e as Error).message ?? String(e)}`);
  } finally {
    hookSettled = true;
    if (lines.length > 0) io.stderr.write(`continuity: ${lines.join(' | ')}\n`);
  }
  return 0;
}

/**
 * What a recording handler answers, if it answers within the hook deadline; past it `event` is
 * reported as given up and the hook answers nothing, so the agent is not held up.
 */
export async function withinHookDeadline(
  work: Promise<string>,
  deadlineMs: number,
  event: string,
  warn: (line: string) => void,
): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<string>((resolveRace) => {
        timer = setTimeout(() => {
          warn(`${event}: gave up after ${deadlineMs} ms so the agent is not held up`);
          resolveRace('');
        }, deadlineMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

// ── Reading a payload ─────────────────────────────────────────────────────────────────────────
/** Longest session id a hook accepts (the ledger's opaque id limit). */
export const MAX_SESSION_ID = 256;

/** `obj[key]` when it is a string of at most `max` characters. */
export function stringField(obj: Record<string, unknown>, key: string, max = 4096): string | undefined {
  const v = obj[key];
  return typeof v === 'string' && v.length <= max ? v : undefined;
}

/**
 * Why a present session id cannot be used, or `undefined` when it can. Says why in words and
 * never repeats the id: it may hold shell syntax or terminal escapes. Control characters and
 * white space never belong in an id, nor a secret shape (`SECRET_SHAPES`); the strict opaque-id
 * pattern is checked by the recording paths before anything is stored.
 */
export function sessionIdProblem(id: unknown): string | undefined {
  if (typeof id !== 'string') return 'not a string';
  if (id.length === 0) return 'empty';
  if (id.length > MAX_SESSION_ID) return `longer than ${MAX_SESSION_ID} characters`;
  if (/[\s\u0000-\u001f\u007f]/.test(id)) return 'white space or control characters';
  // Refused before anything reads or writes state for it: the gate cache, the project index and
  // the spool would otherwise hold it (issue 26).
  if (SECRET_SHAPE_PATTERN.test(id)) return 'shaped like a secret (a key or token); it is never stored';
  return undefined;
}

/** True for a plausible session id (see {@link sessionIdProblem}). */
export function validSessionId(id: unknown): id is string {
  return sessionIdProblem(id) === undefined;
}

/** The session id of a parsed hook input, or a one-line problem: missing, or invalid and why. */
export function sessionIdOf(
  raw: Record<string, unknown>,
  event: string,
): { id: string } | { problem: string } {
  if (raw.session_id === undefined || raw.session_id === null)
    return { problem: `${event}: session_id is missing` };
  const why = sessionIdProblem(raw.session_id);
  return why ? { problem: `${event}: session_id is invalid: ${why}` } : { id: raw.session_id as string };
}

/**
 * Why a payload's required field `key`, refused by its check, cannot be used: `missing` when it
 * is absent (or null), else `invalid`. The value is never quoted.
 */
export function fieldProblem(obj: Record<string, unknown>, key: string): string {
  return obj[key] === undefined || obj[key] === null ? `${key} is missing` : `${key} is invalid`;
}

/** What every runtime's hook input starts with: the event, the session, and where and why it fired. */
export interface PayloadHead {
  event: string;
  sessionId: string;
  cwd?: string;
  trigger?: 'manual' | 'auto';
  source?: string;
}

/**
 * Reads the fields every runtime's hook input shares, or names the first problem (missing, or
 * invalid and why; never the value). `raw` is the object, for the runtime's own fields.
 */
export function payloadHead(
  raw: unknown,
): { ok: true; raw: Record<string, unknown>; head: PayloadHead } | { ok: false; problem: string } {
  if (!isRecord(raw)) return { ok: false, problem: 'input is not a JSON object' };
  const event = stringField(raw, 'hook_event_name', 128);
  if (!event) return { ok: false, problem: fieldProblem(raw, 'hook_event_name') };
  const id = sessionIdOf(raw, event);
  if ('problem' in id) return { ok: false, problem: id.problem };
  const head: PayloadHead = { event, sessionId: id.id };
  const cwd = stringField(raw, 'cwd');
  if (cwd) head.cwd = cwd;
  if (raw.trigger === 'manual' || raw.trigger === 'auto') head.trigger = raw.trigger;
  const source = stringField(raw, 'source', 64);
  if (source) head.source = source;
  return { ok: true, raw, head };
}

/**
 * A top-level string field from the head of a payload too large to parse. Only fields before the
 * huge one can be trusted; a field name inside a JSON string has its quotes escaped, so an
 * unescaped `"name":"value"` is structural.
 */
export function headField(head: string, key: string): string | undefined {
  const m = new RegExp(`(?<!\\\\)"${key}"\\s*:\\s*"([^"\\\\]{1,4096})"`).exec(head);
  return m?.[1];
}
