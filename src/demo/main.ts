/**
 * `npm run demo`: the six-case reproduction. Classifies the six synthetic boundaries of
 * `examples/six-case/cases.json` and prints the event-only rule beside the classifier.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { classifyFixture, parseFixture } from '../fixture/cases.js';
import { caseResultsJson, renderCaseTable, renderCounts } from '../report/table.js';

const casesPath = fileURLToPath(new URL('../../examples/six-case/cases.json', import.meta.url));
const results = classifyFixture(parseFixture(JSON.parse(readFileSync(casesPath, 'utf8')), casesPath));
const doc = caseResultsJson(results);
process.stdout.write('Six compaction boundaries, each with a complete pre/post event pair.\n\n');
process.stdout.write(`${renderCaseTable(results)}\n\n`);
process.stdout.write(`event-only rule: ${renderCounts(doc.eventOnlyCounts)}\n`);
process.stdout.write(`classifier:      ${renderCounts(doc.counts)}\n`);
