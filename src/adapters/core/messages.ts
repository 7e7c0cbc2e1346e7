/**
 * The words the adapters say to the agent: the instruction for the summarizer, the context
 * injected after compaction, the gate's reasons and `continuity observe`'s next action. Pure and
 * lean (the gate builds its reason here). Runtime-neutral: the runtime adapter supplies how its
 * consequential tools are named and how the agent's shell starts `continuity` ({@link Voice}).
 *
 * They name decisions, never their values, and say exactly what to run. Session ids and digests
 * shown here were validated before they were stored (opaque ids, `sha256:`/`hmac-sha256:` digests),
 * so a command printed here is safe to paste into a shell.
 */
import type { ContinuityState } from '../../classify/states.js';
import type { GateBoundary } from './state.js';

/** How a runtime's messages name things. */
export interface Voice {
  /** How the agent's shell starts continuity: `continuity`, or `node /abs/bin/continuity.js`. */
  launcher: string;
  /** The runtime's consequential tools, e.g. `Edit, Write, NotebookEdit, or a Bash or PowerShell command that changes anything`. */
  consequentialTools: string;
  /**
   * How the restatement command is written: a here-document of JSON (default), or one
   * `--decision 'NAME=JSON'` flag per decision, for a runtime that rewrites `<` and `>` in the
   * context it adds (Qwen Code turns them into `&lt;` and `&gt;`, which would break `<<'EOF'`).
   */
  restateForm?: 'heredoc' | 'flags';
  /**
   * The restatement tool the agent can call instead of its shell (`mcp__continuity__restate`),
   * where the runtime registers it; offered first, since it works with the shell sandboxed.
   */
  restateTool?: string;
}

/** The default voice: `continuity` on PATH, tools described generically. */
export const DEFAULT_VOICE: Voice = {
  launcher: 'continuity',
  consequentialTools: 'a file edit or write, or a shell command that changes anything',
};

/** What the messages need to know about a session's latest boundary. */
export interface BoundaryView {
  sessionId: string;
  state: ContinuityState;
  reason: string;
  primaryDecision: string | null;
  /** Names the agent must restate (the pre snapshot's, else the task record's). */
  decisionNames: readonly string[];
  /** Why no pre snapshot exists, when it does not. */
  evidenceMissing?: string;
  /** For `conflicting`: the digests an approval must connect. */
  change?: { decision: string; fromDigest: string; toDigest: string };
  /** For `approved_change`: the approval references of the primary decision. */
  approvalRefs?: readonly string[];
  /** False while only PreCompact has been seen (the compaction may still be running, or was cancelled). */
  compacted?: boolean;
}

/** The members of a restatement's `decisions` object, each name with a placeholder for its value. */
function decisionsBody(names: readonly string[]): string {
  return names.length === 0
    ? '"<decision>": <value as JSON>'
    : names.map((n) => `"${n}": <value as JSON>`).join(', ');
}

function quoteNames(names: readonly string[]): string {
  return names.length === 0 ? 'the task decisions' : names.map((n) => `"${n}"`).join(', ');
}

/** The command that restates the decisions, with a here-document the shell does not expand. */
export function observeCommand(
  sessionId: string,
  names: readonly string[],
  voice: Voice = DEFAULT_VOICE,
): string {
  if (voice.restateForm === 'flags') {
    const flags = (names.length === 0 ? ['DECISION'] : names).map((n) => `--decision '${n}=VALUE_AS_JSON'`);
    return `${voice.launcher} observe --session ${sessionId} ${flags.join(' ')}`;
  }
  return `${voice.launcher} observe --session ${sessionId} --decisions - <<'EOF'\n{${decisionsBody(names)}}\nEOF`;
}

/** The restatement tool call: its name and the arguments it takes for this session. */
export function restateToolCall(sessionId: string, names: readonly string[], tool: string): string {
  return `${tool} with {"session": "${sessionId}", "decisions": {${decisionsBody(names)}}}`;
}

