/**
 * `continuity hook codex`: the one entry point for every Codex CLI hook event, a thin
 * translation over the core's hook pipeline (../core/pipeline.ts): stdin payload → core events
 * (./payload.ts, ./events.ts); core answers → Codex's hook output (here). Reads the event's JSON
 * on stdin and exits 0, always.
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
import type { GateAnswer, GateCode } from '../core/events.js';
import { type HookAdapter, type HookRoute, runHookPipeline } from '../core/pipeline.js';
import { type HookIo, processIo } from '../core/process.js';
import { codexState, codexVoice, findProjectDir, loadCodexConfig, resolveCodexEnv } from './config.js';
import { activityOf, type CodexPayload, toolEventsOf } from './events.js';
import { type HookRun, type LocalInputs, parsePayload } from './payload.js';

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

const RECORDING_EVENTS = new Set(['PreCompact', 'PostCompact', 'SessionStart']);

/** The core event a payload is: the gate's tool events, a boundary step or activity to record, or nothing. */
export function routeOf(p: CodexPayload): HookRoute {
  if (p.event === 'PreToolUse') return { kind: 'gate', tools: toolEventsOf(p) };
  const activity = activityOf(p);
  if (activity) return { kind: 'record', activity };
  if (RECORDING_EVENTS.has(p.event)) return { kind: 'record' };
  return { kind: 'none', line: `event ${p.event} is not used; nothing recorded` };
}

/** Codex CLI's part of the hook pipeline: the same stages as Claude Code's, over Codex's payload, project lookup and answers. */
export const CODEX_ADAPTER: HookAdapter<CodexPayload, LocalInputs, HookRun> = {
  name: 'codex',
  parse: parsePayload,
  open(io, p, local) {
    const env = resolveCodexEnv(io.env, io.script);
    return {
      // The hook's own deadline (Codex gives every hook 30 s, init's registrations).
      deadlineMs: env.core.hookDeadlineMs,
      configure(warn) {
        const projectDir = findProjectDir(env, p.cwd);
        if (!projectDir) return undefined; // not a continuity project
        const { config, warnings } = loadCodexConfig(projectDir, env);
        if (warnings.length > 0) warn(`config: ${warnings.join('; ')}`);
        return {
          run: { payload: p, local, config, env, warn },
          state: codexState(env),
          gate: {
            config,
            state: codexState(env),
            warn,
            // The gate's slow path (ledger, classifier), in the recording bundle: loaded only then.
            rederive: async (sessionId, cached) =>
              (await import('./handlers.js')).rederive(config, env, warn)(sessionId, cached),
            get voice() {
              return codexVoice(env);
            },
            launch: { script: io.script, path: env.path, execPath: env.execPath },
          },
        };
      },
    };
  },
  route: routeOf,
  gateOutput: (answer) => gateOutput(answer),
  timedOutReason: GATE_TIMED_OUT,
  record: (run, session, activity) => import('./handlers.js').then((h) => h.handle(run, session, activity)),
};

/** Runs one hook invocation. Returns the exit code: always 0. */
export function runCodexHook(io: HookIo = processIo()): Promise<number> {
  return runHookPipeline(io, CODEX_ADAPTER);
}
