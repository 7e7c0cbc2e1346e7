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
 * | PreCompact | pre snapshot of the task record → ledger + `agent.compaction.pre` span |
 * | PostCompact | boundary record (trigger, time); the summary is never read |
 * | SessionStart | current session for `continuity observe`; after `compact`: boundary + context |
 * | InstructionsLoaded (`compact`) | boundary if not yet recorded + context once per boundary |
 * | PostToolUse, PostToolUseFailure, UserPromptSubmit | activity `working` |
 * | Notification, PermissionRequest | activity `waiting_human` |
 * | Stop | activity `idle` |
 * | anything else, malformed input | exit 0, one line on stderr |
 */
import { fs } from './builtins.js';
import type { AdapterConfig } from './config.js';
import { loadConfig, resolveProjectDir } from './config.js';
import { decideGate, gateOutput } from './gate.js';
import { type HookPayload, parsePayload, readStdin } from './payload.js';
import { readActivity } from './session-state.js';

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
