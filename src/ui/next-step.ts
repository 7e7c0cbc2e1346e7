/**
 * The exact next step for a session's latest boundary, as the continuity page shows it to a
 * person: who acts (nobody, the agent, a human) and the command to run, with digests and decision
 * names, never values. The commands are the ones the write gate tells the agent
 * (`src/adapters/core/messages.ts`), so the page and the gate never disagree.
 */
import { approveCommand, observeCommand } from '../adapters/core/messages.js';
import type { Classification } from '../classify/classify.js';
import type { ContinuityReason, ContinuityState } from '../classify/states.js';
import type { Snapshot } from '../decision/model.js';
import { isShowable } from './shown.js';

/** One command of a next step, with what it does. */
export interface StepCommand {
  /** What running it does, in a few words. */
  label: string;
  /** The shell command. */
  command: string;
}

/** Who has to act. */
export type StepActor = 'nobody' | 'agent' | 'human';

/** The next step for a session. */
export interface NextStep {
  actor: StepActor;
  /** One or two sentences of our own words (never a value or a summary). */
  text: string;
  commands: StepCommand[];
}

/** What the next step is computed from. */
export interface StepInput {
  sessionId: string;
  /** The latest resolution's classification and evidence, when one is known. */
  latest?: { classification: Classification; pre: Snapshot | null; post: Snapshot | null } | undefined;
  /** The correlator's latest state, when the evidence is not in the page's history (after a restart). */
  state?: { state: ContinuityState; reason: ContinuityReason } | undefined;
  /** A boundary waiting for its post observation, with its pre snapshot when there is one. */
  pending?: { pre: Snapshot | null } | undefined;
  /**
   * `true` when a ledger this page reads has the session's boundary (the CLI's commands work here);
   * `false` when it reads one without the session; undefined when it reads none. In the latter two
   * cases `continuity approve` here would be refused for want of the pre snapshot, so the commands
   * offered are those of where the evidence lives (the agent's machine, or the app).
   */
  inLedger?: boolean | undefined;
  /** The runtime that recorded the session (`sdk`, `claude-code`, …), when known. */
  runtime?: string | null | undefined;
  /** The latest boundary's id, when known: an app's signed approval names it. */
  boundaryId?: string | null | undefined;
}

/**
 * The runtimes whose adapter has a write gate (a hook or callback that stops the agent's
 * consequential writes while continuity is broken), each recording into the ledger of the machine
 * it runs on. Any other runtime (the SDK extension in an app, a script) has no gate: the app acts
 * on the state. test/ui/units.test.ts keeps this list equal to the adapters' RUNTIME constants.
 */
export const GATED_RUNTIMES: ReadonlySet<string> = new Set([
  'claude-code',
  'claude-agent-sdk',
  'codex-cli',
  'copilot',
  'gemini',
  'opencode',
  'qwen-code',
]);

/** Where a session's evidence lives, as far as this page can tell, and so which commands work. */
type EvidencePlace =
  /** In the ledger this page reads: the CLI's `approve` and `observe` work from this machine. */
  | 'this-ledger'
  /** In the ledger of the machine where a gated runtime's agent runs: the CLI works there. */
  | 'agent-ledger'
  /** In the app's spans only (the SDK extension): the app records approvals and restatements. */
  | 'app';

function evidencePlace(input: StepInput): EvidencePlace {
  if (input.inLedger === true) return 'this-ledger';
  return input.runtime && GATED_RUNTIMES.has(input.runtime) ? 'agent-ledger' : 'app';
}

/** What stops the agent meanwhile, in words that are true for its runtime. */
function gateSentence(runtime: string | null | undefined): string {
  if (runtime && GATED_RUNTIMES.has(runtime)) {
    return "Until then the write gate refuses the agent's consequential writes.";
  }
  return `Nothing blocks the agent's writes for ${runtime ? `runtime ${runtime}` : 'this runtime'} (it has no write gate): the app acts on the state the extension returns, e.g. it pauses the agent.`;
}

const AGENT_LEDGER_NOTE =
  'This page has no record of the session in a ledger it reads: run the commands on the machine where the agent runs (its ledger holds the pre snapshot).';

/** Stands for the boundary's id in the app's approval call when the id is withheld or unknown. */
export const BOUNDARY_PLACEHOLDER = '<boundary-id>';

/**
 * The SDK call that records a human's approval in the app, signed with the human's approver key:
 * `approverSigner` (exported by agent-continuity) asks the passphrase at the app's terminal, so
 * the call proves a human only when a human types it (docs/security.md). No key, no passphrase.
 */
function recordApprovalCall(
  sessionId: string,
  boundaryId: string | null | undefined,
  decision: string,
  fromDigest: string,
  toDigest: string,
): string {
  const boundary =
    boundaryId && isShowable(boundaryId) ? JSON.stringify(boundaryId) : `'${BOUNDARY_PLACEHOLDER}'`;
  return `await continuity.recordApproval(${JSON.stringify(sessionId)}, { decision: ${JSON.stringify(decision)}, fromDigest: ${JSON.stringify(fromDigest)}, toDigest: ${JSON.stringify(toDigest)}, approvalRef: '<ticket-or-note-id>', approvedBy: '<your-id>', signer: await approverSigner(${boundary}) });`;
}

/** The SDK call with which the agent, through the app, restates its decisions. */
function observePostCall(sessionId: string, names: readonly string[]): string {
  const body =
    names.length === 0
      ? "'<decision>': { value: <value> }"
      : names.map((n) => `${n}: { value: <value> }`).join(', ');
  return `await continuity.observePost(${JSON.stringify(sessionId)}, { ${body} });`;
}

const STATUS_HINT = 'Run `continuity status --session <id>` in your terminal for the ledger view.';

