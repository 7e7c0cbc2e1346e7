/**
 * Plain-text tables and JSON reports of classified boundaries, for the CLI and the demo.
 */
import { CONTINUITY_STATES, type ContinuityState } from '../classify/states.js';
import type { CaseResult } from '../fixture/cases.js';

/** Renders rows as an aligned plain-text table with a header rule. */
export function renderTable(header: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/** Counts per continuity state, every state present (zero included) in severity order reversed. */
export function countStates(states: Iterable<ContinuityState>): Record<ContinuityState, number> {
  const counts = Object.fromEntries([...CONTINUITY_STATES].reverse().map((s) => [s, 0])) as Record<
    ContinuityState,
    number
  >;
  for (const s of states) counts[s]++;
  return counts;
}

/** The `classify --json` document. */
export function caseResultsJson(results: readonly CaseResult[]) {
  const eventOnlyCounts = { healthy: 0, unhealthy: 0 };
  for (const r of results) eventOnlyCounts[r.eventOnly]++;
  return {
    cases: results.map((r) => ({
      id: r.id,
      state: r.classification.state,
      action: r.classification.action,
      reason: r.classification.reason,
      primaryDecision: r.classification.primaryDecision,
      decisions: Object.fromEntries(
        Object.entries(r.classification.decisions).map(([n, d]) => [
          n,
          { verdict: d.verdict, reason: d.reason, ...(d.approvalRefs && { approvalRefs: d.approvalRefs }) },
        ]),
      ),
      eventOnly: r.eventOnly,
    })),
    counts: countStates(results.map((r) => r.classification.state)),
    eventOnlyCounts,
  };
}

/** The side-by-side table: event-only rule beside the classifier, with each case's action. */
export function renderCaseTable(results: readonly CaseResult[]): string {
  const rows = results.map((r) => [
    r.id,
    r.eventOnly,
    r.classification.state,
    r.classification.primaryDecision ?? '-',
    r.classification.reason,
    r.classification.action,
  ]);
  return renderTable(['case', 'event-only rule', 'continuity state', 'decision', 'reason', 'action'], rows);
}

/** One line of counts, e.g. `preserved 2 · approved_change 1 · …`. */
export function renderCounts(counts: Record<string, number>): string {
  return Object.entries(counts)
    .map(([k, v]) => `${k} ${v}`)
    .join(' · ');
}
