/**
 * A resolved verdict survives `kill -9` (issue 26): with the downstream down, a `conflicting`
 * boundary acknowledged to its client was gone after a `kill -9` of `continuity serve` (its
 * counter series gone, no span after the restart), so the critical alert could never fire. Now the
 * verdict is re-emitted by the next start: counted again, and sent as a check span once the
 * downstream is back; once delivered, it is not sent again.
 */
import { OTLPTraceExporter as OtlpProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { describe, expect, it } from 'vitest';
import {
  ATTR_CONTINUITY_STATE,
  ATTR_SESSION_ID,
  METRIC_BOUNDARIES,
  PROMETHEUS_NAMES,
  prometheusLabel,
  SPAN_CONTINUITY_CHECK,
} from '../../src/otel/semconv.js';
import { scrape, startDownstream, startServe, tempDir, total, waitFor } from './harness.js';
import { expectedStates, sendSixCases } from './six-cases.js';

const BOUNDARIES = PROMETHEUS_NAMES[METRIC_BOUNDARIES];
const STATE = prometheusLabel(ATTR_CONTINUITY_STATE);

describe('continuity serve: resolved verdicts across kill -9 with the downstream down', () => {
  it('re-emits an acknowledged conflicting verdict after the restart, and delivers it once the downstream returns', async () => {
    const dir = tempDir();
    const downstream = await startDownstream();
    await downstream.close();
    const config = {
      downstream: {
        endpoint: `${downstream.base}/v1/traces`,
        retry: { initialInterval: '50ms', maxInterval: '200ms', multiplier: 2 },
      },
      server: { grpcPort: false },
      ui: { enabled: false },
    };
    const want = [...expectedStates().values()];
    const conflicting = want.filter((s) => s === 'conflicting').length;
    expect(conflicting).toBeGreaterThan(0);

    const first = await startServe({ dir, config });
    // Every request is answered 200: acknowledged, the verdicts resolved, the downstream down.
    const sent = await sendSixCases(new OtlpProtoTraceExporter({ url: first.otlp }), 'dur');
    await waitFor('six verdicts counted', async () => total(await scrape(first.metrics), BOUNDARIES) === 6);
    expect(total(await scrape(first.metrics), BOUNDARIES, { [STATE]: 'conflicting' })).toBe(conflicting);
    await first.kill9();

    const second = await startServe({ dir, config });
    // The series is back at once, before any new span arrives: the alert can fire.
    const restored = await scrape(second.metrics);
    expect(total(restored, BOUNDARIES, { [STATE]: 'conflicting' })).toBe(conflicting);
    expect(total(restored, BOUNDARIES)).toBe(6);
    expect(second.stderr()).toContain('resolved verdicts not yet delivered');

    await downstream.reopen();
    const conflictingSession = sent.find((c) => c.caseId.includes('conflicting'))!.sessionId;
    await waitFor('the conflicting verdict delivered', () =>
      downstream.spans.find(
        (s) =>
          s.span.name === SPAN_CONTINUITY_CHECK &&
          s.attributes[ATTR_SESSION_ID] === conflictingSession &&
          s.attributes[ATTR_CONTINUITY_STATE] === 'conflicting',
      ),
    );
    await waitFor(
      'all six verdicts delivered',
      () =>
        new Set(
          downstream.spans
            .filter((s) => s.span.name === SPAN_CONTINUITY_CHECK)
            .map((s) => s.attributes[ATTR_SESSION_ID]),
        ).size === 6,
    );
    expect(await second.stop()).toBe(0);

    // Delivered: a third start does not send or count them again.
    const delivered = downstream.spans.length;
    const third = await startServe({ dir, config });
    expect(total(await scrape(third.metrics), BOUNDARIES)).toBe(0);
    expect(third.stderr()).not.toContain('resolved verdicts not yet delivered');
    expect(await third.stop()).toBe(0);
    expect(downstream.spans.length).toBe(delivered);
    await downstream.close();
  }, 60_000);

  it('keeps undelivered verdicts across a graceful stop too (the final snapshot holds them)', async () => {
    const dir = tempDir();
    const downstream = await startDownstream();
    await downstream.close();
    const config = {
      downstream: { endpoint: `${downstream.base}/v1/traces` },
      server: { grpcPort: false },
      shutdown: { timeout: '500ms' },
      ui: { enabled: false },
    };
    const first = await startServe({ dir, config });
    await sendSixCases(new OtlpProtoTraceExporter({ url: first.otlp }), 'grace');
    await waitFor('six verdicts counted', async () => total(await scrape(first.metrics), BOUNDARIES) === 6);
    expect(await first.stop()).toBe(0);
    const second = await startServe({ dir, config });
    expect(total(await scrape(second.metrics), BOUNDARIES)).toBe(6);
    await second.kill9();
  }, 60_000);
});