/**
 * The sentence offering an in-process restatement tool beside the shell command (the Agent SDK's
 * MCP tool, the frameworks' tool): its name and the arguments it takes.
 */
export function restateToolHint(tool: string, names: readonly string[]): string {
  return `In this session you can also restate with the tool ${tool}: {"decisions": {${decisionsBody(names)}}}. It records the same restatement and answers the same way.`;
}

/**
 * How to restate, as lines: the tool call where the runtime has one (it needs no shell), and the
 * shell command, always (the shell is the way where no tool is registered).
 */
function restateLines(sessionId: string, names: readonly string[], voice: Voice): string[] {
  const command = observeCommand(sessionId, names, voice);
  if (!voice.restateTool) return [command];
  return [`  ${restateToolCall(sessionId, names, voice.restateTool)}`, '', 'or, in your shell:', '', command];
}

/** The command a human runs, in their own terminal, to approve a changed decision. */
export function approveCommand(
  sessionId: string,
  change: NonNullable<BoundaryView['change']>,
  voice: Voice = DEFAULT_VOICE,
): string {
  // Printed for the human's own terminal; the launcher is the one this installation uses.
  return (
    `${voice.launcher} approve --session ${sessionId} --decision ${change.decision} ` +
    `--from-digest ${change.fromDigest} --to-digest ${change.toDigest} --ref <ticket-or-note-id> --by <your-id>`
  );
}

/**
 * The one sentence appended to the summarizer's instructions before compaction: keep the named
 * decisions verbatim. Names only, never values (the summarizer has the values in the conversation).
 * Stable on purpose, so a test can find it in the summarization request.
 */
export function summaryInstruction(names: readonly string[]): string {
  return `${SUMMARY_INSTRUCTION_PREFIX} ${quoteNames(names)}.`;
}

/** The fixed start of {@link summaryInstruction}. */
export const SUMMARY_INSTRUCTION_PREFIX =
  '[continuity] Keep these task decisions in the summary verbatim, each by its name with its exact current value:';

/** The context added to the model after compaction. */
export function compactionContext(
  sessionId: string,
  names: readonly string[],
  voice: Voice = DEFAULT_VOICE,
): string {
  return [
    `[continuity] This session was just compacted. Before your next consequential action (${voice.consequentialTools}),`,
    `restate these task decisions as you understand them now: ${quoteNames(names)}.`,
    'Restate them from your own context, not by reading the task record in .continuity/.',
    voice.restateTool
      ? 'Call the restate tool, with each value as JSON:'
      : 'Run exactly this, with each value as JSON:',
    '',
    ...restateLines(sessionId, names, voice),
    '',
    'If you no longer know a decision, leave it out and ask the human; do not guess. Until the',
    'restatement matches the record (or a human approves a change) the continuity gate blocks',
    'consequential tools. The command prints whether you may continue and what to do otherwise.',
  ].join('\n');
}

/**
 * What to do next for a boundary in this state, in words the agent can follow (for `preserved`
 * and `approved_change`: continue).
 */
export function nextAction(view: BoundaryView, voice: Voice = DEFAULT_VOICE): string {
  const names = view.decisionNames;
  const d = view.primaryDecision ? `"${view.primaryDecision}"` : 'a decision';
  const restate = restateLines(view.sessionId, names, voice).join('\n');
  switch (view.state) {
    case 'preserved':
      return `Every decision (${quoteNames(names)}) matches the record with a fresh observation. Continue; writes are allowed.`;
    case 'approved_change': {
      const refs = view.approvalRefs?.length ? ` (approval ${view.approvalRefs.join(' → ')})` : '';
      return `${d} changed through a human approval${refs}. Continue with the new value; writes are allowed.`;
    }
    case 'dropped':
      return [
        `${d} is missing from your restatement after compaction (required: ${quoteNames(names)}).`,
        `Pause consequential work and restore it. If you know it, restate every decision again:`,
        '',
        restate,
        '',
        `If you do not know it, stop and ask the human for ${d}; do not guess. Writes stay blocked until then.`,
      ].join('\n');
    case 'conflicting': {
      const lines = [
        `${d} changed after compaction without a human approval. Stop: do not write.`,
        `Tell the human that ${d} changed and what you now believe it is.`,
        `If your restatement was a mistake, restate the original value with continuity observe.`,
        `If the change is intended, only a human can approve it, in their own terminal (never through your Bash tool):`,
      ];
      if (view.change) lines.push('', `  ${approveCommand(view.sessionId, view.change, voice)}`, '');
      lines.push(`Writes stay blocked until the change is approved or the original value is restated.`);
      return lines.join('\n');
    }
    case 'unverified':
      return unverifiedAction(view, d, restate);
  }
}

