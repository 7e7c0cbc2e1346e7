/**
 * `continuity classify FILE [--json]`: classifies the boundaries of a fixture file.
 */
import type { Command } from 'commander';
import { classifyFixture, parseFixture } from '../../fixture/cases.js';
import { caseResultsJson, renderCaseTable, renderCounts } from '../../report/table.js';
import { readJsonInput } from '../io.js';

/** Registers `continuity classify FILE [--json]` on the program. */
export function registerClassify(program: Command): void {
  program
    .command('classify')
    .description('classify the compaction boundaries of a fixture file (format: docs/fixture-format.md)')
    .argument('<file>', 'fixture JSON file, or - for stdin')
    .option('--json', 'print a JSON document instead of a table')
    .action((file: string, opts: { json?: boolean }) => {
      const results = classifyFixture(parseFixture(readJsonInput(file), file === '-' ? '(stdin)' : file));
      if (opts.json) {
        process.stdout.write(`${JSON.stringify(caseResultsJson(results), null, 2)}\n`);
        return;
      }
      const doc = caseResultsJson(results);
      process.stdout.write(`${renderCaseTable(results)}\n\n`);
      process.stdout.write(`classifier: ${renderCounts(doc.counts)}\n`);
      process.stdout.write(`event-only: ${renderCounts(doc.eventOnlyCounts)}\n`);
    });
}
