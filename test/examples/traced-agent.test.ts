/**
 * examples/traced-agent runs as a user runs it (a child process importing the built package by
 * name), with and without a lossy summary, and exporting over OTLP to a receiver in this test.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ATTR_CONTINUITY_REASON,
  ATTR_CONTINUITY_STATE,
  ATTR_SESSION_ID,
  SPAN_COMPACTION_POST,
  SPAN_COMPACTION_PRE,
  SPAN_CONTINUITY_CHECK,
} from '../../src/otel/semconv.js';
import { attributesToRecord } from '../../src/otlp/index.js';
import {
  type OtlpReceiver as Receiver,
  startOtlpReceiver as startReceiver,
} from '../support/otlp-receiver.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

function runAgent(args: string[], env: Record<string, string> = {}) {
  const clean = { ...process.env };
  for (const k of Object.keys(clean)) if (k.startsWith('OTEL_')) delete clean[k];
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, ['examples/traced-agent/agent.js', ...args], {
      cwd: root,
      env: { ...clean, ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('examples/traced-agent', () => {
  it('keeps its decisions through two compactions and finishes', async () => {
    const { code, stdout, stderr } = await runAgent([]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout.match(/compacted: continuity preserved/g)).toHaveLength(2);
    expect(stdout).toContain('agent done');
  });

  it('notices a summary that dropped the approval boundary and pauses', async () => {
    const { code, stdout } = await runAgent(['--lossy-summary']);
    expect(code).toBe(0);
    expect(stdout).toContain('compacted: continuity dropped');
    expect(stdout).toContain('agent paused');
    expect(stdout).not.toContain('turn 4');
  });

  describe('exporting over OTLP/HTTP', () => {
    let receiver: Receiver;
    beforeAll(async () => {
      receiver = await startReceiver();
    });
    afterAll(async () => {
      await receiver.close();
    });

    it('sends the agent spans and the compaction spans, the state on the post span, in the boundary trace under the turn', async () => {
      const { code } = await runAgent(['--lossy-summary'], {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      });
      expect(code).toBe(0);
      expect(receiver.errors).toEqual([]);
      const spans = receiver.spans.map((s) => s.span);
      const names = new Set(spans.map((s) => s.name));
      for (const name of ['agent.turn', 'chat fake-model', 'execute_tool run_tests', 'summarize']) {
        expect(names).toContain(name);
      }
      const post = spans.find((s) => s.name === SPAN_COMPACTION_POST)!;
      const pre = spans.find((s) => s.name === SPAN_COMPACTION_PRE)!;
      const attrs = attributesToRecord(post.attributes);
      expect(attrs[ATTR_CONTINUITY_STATE]).toBe('dropped');
      expect(attrs[ATTR_SESSION_ID]).toBe('session-0001');
      // One trace per boundary (trace-id routing keeps it together): the pre span is a child of
      // the agent turn it was captured in, the post a child of the pre; no parent is missing.
      const turn = spans.find((s) => s.spanId === pre.parentSpanId)!;
      expect(turn.name).toBe('agent.turn');
      expect(pre.traceId).toBe(turn.traceId);
      expect(post.traceId).toBe(pre.traceId);
      expect(post.parentSpanId).toBe(pre.spanId);
      for (const s of spans) {
        if (s.parentSpanId === '') continue;
        expect(
          spans.some((p) => p.traceId === s.traceId && p.spanId === s.parentSpanId),
          s.name,
        ).toBe(true);
      }
      expect(JSON.stringify(receiver.traces)).not.toContain('acme/payments');
    });

    it('exports the check span that shutdown emits for a boundary whose post never came', async () => {
      const before = receiver.spans.length;
      const { code, stdout } = await runAgent(['--stop-during-summary'], {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      });
      expect(code).toBe(0);
      expect(stdout).toContain('agent stopped');
      const spans = receiver.spans.slice(before);
      const pre = spans.find((s) => s.name === SPAN_COMPACTION_PRE)!;
      expect(spans.filter((s) => s.name === SPAN_COMPACTION_POST)).toEqual([]);
      // The processor is registered before the batch processor: what it emits during
      // sdk.shutdown() still reaches the exporter.
      const checks = spans.filter((s) => s.name === SPAN_CONTINUITY_CHECK);
      expect(checks).toHaveLength(1);
      expect(checks[0]!.attributes).toMatchObject({
        [ATTR_SESSION_ID]: 'session-0001',
        [ATTR_CONTINUITY_STATE]: 'unverified',
        [ATTR_CONTINUITY_REASON]: 'post_observation_missing',
      });
      expect(checks[0]!.traceId).toBe(pre.traceId);
      expect(checks[0]!.links).toEqual([{ traceId: pre.traceId, spanId: pre.spanId }]);
    });
  });
});
