/**
 * `npm run demo`: the six-case reproduction through real spans.
 *
 * NodeSDK runs with the {@link ContinuityProcessor} and a metric reader; the six boundaries of
 * `examples/six-case/cases.json` are replayed through the SDK extension (values in, digests out,
 * with the fixture's timestamps). The table shows the continuity state the processor wrote on
 * each post span beside the event-only rule, then the `continuity.boundaries` counts read
 * back from the metric reader.
 *
 * With `OTEL_EXPORTER_OTLP_ENDPOINT` set, spans and metrics are also exported over OTLP/HTTP
 * (`OTEL_EXPORTER_OTLP_PROTOCOL`: `http/protobuf`, the default, or `http/json`) and flushed
 * before exit. Otherwise it needs nothing but Node.
 *
 * With `--serve` (`npm run demo -- --serve [--port N]`) it also starts `continuity serve` in this
 * process, sends it the spans, prints the continuity page's address and serves until Ctrl-C
 * (see `serve.ts`).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { diag } from '@opentelemetry/api';
import { OTLPMetricExporter as OTLPMetricExporterJson } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPMetricExporter as OTLPMetricExporterProto } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPTraceExporter as OTLPTraceExporterJson } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OTLPTraceExporterProto } from '@opentelemetry/exporter-trace-otlp-proto';
import { type IMetricReader, MetricReader, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { NodeSDK } from '@opentelemetry/sdk-node';
import {
  BatchSpanProcessor,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { InputError } from '../decision/problems.js';
import { createContinuity } from '../otel/extension.js';
import { ContinuityProcessor } from '../otel/processor.js';
import {
  ATTR_CONTINUITY_ACTION,
  ATTR_CONTINUITY_PRIMARY_DECISION,
  ATTR_CONTINUITY_REASON,
  ATTR_CONTINUITY_STATE,
  ATTR_SESSION_ID,
  METRIC_ATTR_STATE,
  METRIC_BOUNDARIES,
  SPAN_COMPACTION_POST,
} from '../otel/semconv.js';
import { countStates, renderCounts, renderTable } from '../report/table.js';
import { demoApprover } from './approver.js';
import { loadReplayFixture, replayCases } from './replay.js';
import {
  DEMO_ACTIVITY,
  type DemoService,
  parseDemoArgs,
  startDemoService,
  untilSignal,
  userApproverKeys,
} from './serve.js';

/** A metric reader that collects only when asked, so the demo can read its own counts back. */
class OnDemandReader extends MetricReader {
  protected override async onShutdown(): Promise<void> {}
  protected override async onForceFlush(): Promise<void> {}
}

const PROTOCOLS = ['http/protobuf', 'http/json'] as const;

/** The OTLP/HTTP exporters for the configured protocol, or none without an endpoint. */
function otlpExport():
  | { spanProcessor: SpanProcessor; metricReader: IMetricReader; protocol: string }
  | undefined {
  const endpoint = process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint) return undefined;
  let protocol = process.env.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf';
  if (!(PROTOCOLS as readonly string[]).includes(protocol)) {
    process.stderr.write(
      `demo: OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is not supported here; using http/protobuf\n`,
    );
    protocol = 'http/protobuf';
  }
  const json = protocol === 'http/json';
  return {
    protocol,
    spanProcessor: new BatchSpanProcessor(json ? new OTLPTraceExporterJson() : new OTLPTraceExporterProto()),
    metricReader: new PeriodicExportingMetricReader({
      exporter: json ? new OTLPMetricExporterJson() : new OTLPMetricExporterProto(),
      // Long enough never to fire during the demo; shutdown exports the final collection.
      exportIntervalMillis: 60_000,
    }),
  };
}

