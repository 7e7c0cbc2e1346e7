/**
 * The adapters' span export: a configured span sink (an in-process adapter's tracer provider)
 * takes the spans in place of the OTLP exporter; when it declines or throws, the exporter sends
 * them as before.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AdapterConfig, loadConfig, resolveEnv } from '../../src/adapters/core/config.js';
import { exportAdapterSpans } from '../../src/adapters/core/export.js';
import type { ExportSpan } from '../../src/export/spans.js';
import { SPAN_ACTIVITY } from '../../src/otel/semconv.js';
import { type OtlpReceiver, startOtlpReceiver, TRACES_PATH } from '../support/otlp-receiver.js';

const SPAN: ExportSpan = {
  name: SPAN_ACTIVITY,
  ids: { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331' },
  startNs: 1_700_000_000_000_000_000n,
  endNs: 1_700_000_000_001_000_000n,
  attributes: {},
};

describe('exportAdapterSpans with a span sink', () => {
  let dir = '';
  let receiver: OtlpReceiver;
  let config: AdapterConfig;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'adapter-export-'));
    receiver = await startOtlpReceiver({ paths: [TRACES_PATH] });
    const env = resolveEnv({ CONTINUITY_STATE_DIR: dir, CONTINUITY_OTLP_ENDPOINT: receiver.endpoint });
    config = loadConfig(dir, env, { runtime: 'test-runtime', gatedTools: [] }).config;
  });
  afterAll(async () => {
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('hands the spans to the sink and sends nothing over OTLP when it takes them', async () => {
    const taken: ExportSpan[][] = [];
    const report = await exportAdapterSpans(
      [SPAN],
      {
        ...config,
        spanSink: (s) => {
          taken.push([...s]);
          return true;
        },
      },
      () => {},
    );
    expect(taken).toEqual([[SPAN]]);
    expect(report.sent).toBe(1);
    expect(receiver.spans).toEqual([]);
  });

  it('exports over OTLP when the sink declines, or throws (with one warning)', async () => {
    await exportAdapterSpans([SPAN], { ...config, spanSink: async () => false }, () => {});
    expect(receiver.spans.map((s) => s.spanId)).toEqual([SPAN.ids.spanId]);
    const warnings: string[] = [];
    await exportAdapterSpans(
      [SPAN],
      {
        ...config,
        spanSink: () => {
          throw new Error('provider gone');
        },
      },
      (l) => warnings.push(l),
    );
    expect(receiver.spans).toHaveLength(2);
    expect(warnings).toEqual(['span sink failed (provider gone); exporting over OTLP instead']);
  });
});