function unverifiedAction(view: BoundaryView, d: string, restate: string): string {
  switch (view.reason) {
    case 'post_observation_missing':
      return [
        view.compacted === false
          ? `A compaction of this session began (its task decisions were snapshotted) and they have not been restated since; if the compaction was cancelled, restating confirms nothing was lost.`
          : `This session was compacted and its task decisions (${quoteNames(view.decisionNames)}) have not been restated since.`,
        `Restate them from your own understanding (not from .continuity/), then retry:`,
        '',
        restate,
      ].join('\n');
    case 'stale_observation':
      return [
        `Your restatement of ${d} carried an observation time from before the compaction, which is not fresh evidence.`,
        `Restate it now (leave out observedAt), then retry:`,
        '',
        restate,
      ].join('\n');
    case 'normalizer_mismatch':
    case 'digest_scheme_mismatch':
      return [
        `${d} cannot be compared with the record: its digest uses a different normalizer or key.`,
        `Restate it again with continuity observe; if this repeats, ask the human to check the digest key`,
        `(CONTINUITY_DIGEST_KEY_FILE) used before and after compaction.`,
        '',
        restate,
      ].join('\n');
    case 'pre_snapshot_missing':
      return [
        `Continuity cannot be verified: no snapshot of the task decisions was taken before this compaction` +
          (view.evidenceMissing ? ` (${view.evidenceMissing}).` : '.'),
        `A human must confirm each consequential action until the next compaction is captured; ask them.`,
        `To restore checking, the human fixes the task record (.continuity/task.json).`,
      ].join('\n');
    default:
      return [
        `Continuity cannot be verified (${view.reason}). Restate the decisions, and ask the human if this repeats:`,
        '',
        restate,
      ].join('\n');
  }
}

/** The gate's reason for a denied or asked tool call. */
export function gateReason(
  view: BoundaryView,
  verdict: 'deny' | 'ask' = 'deny',
  voice: Voice = DEFAULT_VOICE,
): string {
  const head =
    verdict === 'ask'
      ? `The continuity gate asks a human first (${view.state}: ${view.reason}).`
      : `Blocked by the continuity gate (${view.state}: ${view.reason}).`;
  return `${head}\n${nextAction(view, voice)}`;
}

/** The view the messages need, from a cached boundary. */
export function boundaryView(sessionId: string, b: GateBoundary): BoundaryView {
  const view: BoundaryView = {
    sessionId,
    state: b.state,
    reason: b.reason,
    primaryDecision: b.primaryDecision,
    decisionNames: b.decisionNames,
  };
  if (b.evidenceMissing) view.evidenceMissing = b.evidenceMissing;
  if (b.change) view.change = b.change;
  if (b.approvalRefs) view.approvalRefs = b.approvalRefs;
  view.compacted = b.compactedAt !== undefined;
  return view;
}

/** The gate's reason when the agent tries to approve its own change. */
export const APPROVE_REFUSED =
  'Refused by the continuity gate: approvals come from a human. Do not run `continuity approve` yourself. ' +
  'Tell the human which decision changed; they approve it in their own terminal if they agree.';

