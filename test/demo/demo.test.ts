/**
 * `npm run demo` as a user runs it: `node dist/demo/main.js` in a child process (built by the
 * pretest step), alone and with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a receiver in this test.
 */
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ATTR_CONTINUITY_STATE, METRIC_BOUNDARIES, SPAN_COMPACTION_POST } from '../../src/otel/semconv.js';
import { attributesToRecord } from '../../src/otlp/index.js';
import { expectedStates } from '../service/six-cases.js';
import {
  type OtlpReceiver as Receiver,
  startOtlpReceiver as startReceiver,
} from '../support/otlp-receiver.js';
import { startServingDemo } from './harness.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

function runDemo(
  env: Record<string, string>,
  args: readonly string[] = [],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const clean = { ...process.env };
  for (const k of Object.keys(clean)) if (k.startsWith('OTEL_')) delete clean[k];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['dist/demo/main.js', ...args], {
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

const COUNTS = 'preserved 2 · approved_change 1 · unverified 1 · dropped 1 · conflicting 1';

describe('npm run demo', () => {
  it('prints the six states from the post spans and the metric counts, with nothing but Node', async () => {
    const { code, stdout, stderr } = await runDemo({});
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toMatch(/event-only rule: +healthy 6/);
    expect(stdout).toContain(`continuity state on the post spans:  ${COUNTS}`);
    expect(stdout).toContain(`metric ${METRIC_BOUNDARIES}:  ${COUNTS}`);
    expect(stdout).toMatch(/case-5-conflicting-scope +healthy +conflicting +scope/);
    expect(stdout).not.toContain('exported');
    expect(stdout).toContain('See the six sessions on the continuity page: npm run demo -- --serve\n');
  });

  it('refuses an --approver-key it cannot read with exit 2 and one line naming the flag, serving nothing', async () => {
    const missing = join(tmpdir(), 'continuity-demo-no-such-key.pub.pem');
    const { code, stdout, stderr } = await runDemo({}, ['--serve', '--port', '0', '--approver-key', missing]);
    expect(code).toBe(2);
    expect(stderr).toBe('demo arguments: --approver-key[0]: cannot read the public key file (ENOENT)\n');
    expect(stdout).not.toContain('The continuity page');
  });

  describe.each(['http/json', 'http/protobuf'])('with OTEL_EXPORTER_OTLP_PROTOCOL=%s', (protocol) => {
    let receiver: Receiver;
    beforeAll(async () => {
      receiver = await startReceiver();
    });
    afterAll(async () => {
      await receiver.close();
    });

    it('also exports the spans and metrics and flushes them before exit', async () => {
      const { code, stdout } = await runDemo({
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
      });
      expect(code).toBe(0);
      expect(stdout).toContain(`exported spans and metrics to ${receiver.endpoint} (${protocol})`);
      expect(receiver.errors).toEqual([]);
      const expectedType = protocol === 'http/json' ? 'application/json' : 'application/x-protobuf';
      for (const r of receiver.requests) expect(r.contentType).toContain(expectedType);
      const states = receiver.spans
        .map((s) => s.span)
        .filter((s) => s.name === SPAN_COMPACTION_POST)
        .map((s) => attributesToRecord(s.attributes)[ATTR_CONTINUITY_STATE])
        .sort();
      expect(states).toEqual([
        'approved_change',
        'conflicting',
        'dropped',
        'preserved',
        'preserved',
        'unverified',
      ]);
      const metricNames = receiver.metrics.flatMap((m) =>
        m.resourceMetrics.flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics.map((x) => x.name))),
      );
      expect(metricNames).toContain(METRIC_BOUNDARIES);
    });
  });
});

describe('npm run demo -- --serve', () => {
  it('serves the six cases on the continuity page until SIGTERM', async () => {
    const demo = await startServingDemo();
    const { pageUrl } = demo;
    try {
      const overview = (await (await fetch(`${pageUrl}/api/overview`)).json()) as {
        sessions: Array<{ sessionId: string; state: string; activity: string }>;
        needsHuman: Array<{ sessionId: string }>;
      };
      const states = Object.fromEntries(overview.sessions.map((s) => [s.sessionId, s.state]));
      // What the core classifier says of each case.
      expect(states).toEqual(Object.fromEntries(expectedStates()));
      expect(overview.needsHuman.map((s) => s.sessionId).sort()).toEqual([
        'case-4-dropped-approval-boundary',
        'case-5-conflicting-scope',
      ]);
      expect(overview.sessions.find((s) => s.sessionId === 'case-5-conflicting-scope')?.activity).toBe(
        'working',
      );
      const html = await (await fetch(pageUrl)).text();
      expect(html).toContain('Needs a human (<span data-count="needs-human">2</span>)');
    } finally {
      expect(await demo.stop()).toBe(0);
    }
    expect(demo.stderr()).toBe('');
  });
});
