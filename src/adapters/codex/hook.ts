/**
 * `continuity hook codex`: the one entry point for every Codex CLI hook event, a thin
 * translation: stdin payload → core events (./events.ts); core answers → Codex's hook output.
 * Reads the event's JSON on stdin and exits 0, always.
 *
 * | event | what it does |
 * | --- | --- |
 * | PreToolUse (`Bash`, `apply_patch`) | the write gate: nothing (no objection), or exactly `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":…}}` |
 * | PreCompact | pre capture of the task record, pending until confirmed; prints nothing (Codex passes PreCompact output to nobody) |
 * | PostCompact | confirms the boundary (ledger + pre span) |
 * | SessionStart `compact` | confirms the boundary if nothing did yet; `additionalContext` asks for the restatement, once per boundary |
 * | SessionStart `resume` | asks again for the restatement (or says what is still wrong) while the boundary blocks writes |
 * | SessionStart `startup`, `fork`, `clear` | a new session with no boundary |
 * | PostToolUse, UserPromptSubmit / PermissionRequest / Stop | activity working / waiting_human / idle |
 *
 * Why the gate answers `deny` and never `ask`: Codex 0.171.0 rejects `ask` (and a `deny` without
 * a reason, an unknown field, a non-zero exit other than 2 with a reason) by marking the hook
 * *failed* and **running the tool**. Only the well-formed block stops it, so where the policy says
 * `ask` the gate denies, with a reason telling the agent that a human must approve and how.
 *
 * Hooks installed in `$CODEX_HOME` run for every project: a session whose working directory has
 * no `.continuity/` at or above it is not a continuity project, and the hook does nothing.
 *
 * Reading the input: identifiers and enumerations only; `transcript_path` is kept apart and read
 * locally for token counts only; prompts, tool responses and the last assistant message are never
 * copied. Of the tool input the gate looks at the command or patch text, only to decide.
 */
import type { AdapterConfig } from '../core/config.js';
import type { GateAnswer, GateCode, ToolEvent } from '../core/events.js';
import { decideGate, type GateContext } from '../core/gate.js';
import {
  armWatchdog,
  type HookIo,
  headField,
  payloadHead,
  processIo,
  runHookProcess,
  stringField,
  validSessionId,
  withinHookDeadline,
} from '../core/process.js';
import { isRecord, readActivity } from '../core/state.js';
import {
  type CodexEnv,
  codexState,
  codexVoice,
  findProjectDir,
  loadCodexConfig,
  resolveCodexEnv,
  toolKind,
} from './config.js';
import { activityOf, type CodexPayload } from './events.js';
import { patchTargets } from './patch.js';

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

// ── The gate ──────────────────────────────────────────────────────────────────────────────────
/**
 * The tool events of one PreToolUse call: one per target file of a patch (a patch may touch
 * several), the command of a shell call, an uninspectable write when no target could be read.
 */
export function toolEventsOf(p: CodexPayload): ToolEvent[] {
  const kind = toolKind(p.toolName);
  const base = { type: 'tool' as const, toolName: p.toolName ?? '', kind };
  if (kind === 'command') {
    return [
      {
        ...base,
        ...(p.command !== undefined ? { command: p.command } : {}),
        ...(p.truncated ? { truncated: true } : {}),
      },
    ];
  }
  if (kind === 'file_write') {
    const targets = p.command !== undefined && !p.truncated ? patchTargets(p.command) : undefined;
    if (!targets) return [{ ...base, truncated: true }];
    return targets.map((filePath) => ({ ...base, filePath }));
  }
  return [base];
}

const SEVERITY = { allow: 0, ask: 1, deny: 2 } as const;

/** The gate's answer for one call: the most severe answer over its tool events (deny > ask > allow). */
export async function decideCodexGate(
  sessionId: string,
  events: readonly ToolEvent[],
  ctx: GateContext,
): Promise<GateAnswer> {
  let worst: GateAnswer = { verdict: 'allow', code: 'not_gated' };
  for (const e of events) {
    const a = await decideGate(sessionId, e, ctx);
    if (
      SEVERITY[a.verdict] > SEVERITY[worst.verdict] ||
      (worst.code === 'not_gated' && a.verdict === 'allow')
    )
      worst = a;
    if (worst.verdict === 'deny') break;
  }
  return worst;
}

/**
 * What a human does to let a call through that the policy sends to a human (`ask`), in Codex's
 * terms: Codex hooks cannot ask, so the call is stopped and the agent is told who acts and how.
 */
