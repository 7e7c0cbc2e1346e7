/**
 * The few events every runtime maps onto, and the answers the core gives back. Runtime-neutral:
 * no runtime's field names, event names or tool names appear here; each runtime adapter
 * (`src/adapters/<runtime>/`) translates its own wire format into these and the answers back.
 *
 * | core event | meaning | e.g. |
 * | --- | --- | --- |
 * | `pre` | the runtime is about to compact (it may still not: a compaction can be blocked, bail out or be discarded) | PreCompact, `experimental.session.compacting` |
 * | `compacted` | one signal that a compaction did happen; a runtime may send several per compaction, in any order | SessionStart(compact), PostCompact, InstructionsLoaded(compact), `compact_boundary`, `session.compacted` |
 * | `resumed` | a session (re)started: `startup`, `resume`, `clear` (context wiped, new session), `fork` (new session) | SessionStart |
 * | `restated` | the agent restated its decisions (post snapshot) | `continuity observe`, an in-process restate tool |
 * | `tool` | a tool is about to run: the write gate decides | PreToolUse, `tool.execute.before` |
 * | `activity` | the agent's activity changed | tool use, prompts, notifications, stop |
 *
 * Imports only types (erased), so anything may import it, the gate's fast path included.
 */
import type { ActivityState } from '../../decision/model.js';

/** What started a compaction. */
export type Trigger = 'manual' | 'auto';

/** Context fill around a compaction, in tokens, when the runtime reports it. */
export interface TokenCounts {
  /** Tokens in the context just before the compaction. */
  before?: number;
  /** Tokens in the context just after it. */
  after?: number;
}

/** The runtime is about to compact: the pre capture is taken now (it never blocks the compaction). */
export interface PreEvent {
  type: 'pre';
  /** RFC 3339 UTC time of the event. */
  at: string;
  trigger?: Trigger;
  /** Context fill before the compaction, when known at this point. */
  tokensBefore?: number;
}

/**
 * One signal that a compaction happened. `signal` names the kind of signal in the runtime's
 * terms (an adapter-chosen constant such as `post_compact`); the core only compares names.
 * A signal that fires several times per compaction (once per instruction file, say) is
 * `repeatable`: it never opens a boundary of its own while one exists.
 */
export interface CompactedEvent {
  type: 'compacted';
  at: string;
  signal: string;
  repeatable?: boolean;
  trigger?: Trigger;
  tokens?: TokenCounts;
}

/** How a session (re)started. */
export type ResumeSource = 'startup' | 'resume' | 'clear' | 'fork';

/** A session started or resumed. `clear` and `fork` start a new session id. */
export interface ResumedEvent {
  type: 'resumed';
  at: string;
  source: ResumeSource;
}

/** Late context-fill numbers for the session's current boundary (e.g. read after the runtime wrote them). */
export interface MeasuredEvent {
  type: 'measured';
  at: string;
  tokens: TokenCounts;
}

/** What a tool does, as far as the gate is concerned. */
export type ToolKind =
  /** Runs a shell command (Bash, PowerShell, a shell tool): the command text is inspected. */
  | 'command'
  /** Writes or edits a file: the target path is inspected. */
  | 'file_write'
  /** A tool of the runtime's that only reads (Read, Grep, …): never gated. */
  | 'read_only'
  /** A tool the runtime's adapter knows and the configuration may still gate by name. */
  | 'other'
  /**
   * A tool the runtime's adapter does not know (an MCP tool, a subagent, a tool added by a later
   * version): while writes are held the gate answers its unknown-tool policy (default `ask`).
   */
  | 'unknown';

/** A tool is about to run. */
export interface ToolEvent {
  type: 'tool';
  /** The runtime's tool name (compared with the configured gated tools only). */
  toolName: string;
  kind: ToolKind;
  /** `command` tools: the command text (inspected, never stored). */
  command?: string;
  /** `file_write` tools: the target path (inspected, never stored). */
  filePath?: string;
  /**
   * True when the runtime's input could not be read whole (too large, or a file write whose
   * target could not be parsed): the gate never skips its guard for it and answers at least `ask`.
   */
  truncated?: boolean;
}

/** The agent's activity changed. */
export interface ActivityEvent {
  type: 'activity';
  at: string;
  state: ActivityState;
}

/** The events of the boundary assembly. */
export type BoundaryEvent = PreEvent | CompactedEvent | MeasuredEvent;

/** Every core event. */
export type CoreEvent = BoundaryEvent | ResumedEvent | ToolEvent | ActivityEvent;

/** The gate's answer for a tool call, runtime-neutral. A runtime adapter translates it. */
export type GateVerdict = 'allow' | 'ask' | 'deny';

/**
 * The gate's answer: `allow` (no objection: the runtime's own permission flow decides), `ask`
 * (a human must confirm) or `deny` (the tool does not run), with the words to say. A runtime
 * without `ask` (Codex) answers `deny` with a reason saying that a human must approve.
 */
export type GateAnswer =
  | { verdict: 'allow'; code: GateCode; reason?: never }
  | { verdict: 'ask' | 'deny'; code: GateCode; reason: string };

/** Why the gate decided as it did (stable codes, for tests and logs). */
export type GateCode =
  | 'not_gated'
  | 'approve_refused'
  | 'evidence_refused'
  | 'task_record_ask'
  | 'uninspectable_ask'
  /** A command whose program is chosen at run time, while a boundary is unresolved. */
  | 'runtime_chosen_refused'
  | 'continuity_command'
  | 'no_compaction'
  /** No readable state and no readable ledger: the gate asks. */
  | 'state_unknown'
  /** The gate failed on its way to a verdict (an error it did not expect): it asks. */
  | 'gate_failed'
  | 'state_allows'
  | 'state_blocks'
  /** A tool the gate does not know, while writes are held: the unknown-tool policy. */
  | 'unknown_tool_held'
  /** The configuration file could not be read as one: the gate asks for anything but a read. */
  | 'config_unreadable'
  /** A protected file has another name (a hard link), or the target is one: never without a human. */
  | 'hard_link_ask'
  /**
   * The call writes (or a command names) a settings file of the runtime that loads the continuity
   * hooks (`.claude/settings.json`, `.mcp.json`, `$CODEX_HOME/hooks.json`, `opencode.json`, …):
   * whatever the continuity state, a human confirms.
   */
  | 'runtime_config_ask';
