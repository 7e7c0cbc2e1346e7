/**
 * The write gate, runtime-neutral: decides whether a consequential tool call may run, from the
 * session's latest confirmed compaction boundary, and answers `allow` | `ask` | `deny` with the
 * words to say (a runtime adapter translates the answer: Claude Code's `hookSpecificOutput`,
 * Codex's `deny` with a human-approval reason where the policy says `ask`).
 *
 * Fast path, taken for nearly every call: the configuration, one small cache file, a decision.
 * It loads no OpenTelemetry, zod or commander, so it starts about as fast as `node -e 0`. Only when
 * the cache is missing or says the write must wait does it call the adapter's `rederive` (the
 * ledger reader and the classifier) to re-derive the state from the evidence (an approval
 * recorded since, a new observation).
 *
 * A pre capture that no compaction confirmed (./boundary.ts) is not a boundary: the gate keeps
 * answering from the current confirmed boundary, so a lone or discarded pre never stops writes.
 *
 * `allow` means "no objection": a runtime adapter never turns it into a permission grant, so the
 * gate never bypasses the user's own permission rules. Its own failures never block: a gate that
 * cannot read its state says so and leaves the decision to the runtime.
 *
 * Besides the continuity state the gate looks for: an agent running `continuity approve`
 * (approvals come from a human, in the human's terminal); an agent touching the evidence (the
 * ledger, keys, the adapter's state) or the task record; and the one command it always lets
 * through, a plain `continuity observe` or `continuity status` invocation, since restating the
 * decisions is how a blocked agent unblocks. That is a guard against drift and honest mistakes,
 * not a sandbox: the agent runs as the same OS user and a determined one can reach the files by
 * other means; the ledger's chain key makes such an edit visible to `continuity ledger verify`.
 */
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { AdapterConfig } from './config.js';
import { PROJECT_STATE_DIR, policyVerdict } from './config.js';
import type { GateAnswer, GateCode, ToolEvent } from './events.js';
import type { Voice } from './messages.js';
import { type GateBoundary, type GateState, isHealthy, readGateState, type StateDir } from './state.js';

// ── Guard ─────────────────────────────────────────────────────────────────────────────────────
/** How a Bash command relates to continuity. */
export type BashCommandKind =
  /** A `continuity approve` invocation somewhere in the command. */
  | 'approve'
  /** Exactly one `continuity observe|status|ledger verify` invocation, nothing else. */
  | 'continuity_readonly'
  /** Mentions the ledger, a key, or the adapter's state directory. */
  | 'touches_evidence'
  /** Mentions the project's `.continuity/` directory (task record, configuration). */
  | 'touches_task_record'
  | 'other';

/** Paths the guard protects. */
export interface ProtectedPaths {
  /** The state root (ledger default, adapter state, spool). */
  stateRoot: string;
  /** Extra files: a ledger outside the state root, key files. */
  files: readonly string[];
  /** The project's `.continuity/` directory. */
  projectStateDir: string;
}

// `continuity`, `continuity.js`, a path ending in either, or this package's compiled entry point.
const CLI_TOKEN = String.raw`(?:[^\s;&|'"]*\/)?(?:continuity(?:\.js)?|dist\/cli\/main\.js)`;
const APPROVE = new RegExp(
  String.raw`(?:^|[\s;&|(\x60'"])${CLI_TOKEN}['"]?(?:\s+[^\s;&|]+)*?\s+['"]?approve(?:['"]|\s|$|[;&|)])`,
);
// Environment variables that hold or name keys.
const KEY_VARIABLES = /CONTINUITY_(?:DIGEST|CHAIN)_KEY/;

// `node` may be an absolute path (a launcher printed for a shell whose PATH differs from the hook's).
const LAUNCHER = String.raw`(?:npx(?:\s+(?:--no-install|--yes|-y|--offline))*\s+|(?:\/[^\s;&|<>$\x60()'"]*\/)?node\s+)?`;
const READONLY_HEAD = new RegExp(
  String.raw`^\s*${LAUNCHER}(?:[^\s;&|<>$\x60()'"]*\/)?continuity(?:\.js)?\s+(?:observe|status|ledger\s+verify)(?:\s|$)`,
);

/**
 * True when `line` has no shell syntax that could run a second command or expand anything:
 * outside single quotes no `; & | < > $ \` ( )` and no backslash; inside double quotes no `$`,
 * backtick or backslash. Quotes must balance.
 */
