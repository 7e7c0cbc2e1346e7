/**
 * `continuity observe`: the agent restates its decisions after compaction. The restatement is
 * digested (values dropped at once), appended to the ledger as the boundary's post snapshot, the
 * boundary is classified, the gate cache updated, the `continuity.compaction.post` span exported, and
 * the state and next action are printed in words the agent can follow.
 *
 * The session: `--session ID`, else the project's current session, which the SessionStart,
 * PreCompact and InstructionsLoaded hooks record (keyed by the project directory, in a 0600 file
 * under the state root). The agent's shell does not know Claude Code's session id, so the context
 * injected after compaction also prints the exact command with `--session`.
 */
import { dirname, resolve } from 'node:path';
import { NORMALIZER_VERSION, OPAQUE_ID_PATTERN, type Snapshot } from '../../decision/model.js';
import { InputError } from '../../decision/problems.js';
import { loadDigestKey } from '../../digest/key-file.js';
import { approvalSpan, compactionSpan } from '../../export/ledger-spans.js';
import { type ExportSpan, nowNs } from '../../export/spans.js';
import { loadConfig, policyVerdict, RUNTIME, resolveProjectDir } from './config.js';
import { type BoundaryEvidence, classifyEvidence, gateBoundaryOf, openEvidence } from './evidence.js';
import { exportHookSpans } from './export.js';
import { systemNow, taskRecordLabel } from './handlers.js';
import { nextAction } from './messages.js';
import { digestRestatement } from './restatement.js';
import { boundaryView, readProjectSession, writeGateState } from './state.js';
import { readTaskOutline } from './task-record.js';

/** Options of `continuity observe`. */
export interface ObserveOptions {
  /** The session id. Default: the project's current session recorded by the hooks. */
  session?: string;
  /** The restated decisions as parsed JSON (from `--decisions FILE|-` and/or `--decision NAME=VALUE`). */
  decisions: Record<string, unknown>;
  /** Where the decisions came from, for error messages (`(stdin)`, a file name, `--decision`). */
  source: string;
  /** The project directory. Default `CLAUDE_PROJECT_DIR`, else the working directory. */
  project?: string;
  /** `--ledger PATH`. Default `CONTINUITY_LEDGER`, else the state directory. */
  ledger?: string;
  env?: NodeJS.ProcessEnv;
  /** The clock. Default the system clock. */
  now?: () => string;
}

/** What `continuity observe` found, also printed as JSON with `--json`. */
export interface ObserveResult {
  sessionId: string;
  boundaryId: string | null;
  state: string | null;
  action: string | null;
  reason: string | null;
  primaryDecision: string | null;
  decisions: Record<string, { verdict: string; reason: string }>;
  /** What the gate does with consequential tools now: `allowed`, `ask` or `blocked`. */
  writes: 'allowed' | 'ask' | 'blocked';
  /** The next action in words. */
  next: string;
}

/**
 * `continuity.approval` spans for the approvals recorded since the boundary's pre snapshot,
 * sent before the post span so a span processor (e.g. `continuity serve`) sees the same approvals
 * the ledger holds. Ids are derived from the approval's ledger seq, exactly as
 * `continuity approve` derives them: re-sending one (each restatement sends them again) repeats
 * the same span, which a backend can de-duplicate.
 *
 * Why re-send at all, now that `continuity approve` exports its own span: it does so only when an
 * endpoint is configured where the human runs it (`--otlp-endpoint` or
 * `CONTINUITY_OTLP_ENDPOINT`), and a human's terminal usually has neither, while the hooks export
 * to a local `continuity serve` by default. Without this re-send such an approval would never
 * reach the processor, which would keep the boundary `conflicting` while the gate, reading the
 * ledger, says `approved_change`.
 */
function approvalSpans(ev: BoundaryEvidence): ExportSpan[] {
  const preSeq = ev.seqs.pre ?? 0;
  const out: ExportSpan[] = [];
  ev.approvals.forEach((a, i) => {
    const seq = ev.seqs.approvals[i] ?? 0;
    if (seq > preSeq) out.push(approvalSpan(ev.sessionId, a, seq, ev.boundaryId));
  });
  return out;
}

