/**
 * The write gate (`PreToolUse`): decides whether a consequential tool call may run, from the
 * session's latest compaction boundary.
 *
 * Fast path, taken for nearly every call: the configuration, one small cache file, a decision.
 * It loads no OpenTelemetry, zod or commander, so it starts about as fast as `node -e 0`. Only when
 * the cache is missing or says the write must wait does it load the ledger reader and the
 * classifier to re-derive the state from the evidence (an approval recorded since, a new
 * observation), then it writes the cache back.
 *
 * The gate answers `deny` or `ask` with a reason, or nothing at all: it never answers `allow`, so
 * it never bypasses the user's own permission rules. Its own failures never block: a gate that
 * cannot read its state says so on stderr and leaves the decision to Claude Code.
 */
import { join, resolve } from 'node:path';
import type { AdapterConfig } from './config.js';
import { PROJECT_STATE_DIR } from './config.js';
import { inspectBashCommand, inspectTargetPath, type ProtectedPaths } from './guard.js';
import { stateRoot } from './paths.js';
import type { HookPayload } from './payload.js';
import { policyVerdict } from './policy.js';
import {
  boundaryView,
  type GateBoundary,
  type GateState,
  isHealthy,
  readGateState,
} from './session-state.js';

/** Why the gate decided as it did (stable codes, for tests and logs). */
export type GateCode =
  | 'not_gated'
  | 'approve_refused'
  | 'evidence_refused'
  | 'task_record_ask'
  | 'uninspectable_ask'
  | 'continuity_command'
  | 'no_compaction'
  | 'state_unknown'
  | 'state_allows'
  | 'state_blocks';

/** The gate's decision. `allow` means "no objection": nothing is printed. */
export type GateDecision =
  | { verdict: 'allow'; code: GateCode; reason?: never }
  | { verdict: 'ask' | 'deny'; code: GateCode; reason: string };

/**
 * Re-derives a session's gate state from the ledger. Returns `undefined` when the ledger knows no
 * boundary for the session. Loaded only on the slow path.
 */
export type Rederive = (sessionId: string, cached: GateState | undefined) => Promise<GateState | undefined>;

/** The paths the guard protects, from the environment and configuration. */
export function protectedPaths(config: AdapterConfig, env: NodeJS.ProcessEnv): ProtectedPaths {
  const files = [env.CONTINUITY_LEDGER, env.CONTINUITY_DIGEST_KEY_FILE, env.CONTINUITY_CHAIN_KEY_FILE]
    .filter((f): f is string => typeof f === 'string' && f.length > 0)
    .map((f) => resolve(f));
  return { stateRoot: stateRoot(env), files, projectStateDir: join(config.projectDir, PROJECT_STATE_DIR) };
}

function gated(tools: readonly string[], toolName: string | undefined): boolean {
  if (!toolName) return false;
  return tools.includes('*') || tools.includes(toolName);
}

/** A decision before its reason is worded (the words are loaded only when needed). */
type Verdict = { verdict: 'ask' | 'deny'; code: GateCode };

/** Checks that are independent of the continuity state. `undefined` when none applies. */
function guardDecision(
  payload: HookPayload,
  config: AdapterConfig,
  env: NodeJS.ProcessEnv,
): Verdict | 'continuity_command' | undefined {
  const paths = protectedPaths(config, env);
  if (payload.toolName === 'Bash') {
    if (payload.command === undefined) {
      return payload.truncated ? { verdict: 'ask', code: 'uninspectable_ask' } : undefined;
    }
    const kind = inspectBashCommand(payload.command, paths);
    // Approvals come from a human: refused whatever the configuration says.
    if (kind === 'approve') return { verdict: 'deny', code: 'approve_refused' };
    if (kind === 'continuity_readonly') return 'continuity_command';
    if (!config.gate.protectContinuityFiles) return undefined;
    if (kind === 'touches_evidence') return { verdict: 'deny', code: 'evidence_refused' };
    if (kind === 'touches_task_record') return { verdict: 'ask', code: 'task_record_ask' };
    return undefined;
  }
  if (payload.filePath !== undefined && config.gate.protectContinuityFiles) {
    const where = inspectTargetPath(payload.filePath, config.projectDir, paths);
    if (where === 'touches_evidence') return { verdict: 'deny', code: 'evidence_refused' };
    if (
      where === 'touches_task_record' ||
      resolve(config.projectDir, payload.filePath) === config.taskRecordPath
    ) {
      return { verdict: 'ask', code: 'task_record_ask' };
    }
  }
  return undefined;
}

/**
 * Decides one `PreToolUse` call. `rederive` is the slow path (ledger + classifier); it is called
 * only when the cache is missing or blocks. `warn` receives one line when the gate cannot read
 * its state.
 */
export async function decideGate(
  payload: HookPayload,
  config: AdapterConfig,
  env: NodeJS.ProcessEnv,
  rederive: Rederive,
  warn: (line: string) => void = () => {},
): Promise<GateDecision> {
  if (!gated(config.gate.tools, payload.toolName)) return { verdict: 'allow', code: 'not_gated' };
  const guard = guardDecision(payload, config, env);
  if (guard === 'continuity_command') return { verdict: 'allow', code: 'continuity_command' };
  if (guard) return worded(guard, payload.sessionId);

  let state = readGateState(payload.sessionId, env);
  if (!state?.boundary || !isHealthy(state.boundary.state)) {
    // Missing cache, or a blocking one: look at the evidence, which may have moved on.
    if (state?.boundary !== null) {
      try {
        state = (await rederive(payload.sessionId, state)) ?? state;
      } catch (e) {
        warn(
          `gate could not read the ledger (${(e as Error).message.split('\n')[0]}); using the cached state`,
        );
      }
    }
  }
  if (!state) return { verdict: 'allow', code: 'state_unknown' };
  const b = state.boundary;
  if (!b) return { verdict: 'allow', code: 'no_compaction' };
  const verdict = policyVerdict(config.gate.policy, b.state, b.reason);
  if (verdict === 'allow') return { verdict: 'allow', code: 'state_allows' };
  return worded({ verdict, code: 'state_blocks' }, payload.sessionId, b);
}

/** Words a decision; the messages module is loaded only here, off the fast path. */
async function worded(v: Verdict, sessionId: string, b?: GateBoundary): Promise<GateDecision> {
  const m = await import('./messages.js');
  const reasons: Partial<Record<GateCode, string>> = {
    approve_refused: m.APPROVE_REFUSED,
    evidence_refused: m.EVIDENCE_REFUSED,
    task_record_ask: m.TASK_RECORD_ASK,
    uninspectable_ask: m.UNINSPECTABLE_ASK,
  };
  const reason = b ? m.gateReason(boundaryView(sessionId, b), v.verdict) : (reasons[v.code] ?? v.code);
  return { verdict: v.verdict, code: v.code, reason };
}

/** The hook output for a decision: the documented `PreToolUse` JSON, or nothing for `allow`. */
export function gateOutput(decision: GateDecision): string {
  if (decision.verdict === 'allow') return '';
  return `${JSON.stringify({
    hookSpecificOutput: {
      hookEventName: 'PreToolUse',
      permissionDecision: decision.verdict,
      permissionDecisionReason: decision.reason,
    },
  })}\n`;
}