export function askInstruction(code: GateCode): string {
  const head =
    'Codex cannot ask a human from a hook, so the continuity gate stopped this call instead: a human must approve it first.';
  switch (code) {
    case 'task_record_ask':
      return `${head} Do not retry it. Tell the human what you want to change in .continuity/ and why; if they agree, they make the change themselves, in their own editor or terminal.`;
    case 'uninspectable_ask':
      return `${head} Split it into smaller commands or patches that name their files, or tell the human what it does; if they agree, they run it themselves, in their own terminal.`;
    default:
      return (
        `${head} Do not retry it. Tell the human what you want to do and why. If they agree, they either run it themselves, ` +
        `in their own terminal, or, to let such calls through, set "gate": {"policy": {"<state>": "allow"}} in .continuity/config.json ` +
        '(state as in the line above, e.g. "unverified/pre_snapshot_missing"), seal it with `continuity config seal` in their terminal ' +
        '(an unsealed relaxation is ignored), and remove it once the next compaction is captured.'
      );
  }
}

/**
 * The hook output for a gate answer: nothing for `allow` (no objection: Codex's own approval
 * and sandbox settings decide), else exactly the well-formed block Codex honours. `ask` becomes
 * `deny` with {@link askInstruction} before the core's words.
 */
export function gateOutput(answer: GateAnswer): string {
  if (answer.verdict === 'allow') return '';
  const reason =
    answer.verdict === 'ask' ? `${askInstruction(answer.code)}\n${answer.reason}` : answer.reason;
  return `${JSON.stringify({
    hookSpecificOutput: {
      hookEventName: 'PreToolUse',
      permissionDecision: 'deny',
      permissionDecisionReason: reason.trim() || 'Blocked by the continuity gate.',
    },
  })}\n`;
}

/** The reason of a gate that ran out of its own deadline (inline: the messages may be what hangs). */
const GATE_TIMED_OUT =
  'The continuity gate ran out of time while inspecting this tool call, so it cannot tell whether it is safe.';

// ── Dispatch ──────────────────────────────────────────────────────────────────────────────────
const RECORDING_EVENTS = new Set(['PreCompact', 'PostCompact', 'SessionStart']);

/** What every recording handler gets. */
export interface HookRun {
  payload: CodexPayload;
  local: LocalInputs;
  config: AdapterConfig;
  env: CodexEnv;
  warn: (line: string) => void;
}

// The same steps as Claude Code's hook entry on purpose, over Codex's payload, project lookup and gate.
/** Runs one hook invocation. Returns the exit code: always 0. */
export function runCodexHook(io: HookIo = processIo()): Promise<number> {
  return runHookProcess(io, 'codex', async (warn) => {
    const { buffer, truncated } = await io.readInput();
    const parsed = parsePayload(buffer, truncated);
    if (!parsed.ok) {
      warn(`hook codex: ${parsed.problem}; nothing recorded`);
      return;
    }
    const p = parsed.payload;
    const env = resolveCodexEnv(io.env, io.script);
    // The hook's own deadline (Codex gives every hook 30 s, init's registrations): past it the gate
    // stops the call and a recording hook answers nothing, and the process exits.
    const deadline = env.core.hookDeadlineMs;
    armWatchdog(
      io,
      deadline,
      () =>
        p.event === 'PreToolUse'
          ? gateOutput({ verdict: 'ask', code: 'gate_failed', reason: GATE_TIMED_OUT })
          : '',
      `hook codex: ${p.event}: gave up after ${deadline} ms`,
    );
    const projectDir = findProjectDir(env, p.cwd);
    if (!projectDir) return; // not a continuity project
    const { config, warnings } = loadCodexConfig(projectDir, env);
    if (warnings.length > 0) warn(`config: ${warnings.join('; ')}`);

    if (p.event === 'PreToolUse') {
      const answer = await decideCodexGate(p.sessionId, toolEventsOf(p), {
        config,
        state: codexState(env),
        rederive: async (sessionId, cached) =>
          (await import('./handlers.js')).rederive(config, env, warn)(sessionId, cached),
        get voice() {
          return codexVoice(env);
        },
        warn,
        launch: { script: io.script, path: env.path, execPath: env.execPath },
      });
      io.stdout.write(gateOutput(answer));
      return;
    }
    const activity = activityOf(p);
    if (activity) {
      if (readActivity(codexState(env), p.sessionId) === activity) return;
    } else if (!RECORDING_EVENTS.has(p.event)) {
      warn(`hook codex: event ${p.event} is not used; nothing recorded`);
      return;
    }
    const run: HookRun = { payload: p, local: parsed.local, config, env, warn };
    const handled = import('./handlers.js').then((h) => h.handle(run, activity));
    const out = await withinHookDeadline(handled, deadline - 250, p.event, warn);
    if (out) io.stdout.write(out);
  });
}
