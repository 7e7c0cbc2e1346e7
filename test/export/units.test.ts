/**
 * The exporter's pure parts: settings precedence, ids derived from the boundary and the ledger
 * seq, the request shape; and `exportSpans` doing nothing when exporting is off.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NORMALIZER_VERSION } from '../../src/decision/model.js';
import { resolveExportConfig } from '../../src/export/config.js';
import { exportSpans } from '../../src/export/exporter.js';
import { approvalSpan, compactionSpan } from '../../src/export/ledger-spans.js';
import { boundarySpanIds, buildTraceRequest, sessionSpanIds } from '../../src/export/spans.js';
import { readCompactionSpan } from '../../src/otel/attributes.js';
import { ATTR_GEN_AI_CONVERSATION_COMPACTED, SPAN_COMPACTION_POST } from '../../src/otel/semconv.js';
import { decodeTraceRequest, encodeTraceRequest } from '../../src/otlp/index.js';

const DIGEST = `sha256:${'a'.repeat(64)}`;
const SNAPSHOT = {
  sessionId: 's-1',
  capturedAt: '2026-01-02T03:04:05.000Z',
  normalizerVersion: NORMALIZER_VERSION,
  decisions: { scope: { digest: DIGEST, revision: 1, observedAt: '2026-01-02T03:04:05.000Z' } },
};
const APPROVAL = {
  decision: 'scope',
  fromDigest: DIGEST,
  toDigest: `sha256:${'b'.repeat(64)}`,
  approvalRef: 'CHG-1',
  approvedBy: 'alice',
  approvedAt: '2026-01-02T04:00:00.000Z',
};

let dir = '';
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'export-unit-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('resolveExportConfig', () => {
  it('is off without an endpoint when the caller has no default (the recording commands)', () => {
    expect(resolveExportConfig({ env: {} })).toEqual({
      config: { enabled: false, tracesUrl: '', protocol: 'http/json', timeoutMs: 1500, headers: {} },
      warnings: [],
    });
  });

  it('takes the flag over CONTINUITY_OTLP_TRACES_ENDPOINT over CONTINUITY_OTLP_ENDPOINT over the file', () => {
    const file = { values: { endpoint: 'http://file:1' }, label: 'cfg.export' };
    const env = { CONTINUITY_OTLP_ENDPOINT: 'http://env:2/' };
    expect(resolveExportConfig({ env: {}, file }).config.tracesUrl).toBe('http://file:1/v1/traces');
    expect(resolveExportConfig({ env, file }).config.tracesUrl).toBe('http://env:2/v1/traces');
    const full = { ...env, CONTINUITY_OTLP_TRACES_ENDPOINT: 'http://env:3/custom' };
    expect(resolveExportConfig({ env: full, file }).config.tracesUrl).toBe('http://env:3/custom');
    const flag = { value: 'http://flag:4', label: '--otlp-endpoint' };
    const r = resolveExportConfig({ env: full, file, endpointFlag: flag });
    expect(r.config).toMatchObject({ enabled: true, tracesUrl: 'http://flag:4/v1/traces' });
  });

  it('ignores a URL that is not http(s) with a warning, and stays off when nothing else names one', () => {
    const r = resolveExportConfig({ env: { CONTINUITY_OTLP_ENDPOINT: 'file:///etc/passwd' } });
    expect(r.config.enabled).toBe(false);
    expect(r.warnings).toEqual(['CONTINUITY_OTLP_ENDPOINT: expected an http(s) URL; ignored']);
  });

  it('reads protocol, timeout and headers; bad values become warnings and defaults', () => {
    const ok = resolveExportConfig({
      env: {
        CONTINUITY_OTLP_ENDPOINT: 'http://h:1',
        CONTINUITY_OTLP_PROTOCOL: 'http/protobuf',
        CONTINUITY_OTLP_TIMEOUT_MS: '300',
        CONTINUITY_OTLP_HEADERS: 'a=1, b = two=2 ,broken',
      },
    });
    expect(ok.config).toMatchObject({
      protocol: 'http/protobuf',
      timeoutMs: 300,
      headers: { a: '1', b: 'two=2' },
    });
    const bad = resolveExportConfig({
      env: {
        CONTINUITY_OTLP_ENDPOINT: 'http://h:1',
        CONTINUITY_OTLP_PROTOCOL: 'grpc',
        CONTINUITY_OTLP_TIMEOUT_MS: '5',
      },
    });
    expect(bad.config).toMatchObject({ protocol: 'http/json', timeoutMs: 1500 });
    expect(bad.warnings).toHaveLength(2);
  });

  it('CONTINUITY_EXPORT=off wins over a configured endpoint', () => {
    const r = resolveExportConfig({
      env: { CONTINUITY_OTLP_ENDPOINT: 'http://h:1', CONTINUITY_EXPORT: 'off' },
    });
    expect(r.config.enabled).toBe(false);
  });
});

describe('span ids', () => {
  it('put every span of a boundary in one trace; the post span links to the pre span', () => {
    const boundary = { boundaryId: 'b-1', runtime: 'sh' };
    const pre = compactionSpan('pre', SNAPSHOT, boundary, { startNs: 1n, endNs: 2n });
    const post = compactionSpan('post', SNAPSHOT, boundary, { startNs: 3n, endNs: 4n, part: 'post-7' });
    expect(pre.ids).toEqual(boundarySpanIds('s-1', 'b-1', 'pre'));
    expect(post.ids.traceId).toBe(pre.ids.traceId);
    expect(post.ids.spanId).not.toBe(pre.ids.spanId);
    expect(post.links).toEqual([pre.ids]);
    expect(post.attributes[ATTR_GEN_AI_CONVERSATION_COMPACTED]).toBe(true);
    expect(pre.links).toBeUndefined();
    // Derived from the ledger seq: the same post sent twice is the same span.
    expect(
      compactionSpan('post', SNAPSHOT, boundary, { startNs: 5n, endNs: 6n, part: 'post-7' }).ids,
    ).toEqual(post.ids);
    // Without a part, each restatement is a span of its own.
    const a = compactionSpan('post', SNAPSHOT, boundary, { startNs: 5n, endNs: 6n });
    const b = compactionSpan('post', SNAPSHOT, boundary, { startNs: 5n, endNs: 6n });
    expect(a.ids.spanId).not.toBe(b.ids.spanId);
  });

  it('derive an approval span from the ledger seq, in the boundary trace or its own', () => {
    const inBoundary = approvalSpan('s-1', APPROVAL, 12, 'b-1');
    expect(inBoundary.ids).toEqual({
      traceId: boundarySpanIds('s-1', 'b-1', 'pre').traceId,
      spanId: boundarySpanIds('s-1', 'b-1', 'pre', 'approval-12').spanId,
    });
    expect(approvalSpan('s-1', APPROVAL, 12, 'b-1').ids).toEqual(inBoundary.ids);
    expect(approvalSpan('s-1', APPROVAL, 13, 'b-1').ids.spanId).not.toBe(inBoundary.ids.spanId);
    expect(approvalSpan('s-1', APPROVAL, 12, null).ids).toEqual(sessionSpanIds('s-1', 'approval-12'));
    expect(inBoundary.startNs).toBe(BigInt(Date.parse(APPROVAL.approvedAt)) * 1_000_000n);
  });
});

describe('buildTraceRequest', () => {
  it('encodes to protobuf and back, and the codec reads the post span as the processor will', () => {
    const post = compactionSpan(
      'post',
      SNAPSHOT,
      { boundaryId: 'b-1', runtime: 'sh' },
      { startNs: 3n, endNs: 4n },
    );
    const request = buildTraceRequest([post], 'agent-continuity');
    const back = decodeTraceRequest(encodeTraceRequest(request, 'protobuf'), 'protobuf');
    const span = back.resourceSpans[0]!.scopeSpans[0]!.spans[0]!;
    expect(span.name).toBe(SPAN_COMPACTION_POST);
    expect(span.links[0]!.spanId).toBe(boundarySpanIds('s-1', 'b-1', 'pre').spanId);
    const attrs = Object.fromEntries(span.attributes.map((kv) => [kv.key, kv.value]));
    expect(Object.keys(attrs)).toContain(ATTR_GEN_AI_CONVERSATION_COMPACTED);
    const event = readCompactionSpan(post.name, post.attributes, post.startNs);
    expect(event).toMatchObject({ kind: 'post', sessionId: 's-1', boundaryId: 'b-1', runtime: 'sh' });
  });
});

describe('exportSpans', () => {
  it('does nothing when exporting is off: no request, no spool directory', async () => {
    const spoolDir = join(dir, 'spool');
    const lines: string[] = [];
    const { config } = resolveExportConfig({ env: {} });
    const span = approvalSpan('s-1', APPROVAL, 1, null);
    const report = await exportSpans([span], config, {
      spoolDir,
      serviceName: 'agent-continuity',
      warn: (l) => lines.push(l),
    });
    expect(report).toEqual({ sent: 0, spooled: 0, flushed: 0, dropped: 0, rejected: 0, lost: 0, waiting: 0 });
    expect(existsSync(spoolDir)).toBe(false);
    expect(lines).toEqual([]);
  });
});