/** Finds the current session recorded for `dir` or the nearest parent that has one. */
export function findProjectSession(dir: string, env: NodeJS.ProcessEnv): string | undefined {
  let d = resolve(dir);
  for (;;) {
    const s = readProjectSession(d, env);
    if (s) return s.sessionId;
    const up = dirname(d);
    if (up === d) return undefined;
    d = up;
  }
}

/** Records the restatement and classifies the boundary. Throws {@link InputError} for bad input. */
export async function runObserve(options: ObserveOptions): Promise<ObserveResult> {
  const env = options.env ?? process.env;
  const now = (options.now ?? systemNow)();
  const projectDir = options.project ? resolve(options.project) : resolveProjectDir(env);
  const { config } = loadConfig(projectDir, env);
  const sessionId = options.session ?? findProjectSession(projectDir, env);
  if (!sessionId) {
    throw new InputError('--session', [
      {
        path: '(option)',
        message:
          'no session given and none recorded for this project; pass --session ID (the id is in the context added after compaction)',
      },
    ]);
  }
  if (!OPAQUE_ID_PATTERN.test(sessionId)) {
    throw new InputError('--session', [{ path: '(option)', message: 'expected an opaque identifier' }]);
  }
  const store = openEvidence(env, options.ledger);
  try {
    const before = store.latest(sessionId);
    if (!before) {
      return {
        sessionId,
        boundaryId: null,
        state: null,
        action: null,
        reason: null,
        primaryDecision: null,
        decisions: {},
        writes: 'allowed',
        next: `No compaction is recorded for session ${sessionId}; there is nothing to restate. Continue.`,
      };
    }
    const outline = readTaskOutline(config.taskRecordPath, taskRecordLabel(config));
    const decisions = digestRestatement(options.decisions, options.source, {
      now,
      pre: before.pre?.decisions ?? null,
      sensitive: outline.ok ? outline.outline.sensitive : [],
      loadKey: () => loadDigestKey({ env }),
    });
    const startNs = nowNs();
    const trigger = before.trigger;
    await store.append({
      type: 'snapshot',
      phase: 'post',
      sessionId,
      boundaryId: before.boundaryId,
      runtime: RUNTIME,
      ...(trigger ? { trigger } : {}),
      capturedAt: now,
      normalizerVersion: NORMALIZER_VERSION,
      decisions,
    });
    const ev = store.latest(sessionId) ?? before;
    const c = classifyEvidence(ev);
    await store.receipt(ev, c, Date.parse(now));
    const gb = gateBoundaryOf(ev, c, outline.ok ? outline.outline.names : []);
    writeGateState(sessionId, gb, now, env);

    const post: Snapshot = { sessionId, capturedAt: now, normalizerVersion: NORMALIZER_VERSION, decisions };
    await exportHookSpans(
      [
        ...approvalSpans(ev),
        // Same trace as the pre span (derived from the boundary), linked to it; a fresh span per restatement.
        compactionSpan(
          'post',
          post,
          {
            boundaryId: before.boundaryId,
            runtime: RUNTIME,
            ...(trigger ? { trigger } : {}),
            ...(ev.compactedAt ? { compactedAt: ev.compactedAt } : {}),
          },
          { startNs, endNs: nowNs() },
        ),
      ],
      config,
      env,
      (l) => process.stderr.write(`continuity: ${l}\n`),
    );
    const verdict = policyVerdict(config.gate.policy, c.state, c.reason);
    return {
      sessionId,
      boundaryId: before.boundaryId,
      state: c.state,
      action: c.action,
      reason: c.reason,
      primaryDecision: c.primaryDecision,
      decisions: Object.fromEntries(
        Object.entries(c.decisions).map(([n, d]) => [n, { verdict: d.verdict, reason: d.reason }]),
      ),
      writes: verdict === 'allow' ? 'allowed' : verdict === 'ask' ? 'ask' : 'blocked',
      next: nextAction(boundaryView(sessionId, gb)),
    };
  } finally {
    await store.close().catch(() => {});
  }
}

/** The text `continuity observe` prints. */
export function renderObserve(r: ObserveResult): string {
  if (r.state === null) return `continuity: ${r.next}\n`;
  const head = `continuity: ${r.state} (${r.reason}) for session ${r.sessionId}, boundary ${r.boundaryId}; writes ${r.writes}.`;
  return `${head}\n${r.next}\n`;
}