/** The gate's reason when a tool call would touch the continuity evidence. */
export const EVIDENCE_REFUSED =
  'Refused by the continuity gate: this touches the continuity ledger, its keys or the adapter state, ' +
  'which are evidence and must not be changed by the agent. Leave them alone; ask the human if you need something there.';

/** The gate's reason for asking before the agent writes the task record or configuration. */
export const TASK_RECORD_ASK =
  'The continuity gate asks a human first: this changes the task record or the continuity configuration ' +
  "(.continuity/), which hold the task's decisions. A human should confirm the change.";

/** The gate's reason when a tool call was too large (or too malformed) to inspect. */
export const UNINSPECTABLE_ASK =
  'The continuity gate asks a human first: this tool input is too large for the gate to inspect, ' +
  'or its target files could not be read from it.';

/** The gate's reason for refusing, while a boundary is unresolved, a command whose program is chosen at run time. */
export const RUNTIME_CHOSEN_REFUSED =
  'Refused by the continuity gate: while the task decisions are unresolved after compaction, a command whose program is chosen at run time ' +
  '(a variable, a substitution, eval, a shell or interpreter given code) is refused, because it could be `continuity approve`. ' +
  'Run the program by its name, or restate the decisions first with continuity observe.';

/** The gate's reason when it can reach no verdict: no state it can read and no readable ledger. */
export const STATE_UNKNOWN_ASK =
  "The continuity gate asks a human first: it could not read this session's continuity state or the ledger, " +
  'so it cannot tell whether a compaction is unresolved.';

/** The gate's reason for a tool it does not know, while writes are held. */
export const UNKNOWN_TOOL_HELD =
  'The continuity gate asks a human first: writes are held until the task decisions are restated after compaction, ' +
  'and the gate does not know what this tool can change. Restate the decisions first, or let a human confirm this call.';

/** The gate's reason while the configuration file cannot be read as one. */
export const CONFIG_UNREADABLE_ASK =
  'The continuity gate asks a human first: the continuity configuration (.continuity/config.json) is not a regular ' +
  'JSON file it can read (a FIFO, a device, a link to one, too large, or not JSON), so it cannot tell what is allowed. ' +
  'A human must restore the file.';

/** The gate's reason when a protected file has another name (a hard link). */
export const HARD_LINK_ASK =
  'The continuity gate asks a human first: this call touches a protected continuity file (the task record, the ' +
  'configuration, the ledger or a key) under another name (a hard link), or one of them now has a second name. ' +
  'A human must confirm, and remove the extra link.';

/** The gate's reason for asking before the agent changes a settings file of the runtime that loads the hooks. */
export const RUNTIME_CONFIG_ASK =
  "The continuity gate asks a human first: this changes (or names) one of the runtime's own settings files that " +
  'load the continuity hooks (hooks, plugins, MCP servers, environment). Changed by the agent, it could take the ' +
  'continuity gate out of the next session. A human should confirm the change.';

/**
 * What the human is shown when a session starts on a task record that is still init's template:
 * which decisions to fill in, and the command that seals them. Names only, never values.
 */
export function templateNotice(label: string, names: readonly string[]): string {
  return (
    `continuity: ${label} is still the template, so no decision is checked across compactions. ` +
    `Fill in this task's decisions (${names.join(', ')}: 3 to 7), delete its "template" line, ` +
    'then run `continuity task seal`.'
  );
}

/** The restatement tool's description, as the agent reads it: the MCP tool's and every framework's. */
export const RESTATE_TOOL_DESCRIPTION =
  'Restate the task decisions after a context compaction, from your own understanding (not from the task record): ' +
  'each decision by its name with its current value as JSON. Answers whether you may continue and what to do otherwise.';

/** The restatement tool's `decisions` argument, as the agent reads it. */
export const RESTATE_DECISIONS_DESCRIPTION =
  'decision name → its value as you understand it now (any JSON value)';