function isPlainWords(line: string): boolean {
  let quote: "'" | '"' | null = null;
  for (const ch of line) {
    if (quote === "'") {
      if (ch === "'") quote = null;
      continue;
    }
    if (quote === '"') {
      if (ch === '"') quote = null;
      else if (ch === '$' || ch === '`' || ch === '\\') return false;
      continue;
    }
    if (ch === "'" || ch === '"') quote = ch;
    else if (';&|<>$`()\\\n\r'.includes(ch)) return false;
  }
  return quote === null;
}

/**
 * True when `command` is exactly one read-only or restating `continuity` invocation: `observe`,
 * `status` or `ledger verify`, optionally fed by one quoted here-document (`<<'EOF'` … `EOF`,
 * whose body the shell does not expand), and nothing else.
 */
export function isContinuityReadonly(command: string): boolean {
  const text = command.replace(/\s+$/, '');
  const newline = text.indexOf('\n');
  const first = newline === -1 ? text : text.slice(0, newline);
  const heredoc = /\s<<-?\s*(['"])([A-Za-z_][A-Za-z0-9_]*)\1\s*$/.exec(first);
  let words = first;
  if (heredoc) {
    words = first.slice(0, heredoc.index);
    const lines = text.slice(newline === -1 ? text.length : newline + 1).split('\n');
    // The terminator must be the last line: nothing may follow the here-document.
    const last = lines.pop();
    if (newline === -1 || last === undefined || last.replace(/^\t+/, '') !== heredoc[2]) return false;
    if (lines.some((l) => l.replace(/^\t+/, '') === heredoc[2])) return false;
  } else if (newline !== -1) {
    return false;
  }
  return READONLY_HEAD.test(words) && isPlainWords(words);
}

function mentionsPath(command: string, path: string): boolean {
  return path.length > 1 && command.includes(path);
}

/** Classifies a Bash command for the gate. */
export function inspectBashCommand(command: string, paths: ProtectedPaths): BashCommandKind {
  if (APPROVE.test(command)) return 'approve';
  if (isContinuityReadonly(command)) return 'continuity_readonly';
  if (
    KEY_VARIABLES.test(command) ||
    mentionsPath(command, paths.stateRoot) ||
    /agent-continuity\/(?:ledger|claude-code|keys?)/.test(command) ||
    paths.files.some((f) => mentionsPath(command, f))
  ) {
    return 'touches_evidence';
  }
  if (/(?:^|[\s'"=/])\.continuity(?:\/|\s|$|['"])/.test(command)) return 'touches_task_record';
  return 'other';
}

function inside(dir: string, path: string): boolean {
  const rel = relative(dir, path);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

/** Where a file-writing tool's target lies: in the evidence, in `.continuity/`, or elsewhere. */
export function inspectTargetPath(
  filePath: string,
  projectDir: string,
  paths: ProtectedPaths,
): 'touches_evidence' | 'touches_task_record' | 'other' {
  const target = resolve(projectDir, filePath);
  if (inside(paths.stateRoot, target) || paths.files.some((f) => resolve(f) === target)) {
    return 'touches_evidence';
  }
  if (inside(paths.projectStateDir, target)) return 'touches_task_record';
  return 'other';
}

// ── Decision ──────────────────────────────────────────────────────────────────────────────────
export type { GateAnswer, GateCode } from './events.js';

/**
 * Re-derives a session's gate state from the ledger. Returns `undefined` when the ledger knows no
 * boundary for the session. Loaded only on the slow path.
 */
export type Rederive = (sessionId: string, cached: GateState | undefined) => Promise<GateState | undefined>;

/** The paths the guard protects, from the resolved environment and configuration. */
export function protectedPaths(config: AdapterConfig): ProtectedPaths {
  const e = config.env;
  const files = [e.ledgerExplicit ? e.ledgerPath : undefined, e.digestKeyFile, e.chainKeyFile].filter(
    (f): f is string => typeof f === 'string' && f.length > 0,
  );
  return { stateRoot: e.stateRoot, files, projectStateDir: join(config.projectDir, PROJECT_STATE_DIR) };
}

function gated(tools: readonly string[], toolName: string | undefined): boolean {
  if (!toolName) return false;
  return tools.includes('*') || tools.includes(toolName);
}

/** A decision before its reason is worded (the words are loaded only when needed). */
type Verdict = { verdict: 'ask' | 'deny'; code: GateCode };

/** Checks that are independent of the continuity state. `undefined` when none applies. */
function guardDecision(tool: ToolEvent, config: AdapterConfig): Verdict | 'continuity_command' | undefined {
  const paths = protectedPaths(config);
  if (tool.kind === 'command') {
    if (tool.command === undefined) {
      return tool.truncated ? { verdict: 'ask', code: 'uninspectable_ask' } : undefined;
    }
    const kind = inspectBashCommand(tool.command, paths);
    // Approvals come from a human: refused whatever the configuration says.
    if (kind === 'approve') return { verdict: 'deny', code: 'approve_refused' };
    if (kind === 'continuity_readonly') return 'continuity_command';
    if (!config.gate.protectContinuityFiles) return undefined;
    if (kind === 'touches_evidence') return { verdict: 'deny', code: 'evidence_refused' };
    if (kind === 'touches_task_record') return { verdict: 'ask', code: 'task_record_ask' };
    return undefined;
  }
  // A file write whose target the adapter could not read (input cut short, or a multi-file edit it
  // could not parse) may be aimed at the evidence: a human looks first.
  if (tool.filePath === undefined && tool.truncated) return { verdict: 'ask', code: 'uninspectable_ask' };
  if (tool.filePath !== undefined && config.gate.protectContinuityFiles) {
    const where = inspectTargetPath(tool.filePath, config.projectDir, paths);
    if (where === 'touches_evidence') return { verdict: 'deny', code: 'evidence_refused' };
    if (
      where === 'touches_task_record' ||
      resolve(config.projectDir, tool.filePath) === config.taskRecordPath
    ) {
      return { verdict: 'ask', code: 'task_record_ask' };
    }
  }
  return undefined;
}

/** What the gate needs besides the tool call. */
export interface GateContext {
  config: AdapterConfig;
  /** The runtime adapter's state directory. */
  state: StateDir;
  /** The slow path (ledger + classifier); called only when the cache is missing or blocks. */
  rederive: Rederive;
  /** How the words name tools and the launcher. */
  voice: Voice;
  /** Receives one line when the gate cannot read its state. */
  warn?: (line: string) => void;
}

/** Decides one tool call of `sessionId`. Never throws for a state it cannot read: it warns and allows. */
export async function decideGate(sessionId: string, tool: ToolEvent, ctx: GateContext): Promise<GateAnswer> {
  const { config } = ctx;
  if (!gated(config.gate.tools, tool.toolName)) return { verdict: 'allow', code: 'not_gated' };
  const guard = guardDecision(tool, config);
  if (guard === 'continuity_command') return { verdict: 'allow', code: 'continuity_command' };
  // A deny from the guard is final; an ask from it still yields to a deny from the state (a
  // comment naming the task record must not turn a conflict's deny into an ask).
  if (guard?.verdict === 'deny') return worded(guard, sessionId, ctx.voice);
  const fromState = await stateDecision(sessionId, ctx);
  if (guard && fromState.verdict !== 'deny') return worded(guard, sessionId, ctx.voice);
  return fromState;
}

async function stateDecision(sessionId: string, ctx: GateContext): Promise<GateAnswer> {
  const { config } = ctx;
  let state = readGateState(ctx.state, sessionId);
  if (!state?.boundary || !isHealthy(state.boundary.state)) {
    // Missing cache, or a blocking one: look at the evidence, which may have moved on.
    if (state?.boundary !== null) {
      try {
        state = (await ctx.rederive(sessionId, state)) ?? state;
      } catch (e) {
        ctx.warn?.(
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
  return worded({ verdict, code: 'state_blocks' }, sessionId, ctx.voice, b);
}

/** Words a decision; the messages module is loaded only here, off the fast path. */
async function worded(v: Verdict, sessionId: string, voice: Voice, b?: GateBoundary): Promise<GateAnswer> {
  const m = await import('./messages.js');
  const reasons: Partial<Record<GateCode, string>> = {
    approve_refused: m.APPROVE_REFUSED,
    evidence_refused: m.EVIDENCE_REFUSED,
    task_record_ask: m.TASK_RECORD_ASK,
    uninspectable_ask: m.UNINSPECTABLE_ASK,
  };
  const reason = b
    ? m.gateReason(m.boundaryView(sessionId, b), v.verdict, voice)
    : (reasons[v.code] ?? v.code);
  return { verdict: v.verdict, code: v.code, reason };
}