async function main(): Promise<void> {
  const args = parseDemoArgs(process.argv.slice(2));
  const approver = demoApprover();
  const userKeys = args.serve ? userApproverKeys(args, process.env) : [];
  const demo: DemoService | undefined = args.serve
    ? await startDemoService(args.port, [approver.publicKeyHex, ...userKeys.map((k) => k.hex)])
    : undefined;
  const casesPath = fileURLToPath(new URL('../../examples/six-case/cases.json', import.meta.url));
  const cases = loadReplayFixture(
    JSON.parse(readFileSync(casesPath, 'utf8')),
    'examples/six-case/cases.json',
  );

  const memory = new InMemorySpanExporter();
  const reader = new OnDemandReader();
  const otlp = otlpExport();
  // The ContinuityProcessor comes first so its check spans still reach the exporting processors.
  const readBack = new SimpleSpanProcessor(memory);
  const spanProcessors: SpanProcessor[] = [new ContinuityProcessor(), readBack];
  const metricReaders: IMetricReader[] = [reader];
  if (demo) spanProcessors.push(demo.spanProcessor);
  if (otlp) {
    spanProcessors.push(otlp.spanProcessor);
    metricReaders.push(otlp.metricReader);
  }
  const sdk = new NodeSDK({ serviceName: 'agent-continuity-demo', spanProcessors, metricReaders });
  sdk.start();

  const continuity = createContinuity({ runtime: 'sdk' });
  const replayed = await replayCases(continuity, cases, { approver });
  if (demo) {
    for (const [i, c] of cases.entries())
      await continuity.reportActivity(c.id, DEMO_ACTIVITY[i % DEMO_ACTIVITY.length]!);
  }
  // The SDK exports once the resource's async attributes settle; wait for the read-back copy.
  await readBack.forceFlush();

  const postBySession = new Map<string, ReadableSpan>();
  for (const span of memory.getFinishedSpans()) {
    if (span.name === SPAN_COMPACTION_POST) postBySession.set(String(span.attributes[ATTR_SESSION_ID]), span);
  }
  const text = (v: unknown) => (v === undefined ? '-' : String(v));
  const stateCounts: Record<string, number> = countStates([]);
  const eventOnly: Record<string, number> = {};
  const rows = replayed.map((c) => {
    const attrs = postBySession.get(c.id)?.attributes ?? {};
    const state = text(attrs[ATTR_CONTINUITY_STATE]);
    if (state in stateCounts) stateCounts[state]!++;
    eventOnly[c.eventOnly] = (eventOnly[c.eventOnly] ?? 0) + 1;
    return [
      c.id,
      c.eventOnly,
      state,
      text(attrs[ATTR_CONTINUITY_PRIMARY_DECISION]),
      text(attrs[ATTR_CONTINUITY_REASON]),
      text(attrs[ATTR_CONTINUITY_ACTION]),
    ];
  });

  const { resourceMetrics, errors } = await reader.collect();
  if (errors.length > 0) diag.warn(`demo: metric collection reported ${errors.length} error(s)`);
  const metricCounts: Record<string, number> = countStates([]);
  for (const scope of resourceMetrics.scopeMetrics) {
    for (const metric of scope.metrics) {
      if (metric.descriptor.name !== METRIC_BOUNDARIES) continue;
      for (const point of metric.dataPoints) {
        const state = String(point.attributes[METRIC_ATTR_STATE]);
        metricCounts[state] = (metricCounts[state] ?? 0) + Number(point.value);
      }
    }
  }

  const out = process.stdout;
  out.write('Six compaction boundaries sent through real spans: NodeSDK, the continuity extension,\n');
  out.write('the ContinuityProcessor and a metric reader. Each case has a complete pre/post event pair.\n\n');
  out.write(
    `${renderTable(['case', 'event-only rule', 'continuity state', 'decision', 'reason', 'action'], rows)}\n\n`,
  );
  out.write(`event-only rule:                     ${renderCounts(eventOnly)}\n`);
  out.write(`continuity state on the post spans:  ${renderCounts(stateCounts)}\n`);
  out.write(`metric ${METRIC_BOUNDARIES}:  ${renderCounts(metricCounts)}\n`);

  await sdk.shutdown(); // flushes the OTLP exporters, when configured
  if (otlp)
    out.write(
      `\nexported spans and metrics to ${process.env.OTEL_EXPORTER_OTLP_ENDPOINT} (${otlp.protocol})\n`,
    );
  if (demo) {
    // Listening before the line that says Ctrl-C stops it (see src/cli/commands/serve.ts).
    const signal = untilSignal();
    out.write(
      userKeys.length > 0
        ? `\nApprovals signed by ${userKeys.map((k) => `${k.keyId} (${k.from})`).join(', ')} count here: the page's recordApproval call with approverSigner resolves the conflict.\n`
        : "\nTo approve the conflict with the page's recordApproval call, make your approver key (`npx continuity key init`) and rerun, or pass --approver-key FILE (a public key, `continuity key show`).\n",
    );
    out.write(
      `\nThe continuity page: ${demo.pageUrl}\n(continuity serve in this process; Ctrl-C stops it)\n`,
    );
    await signal;
    await demo.stop();
  } else {
    out.write('\nSee the six sessions on the continuity page: npm run demo -- --serve\n');
  }
}

main().catch((err: unknown) => {
  if (err instanceof InputError) {
    process.stderr.write(`${err.message}\n`);
    process.exitCode = 2;
    return;
  }
  process.stderr.write(`demo failed: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exitCode = 1;
});
