/**
 * Copilot CLI running the hooks `continuity init claude-code` writes: Copilot 1.0 loads a
 * repository's `.claude/settings.json` (and `.mcp.json`) as well as its own hooks, and sends those
 * hooks Claude Code's payloads under its own session ids, with no PostCompact and no
 * SessionStart(compact) (recorded on 1.0.102, docs/copilot.md). Such a hook must speak Copilot's
 * dialect: its compactions confirmed from Copilot's own records (./log.ts), its runtime named
 * `copilot`, its state Copilot's, shared with `continuity init copilot`'s hooks so that a project
 * with both gets one boundary per compaction, not two.
 *
 * Recognised from what the agent cannot set: the hook process's environment, which Copilot gives
 * it (`COPILOT_CLI=1`; the agent's own shell cannot change a hook's environment), and the payload,
 * which Copilot writes. Claude Code sends `transcript_path` with every event (its own transcript
 * under `~/.claude/projects/`), Copilot only with PreCompact and Stop, and then its session's event
 * log: a payload whose transcript is not Copilot's event log of that session is not Copilot's, so a
 * Claude Code started from a Copilot session's shell (which inherits `COPILOT_CLI`) stays Claude Code.
 *
 * Lean (the gate loads it): node built-ins only, through ./log.ts.
 */
import { copilotEventLog } from './log.js';

/** The variable Copilot CLI sets in its hook processes (`1`; recorded on 1.0.102). */
export const COPILOT_CLI_ENV = 'COPILOT_CLI';

/**
 * True when a Claude Code hook runs inside Copilot CLI: Copilot's variable in the hook's
 * environment, and no transcript in the payload other than Copilot's event log of `sessionId`.
 */
export function insideCopilot(
  env: NodeJS.ProcessEnv,
  sessionId: string,
  transcriptPath: string | undefined,
): boolean {
  if (env[COPILOT_CLI_ENV] !== '1') return false;
  return transcriptPath === undefined || transcriptPath === copilotEventLog(env, sessionId);
}