/** The next step for a session (see the module comment). */
export function nextStep(input: StepInput): NextStep {
  const safe = isShowable(input.sessionId);
  const withCommands = (step: NextStep): NextStep =>
    safe
      ? step
      : {
          ...step,
          text: `${step.text} The session id is withheld (it looks like a path or a secret), so no command is shown; ${STATUS_HINT}`,
          commands: [],
        };

  const place = evidencePlace(input);
  const restateFor = (names: readonly string[]): StepCommand =>
    place === 'app'
      ? {
          label: 'the agent restates the decisions through the app',
          command: observePostCall(input.sessionId, names),
        }
      : {
          label:
            place === 'this-ledger' ? 'restate the decisions' : 'restate the decisions, where the agent runs',
          command: observeCommand(input.sessionId, names),
        };
  if (input.pending) {
    const names = Object.keys(input.pending.pre?.decisions ?? {});
    const asked =
      input.runtime && GATED_RUNTIMES.has(input.runtime) ? 'the gate asks it to' : 'the app asks it to';
    return withCommands({
      actor: 'agent',
      text: `A compaction was snapshotted and its decisions have not been restated yet. The agent restates them (${asked}); no human action is needed unless it cannot.`,
      commands: [restateFor(names)],
    });
  }
  const latest = input.latest;
  if (!latest) {
    if (!input.state) return { actor: 'nobody', text: 'No boundary resolved yet.', commands: [] };
    return {
      actor:
        input.state.state === 'preserved' || input.state.state === 'approved_change' ? 'nobody' : 'human',
      text: `The latest boundary is ${input.state.state} (${input.state.reason}); its evidence is not in this page's history (the service restarted since). ${STATUS_HINT}`,
      commands: [],
    };
  }
  const c = latest.classification;
  const names = Object.keys(latest.pre?.decisions ?? {});
  const restate = restateFor(names);
  const gate = gateSentence(input.runtime);
  const elsewhere = place === 'agent-ledger' ? ` ${AGENT_LEDGER_NOTE}` : '';
  switch (c.state) {
    case 'preserved':
      return {
        actor: 'nobody',
        text: 'Every decision matches with a fresh observation. Continue.',
        commands: [],
      };
    case 'approved_change':
      return {
        actor: 'nobody',
        text: 'A decision changed through a human approval. Continue; the approval chain is the audit trail.',
        commands: [],
      };
    case 'dropped':
      return withCommands({
        actor: 'human',
        text: `"${c.primaryDecision}" is missing after compaction. ${gate} Give the agent the missing decision (do not let it guess); it restates every decision:${elsewhere}`,
        commands: [restate],
      });
    case 'conflicting': {
      const approvals: StepCommand[] = [];
      for (const [name, d] of Object.entries(c.decisions)) {
        const from = latest.pre?.decisions[name]?.digest;
        const to = latest.post?.decisions[name]?.digest;
        if (d.verdict !== 'conflicting' || from === undefined || to === undefined) continue;
        approvals.push(
          place === 'app'
            ? {
                label: `approve the change of "${name}" in the app, from a human's action (never the agent's own call); approverSigner, from agent-continuity, asks your approver passphrase at the app's terminal (\`continuity key init\` makes the key; the service must trust its public key)`,
                command: recordApprovalCall(input.sessionId, input.boundaryId, name, from, to),
              }
            : {
                label: `approve the change of "${name}" (in your own terminal${place === 'agent-ledger' ? ' on the machine where the agent runs' : ''}, never through the agent)`,
                command: approveCommand(input.sessionId, { decision: name, fromDigest: from, toDigest: to }),
              },
        );
      }
      return withCommands({
        actor: 'human',
        text: `"${c.primaryDecision}" changed without a human approval. ${gate} If the change is intended, approve it and let the agent restate; if not, the agent restates the original value.${elsewhere}`,
        commands: [
          ...approvals,
          { label: 'then, or instead: restate the decisions', command: restate.command },
        ],
      });
    }
    case 'unverified':
      return withCommands(unverifiedStep(c.reason, restate, input.runtime));
  }
}

function unverifiedStep(
  reason: ContinuityReason,
  restate: StepCommand,
  runtime: string | null | undefined,
): NextStep {
  switch (reason) {
    case 'pre_snapshot_missing':
      return {
        actor: 'human',
        text: `No snapshot was taken before this compaction, so continuity cannot be verified. ${
          runtime && GATED_RUNTIMES.has(runtime)
            ? 'Until the next compaction is captured the write gate asks a human to confirm each consequential action'
            : `Nothing asks a human to confirm the agent's actions for ${runtime ? `runtime ${runtime}` : 'this runtime'} (it has no write gate): the app decides, e.g. it asks a human to confirm each consequential action until the next compaction is captured`
        }; fix the task record so the next one is.`,
        commands: [],
      };
    case 'no_required_decisions':
      return {
        actor: 'human',
        text: 'The snapshot before compaction recorded no decisions. Add the task decisions to the task record.',
        commands: [],
      };
    case 'normalizer_mismatch':
    case 'digest_scheme_mismatch':
      return {
        actor: 'agent',
        text: 'The digests before and after cannot be compared (different normalizer or key). The agent restates; if this repeats, check the digest key (CONTINUITY_DIGEST_KEY_FILE) is the same on both sides.',
        commands: [restate],
      };
    case 'stale_observation':
      return {
        actor: 'agent',
        text: 'The restatement carried an observation time from before the compaction, which is not fresh evidence. The agent restates now.',
        commands: [restate],
      };
    default:
      return {
        actor: 'agent',
        text: 'The decisions were not restated after compaction. The agent restates them.',
        commands: [restate],
      };
  }
}
