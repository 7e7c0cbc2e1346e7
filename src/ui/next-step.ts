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
   * `false` when the page reads a ledger and it has no record of the session (its spans came from
   * an agent that records elsewhere): `continuity approve` here would be refused for want of the
   * pre snapshot, so no approve command is offered.
   */
  inLedger?: boolean | undefined;
}

const APPROVE_ELSEWHERE =
  "This machine's ledger has no pre snapshot of this session (its spans came from an agent that records elsewhere): record the approval where the agent records, with `continuity approve` against its ledger or the SDK's `recordApproval`.";

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

  if (input.pending) {
    const names = Object.keys(input.pending.pre?.decisions ?? {});
    return withCommands({
      actor: 'agent',
      text: 'A compaction was snapshotted and its decisions have not been restated yet. The agent restates them (the gate asks it to); no human action is needed unless it cannot.',
      commands: [{ label: 'restate the decisions', command: observeCommand(input.sessionId, names) }],
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
  const restate: StepCommand = {
    label: 'restate the decisions',
    command: observeCommand(input.sessionId, names),
  };
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
        text: `"${c.primaryDecision}" is missing after compaction. Writes are blocked. Give the agent the missing decision (do not let it guess); it restates every decision:`,
        commands: [restate],
      });
    case 'conflicting': {
      const approvals: StepCommand[] = [];
      for (const [name, d] of Object.entries(c.decisions)) {
        const from = latest.pre?.decisions[name]?.digest;
        const to = latest.post?.decisions[name]?.digest;
        if (d.verdict !== 'conflicting' || from === undefined || to === undefined) continue;
        approvals.push({
          label: `approve the change of "${name}" (in your own terminal, never through the agent)`,
          command: approveCommand(input.sessionId, { decision: name, fromDigest: from, toDigest: to }),
        });
      }
      const here = input.inLedger !== false;
      return withCommands({
        actor: 'human',
        text: `"${c.primaryDecision}" changed without a human approval. Writes are blocked. If the change is intended, approve it and let the agent restate; if not, the agent restates the original value.${here ? '' : ` ${APPROVE_ELSEWHERE}`}`,
        commands: [
          ...(here ? approvals : []),
          { label: 'then, or instead: restate the decisions', command: restate.command },
        ],
      });
    }
    case 'unverified':
      return withCommands(unverifiedStep(c.reason, restate));
  }
}

function unverifiedStep(reason: ContinuityReason, restate: StepCommand): NextStep {
  switch (reason) {
    case 'pre_snapshot_missing':
      return {
        actor: 'human',
        text: 'No snapshot was taken before this compaction, so continuity cannot be verified. A human confirms each consequential action until the next compaction is captured; fix the task record so the next one is.',
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
