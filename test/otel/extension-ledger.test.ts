/**
 * The SDK extension writing to the real ledger (src/ledger): the six cases replayed through the
 * extension leave evidence in a ledger file from which the classifier reaches the same states the
 * processor writes on the spans; a ledger that refuses writes marks the spans instead.
 */

import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadReplayFixture, replayCases } from '../../src/demo/replay.js';
import { classifyEvidence, Ledger } from '../../src/ledger/index.js';
import { readCompactionSpan } from '../../src/otel/attributes.js';
import { createContinuity } from '../../src/otel/extension.js';
import { SPAN_COMPACTION_PRE } from '../../src/otel/semconv.js';
import { testApprover } from '../support/approver.js';

const casesPath = new URL('../../examples/six-case/cases.json', import.meta.url);
const cases = loadReplayFixture(JSON.parse(readFileSync(casesPath, 'utf8')), 'examples/six-case/cases.json');

let dir: string;
let exporter: InMemorySpanExporter;
let provider: BasicTracerProvider;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'continuity-ext-'));
  exporter = new InMemorySpanExporter();
  provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
});

afterEach(async () => {
  await provider.shutdown();
  chmodSync(dir, 0o700);
  rmSync(dir, { recursive: true, force: true });
});

describe('the extension with the real ledger', () => {
  it('leaves evidence from which the six cases classify as the fixture says', async () => {
    const path = join(dir, 'state', 'ledger.jsonl');
    const ledger = Ledger.open(path);
    const continuity = createContinuity({ tracer: provider.getTracer('t'), ledger });
    // The approval is signed, as a human's is, by a key the ledger trusts (its certificate appended).
    const approver = testApprover();
    const replayed = await replayCases(continuity, cases, { approver });
    expect(replayed.every((c) => c.post?.ok)).toBe(true);
    await ledger.append(approver.keyRecord());

    const states = Object.fromEntries(
      cases.map((c) => [c.id, classifyEvidence(ledger.latestBoundary(c.id)!).state]),
    );
    expect(states).toEqual({
      'case-1-preserved': 'preserved',
      'case-2-preserved': 'preserved',
      'case-3-approved-test-change': 'approved_change',
      'case-4-dropped-approval-boundary': 'dropped',
      'case-5-conflicting-scope': 'conflicting',
      'case-6-stale-test-digest': 'unverified',
    });
    await ledger.close();

    const text = readFileSync(path, 'utf8');
    expect(text).not.toContain('acme/payments');
    expect(text).not.toContain('npm test');
    expect(text.trim().split('\n')).toHaveLength(6 * 2 + 1 + 1);
  });

  it('marks the span ledger_write_failed when the ledger cannot be written', async () => {
    const path = join(dir, 'ledger.jsonl');
    const ledger = Ledger.open(path);
    await ledger.close(); // a closed ledger refuses every append
    const continuity = createContinuity({ tracer: provider.getTracer('t'), ledger, onProblem: () => {} });
    const pre = await continuity.capturePre('session-1', {
      scope: { value: 'a' },
      target: { value: 'b' },
      constraint: { value: 'c' },
    });
    expect(pre.ok).toBe(false);
    expect(pre.evidenceMissing).toBe('ledger_write_failed');
    const span = exporter.getFinishedSpans().find((s) => s.name === SPAN_COMPACTION_PRE)!;
    const event = readCompactionSpan(span.name, span.attributes, span.startTime);
    expect(event?.kind === 'pre' && event.evidenceMissing).toBe('ledger_write_failed');
  });
});
