/**
 * The compatibility suite: for each OpenTelemetry JS line the README says is supported, a fresh
 * app in a temporary folder installs its own SDK (exact versions from test/support/peers.ts),
 * then the packed package (`npm pack` of this build), and runs the README's own lines against its
 * own OTLP exporters, aimed at a receiver in this test. Node 20 is the Node running the tests;
 * Node 22 comes from the npm registry (`ensureNpmPeer(PEERS.node22)`).
 *
 * Each line checks: what the install adds (`npm ls`: the same OpenTelemetry copies before and
 * after, nothing nested under agent-continuity), the state and the link on the post span, the
 * check span emitted at shutdown, the metrics, a shutdown with no metric reader that exports
 * nothing of ours, the package's types against the app's own SpanProcessor, and `continuity
 * serve` on the app's own metrics SDK.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import {
  ATTR_CONTINUITY_ACTION,
  ATTR_CONTINUITY_REASON,
  ATTR_CONTINUITY_STATE,
  ATTR_SESSION_ID,
  METRIC_ATTR_STATE,
  METRIC_BOUNDARIES,
  METRIC_PENDING,
  METRIC_REOBSERVATION_DURATION,
  PROMETHEUS_NAMES,
  SPAN_COMPACTION_POST,
  SPAN_COMPACTION_PRE,
  SPAN_CONTINUITY_CHECK,
} from '../../src/otel/semconv.js';
import { attributesToRecord, type OtlpMetricsRequest } from '../../src/otlp/index.js';
import { startServe, stopChild } from '../alerting/processes.js';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../support/otlp-receiver.js';
import { ensureNpmPeer, type NpmPeer, PEERS } from '../support/peers.js';
import {
  type App,
  appSource,
  type BlockFile,
  blockNames,
  CJS_SESSION,
  COMPAT_PENDING_SESSION,
  COMPAT_SESSION,
  cjsAppSource,
  createApp,
  duplicates,
  type InstalledPackage,
  installTarball,
  type MetricReadersVariant,
  otelPackages,
  packRepository,
  REPO,
  readmeBlock,
  run,
  runApp,
  setupBlock,
  traceExporterSource,
} from './apps.js';

/** Installing a line from an empty npm cache downloads its SDK once; later runs take seconds. */
const INSTALL_TIMEOUT = 15 * 60_000;
const RUN_TIMEOUT = 5 * 60_000;

/** The lines the README's table promises: each runs the README's set-up and extension blocks. */
const LINES = [
  {
    title: 'Node 20, OpenTelemetry JS 2.x as this repository pins it',
    line: PEERS.otel2Pinned,
    node: 20,
    byHand: 'sdk-2.x',
  },
  { title: 'Node 20, the newest OpenTelemetry JS 2.x', line: PEERS.otel2Newest, node: 20, byHand: 'sdk-2.x' },
  { title: 'Node 22, the newest OpenTelemetry JS 3.x', line: PEERS.otel3Newest, node: 22, byHand: 'sdk-3.x' },
  { title: 'Node 24, the newest OpenTelemetry JS 3.x', line: PEERS.otel3Newest, node: 24, byHand: 'sdk-3.x' },
  { title: 'Node 24, the newest OpenTelemetry JS 2.x', line: PEERS.otel2Newest, node: 24, byHand: 'sdk-2.x' },
] as const;

/** The README's set-up block, the same on every line (continuityProcessors finds the line's batch processor). */
const SETUP = 'setup';

/** One app per line and Node. */
const appKey = (line: NpmPeer, node: number) => `${line.id}-node${node}`;

let scratch: string;
let tarball: string;
/** Every app of the file, installed at once (npm mostly waits on the disk: in parallel they take half the time). */
const apps = new Map<string, Installed>();

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'continuity-compat-'));
  tarball = await packRepository(scratch);
  const nodes: Record<number, string> = {
    20: process.execPath,
    22: (await ensureNpmPeer(PEERS.node22)).bin,
    24: (await ensureNpmPeer(PEERS.node24)).bin,
  };
  const all = [
    ...LINES.map((l) => [l.line, l.node] as const),
    [PEERS.otel2WithoutOnEnding, 20] as const,
    [PEERS.otelApiOnly, 20] as const,
  ];
  const installed = await Promise.all(
    all.map(([line, node]) => install(line, nodes[node]!, appKey(line, node))),
  );
  for (const [i, [line, node]] of all.entries()) apps.set(appKey(line, node), installed[i]!);
}, INSTALL_TIMEOUT);

afterAll(() => {
  // Five apps' node_modules: removing them takes a while on a busy disk.
  if (scratch) rmSync(scratch, { recursive: true, force: true });
}, INSTALL_TIMEOUT);

/** The metrics of one name, from every metrics request the receiver decoded. */
function metricsNamed(requests: OtlpMetricsRequest[], name: string) {
  return requests
    .flatMap((r) => r.resourceMetrics.flatMap((rm) => rm.scopeMetrics.flatMap((sm) => sm.metrics)))
    .filter((m) => m.name === name);
}

/** Counter or gauge points of one metric: value by the value of one attribute. */
function valuesBy(requests: OtlpMetricsRequest[], name: string, attribute: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of metricsNamed(requests, name)) {
    for (const p of [...(m.sum?.dataPoints ?? []), ...(m.gauge?.dataPoints ?? [])]) {
      out[String(attributesToRecord(p.attributes)[attribute])] = Number(p.asInt ?? p.asDouble);
    }
  }
  return out;
}

/** Histogram counts of one metric. */
function histogramCounts(requests: OtlpMetricsRequest[], name: string): number[] {
  return metricsNamed(requests, name).flatMap((m) =>
    (m.histogram?.dataPoints ?? []).map((p) => Number(p.count)),
  );
}

/** The continuity metric names a metrics request carried. */
function continuityMetricNames(requests: OtlpMetricsRequest[]): string[] {
  const names = requests.flatMap((r) =>
    r.resourceMetrics.flatMap((rm) => rm.scopeMetrics.flatMap((sm) => sm.metrics.map((m) => m.name))),
  );
  return [...new Set(names.filter((n) => n.startsWith('continuity.')))].sort();
}

function spanOf(receiver: OtlpReceiver, name: string, sessionId: string): ReceivedSpan | undefined {
  return receiver.spans.find((s) => s.name === name && s.attributes[ATTR_SESSION_ID] === sessionId);
}

/** Runs the assembled app once against a fresh receiver. */
async function runScenario(
  app: App,
  block: string,
  variant: MetricReadersVariant,
  env: Record<string, string> = {},
  file: BlockFile = 'README.md',
) {
  const receiver = await startOtlpReceiver();
  try {
    const { output } = await runApp(
      app,
      `app-${block}-${variant}.mjs`,
      appSource(setupBlock(block, variant, file)),
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        ...env,
      },
    );
    return { output, receiver };
  } finally {
    await receiver.close();
  }
}

/** The install of the tarball into an app, measured on both sides. */
interface Installed {
  app: App;
  before: InstalledPackage[];
  after: InstalledPackage[];
  lsStatus: number | null;
  installStderr: string;
}

async function install(line: NpmPeer, node: string, key: string): Promise<Installed> {
  const app = await createApp(join(scratch, key), line, node);
  const before = await otelPackages(app, { lockOnly: true });
  const r = await installTarball(app, tarball);
  const after = await otelPackages(app);
  return {
    app,
    before: before.packages,
    after: after.packages,
    lsStatus: after.lsStatus,
    installStderr: r.stderr,
  };
}

/** The install adds no OpenTelemetry package: the same copies at the same places, none of its own. */
function expectNoAddedCopy(installed: Installed): void {
  expect(installed.lsStatus, 'npm ls exits 0: no missing or invalid peer').toBe(0);
  // npm says nothing about agent-continuity (no install script, no peer conflict) but, from npm
  // 11.19, the line listing its `prepare` (the build a git install runs) among the scripts of a
  // non-registry package: npm never runs prepare for a tarball, it only names it.
  const mentions = installed.installStderr.split('\n').filter((l) => l.includes('agent-continuity'));
  expect(
    mentions.filter((l) => !/^npm warn install-scripts +agent-continuity@[\d.]+ \(prepare: [^)]+\)$/.test(l)),
  ).toEqual([]);
  expect(installed.after).toEqual(installed.before);
  expect(installed.after.filter((p) => p.path.includes('agent-continuity'))).toEqual([]);
  expect(installed.after.filter((p) => p.name === '@opentelemetry/api')).toHaveLength(1);
}

describe.each(LINES)('$title', ({ line, node, byHand }) => {
  const block = SETUP;
  let installed: Installed;
  beforeAll(() => {
    installed = apps.get(appKey(line, node))!;
  });

  it('installs as one more package: npm ls shows the same OpenTelemetry copies as before, none under agent-continuity', () => {
    expectNoAddedCopy(installed);
    // The app's own SDK is what the package uses: every copy the app has is there exactly once,
    // except those sdk-node itself pins at other versions than the app's direct dependencies.
    const own = duplicates(installed.before);
    expect(duplicates(installed.after)).toEqual(own);
    if (line === PEERS.otel2Pinned) expect(own).toEqual({});
  });

  it(
    "runs the README's lines: the state and the link on the post span, a check span at shutdown, the metrics",
    async () => {
      const { output, receiver } = await runScenario(installed.app, block, 'as-written');
      expect(receiver.errors).toEqual([]);
      expect(output.state).toBe('preserved');
      expect(output.diag).toEqual({ warn: [], error: [] });

      const pre = spanOf(receiver, SPAN_COMPACTION_PRE, COMPAT_SESSION);
      const post = spanOf(receiver, SPAN_COMPACTION_POST, COMPAT_SESSION);
      expect(post?.attributes).toMatchObject({
        [ATTR_CONTINUITY_STATE]: 'preserved',
        [ATTR_CONTINUITY_ACTION]: 'continue',
        [ATTR_CONTINUITY_REASON]: 'digest_match_fresh',
      });
      expect(post?.links).toEqual([{ traceId: pre!.traceId, spanId: pre!.spanId }]);
      expect(
        receiver.spans.filter(
          (s) => s.name === SPAN_CONTINUITY_CHECK && s.attributes[ATTR_SESSION_ID] === COMPAT_SESSION,
        ),
      ).toEqual([]);

      // The second boundary never got its post: sdk.shutdown() resolved it, and its check span
      // still reached the app's exporter (the processor is registered before the batch processor).
      const pendingPre = spanOf(receiver, SPAN_COMPACTION_PRE, COMPAT_PENDING_SESSION);
      const check = spanOf(receiver, SPAN_CONTINUITY_CHECK, COMPAT_PENDING_SESSION);
      expect(check?.attributes).toMatchObject({
        [ATTR_CONTINUITY_STATE]: 'unverified',
        [ATTR_CONTINUITY_REASON]: 'post_observation_missing',
      });
      expect(check?.traceId).toBe(pendingPre!.traceId);
      expect(check?.links).toEqual([{ traceId: pendingPre!.traceId, spanId: pendingPre!.spanId }]);

      expect(valuesBy(receiver.metrics, METRIC_BOUNDARIES, METRIC_ATTR_STATE)).toEqual({
        preserved: 1,
        unverified: 1,
      });
      // Nothing left pending once shutdown resolved the second boundary.
      expect(valuesBy(receiver.metrics, METRIC_PENDING, METRIC_ATTR_STATE)).toEqual({ undefined: 0 });
      expect(histogramCounts(receiver.metrics, METRIC_REOBSERVATION_DURATION)).toEqual([1]);
    },
    RUN_TIMEOUT,
  );

  it(
    'exports nothing of its own at shutdown when the app has no metric reader, and the README lines that turn the default reader off work',
    async () => {
      // Without metricReaders NodeSDK adds an OTLP metric reader (here aimed at the receiver, so
      // nothing retries). A processor that saw no compaction gives it nothing to export.
      const idle = await runScenario(installed.app, block, 'removed', { COMPAT_COMPACT: '0' });
      expect(idle.receiver.spans.map((s) => s.name)).toContain('agent.turn');
      expect(idle.receiver.metrics).toEqual([]);
      // Control: that default reader exists and exports once continuity has recorded something
      // (against a collector that is down, this is the export that retries for seconds).
      const control = await runScenario(installed.app, block, 'removed');
      expect(continuityMetricNames(control.receiver.metrics)).toContain(METRIC_BOUNDARIES);
      // The two lines the README gives turn it off.
      const none = await runScenario(installed.app, block, 'removed', { OTEL_METRICS_EXPORTER: 'none' });
      expect(
        spanOf(none.receiver, SPAN_COMPACTION_POST, COMPAT_SESSION)?.attributes[ATTR_CONTINUITY_STATE],
      ).toBe('preserved');
      expect(none.receiver.metrics).toEqual([]);
      const empty = await runScenario(installed.app, block, 'empty');
      expect(
        spanOf(empty.receiver, SPAN_COMPACTION_POST, COMPAT_SESSION)?.attributes[ATTR_CONTINUITY_STATE],
      ).toBe('preserved');
      expect(empty.receiver.metrics).toEqual([]);
    },
    RUN_TIMEOUT,
  );

  it(
    "type-checks against the app's own SpanProcessor and NodeSDK types, and the README's blocks as TypeScript, ESM and CommonJS",
    async () => {
      const traceModule = byHand === 'sdk-3.x' ? '@opentelemetry/sdk-trace' : '@opentelemetry/sdk-trace-base';
      const dir = installed.app.dir;
      writeFileSync(
        join(dir, 'check-types.ts'),
        [
          `import type { SpanProcessor } from '${traceModule}';`,
          "import { NodeSDK } from '@opentelemetry/sdk-node';",
          "import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';",
          "import { ContinuityProcessor, continuityProcessors } from 'agent-continuity';",
          'const processor: SpanProcessor = new ContinuityProcessor();',
          'const processors: SpanProcessor[] = continuityProcessors({ exporter: new OTLPTraceExporter() });',
          'export const sdk = new NodeSDK({ spanProcessors: [processor, new ContinuityProcessor(), ...processors] });',
          '',
        ].join('\n'),
      );
      // The README's set-up and extension blocks, verbatim, as a strict ES module; a decision given
      // as a plain value must not type-check (the directive fails when nothing is refused).
      writeFileSync(
        join(dir, 'readme.mts'),
        [
          readmeBlock(SETUP),
          readmeBlock('extension'),
          '// @ts-expect-error: a plain value instead of { value }',
          "await continuity.observePost(sessionId, { target: 'release/2.4' });",
          'export {};',
          '',
        ].join('\n'),
      );
      // The README's CommonJS block, resolved through the package's `require` condition.
      writeFileSync(join(dir, 'tracing.cts'), `${readmeBlock('tracing-cjs')}\nexport {};\n`);
      writeFileSync(
        join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            strict: true,
            module: 'nodenext',
            moduleResolution: 'nodenext',
            target: 'es2022',
            noEmit: true,
            types: ['node'],
            typeRoots: [join(REPO, 'node_modules', '@types')],
            skipLibCheck: true,
          },
          files: ['check-types.ts', 'readme.mts', 'tracing.cts'],
        }),
      );
      const tsc = join(REPO, 'node_modules', 'typescript', 'bin', 'tsc');
      const r = await run(installed.app.node, [tsc, '-p', '.'], { cwd: dir, env: installed.app.env() });
      expect(r.stdout + r.stderr).toBe('');
      expect(r.status).toBe(0);
    },
    RUN_TIMEOUT,
  );

  it(
    'keeps exporting after continuity is added to an app that used traceExporter; the processor alone says so',
    async () => {
      const receiver = await startOtlpReceiver();
      try {
        const env = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_METRICS_EXPORTER: 'none' };
        // Before continuity: traceExporter exports the app's span.
        const before = await runApp(
          installed.app,
          'app-trace-exporter.mjs',
          traceExporterSource('before'),
          env,
        );
        expect(receiver.spans.map((s) => s.name)).toEqual(['agent.turn']);
        expect(before.output.diag).toEqual({ warn: [], error: [] });
        // The migration the issue reported: NodeSDK ignores traceExporter, nothing is exported,
        // and the processor now says so.
        const alone = await runApp(
          installed.app,
          'app-alone.mjs',
          traceExporterSource('processor-alone'),
          env,
        );
        expect(receiver.spans.map((s) => s.name)).toEqual(['agent.turn']);
        expect(alone.output.diag.error).toEqual([]);
        expect(alone.output.diag.warn).toEqual([expect.stringContaining('only span processor')]);
        expect(alone.output.diag.warn[0]).toContain('continuityProcessors({ exporter })');
      } finally {
        await receiver.close();
      }
      // The README's one-liner: the app's span and the compaction spans reach the exporter.
      const { output, receiver: after } = await runScenario(installed.app, SETUP, 'as-written');
      expect(output.diag).toEqual({ warn: [], error: [] });
      expect(output.state).toBe('preserved');
      expect(after.spans.map((s) => s.service)).toEqual(after.spans.map(() => 'my-agent'));
      expect(spanOf(after, SPAN_COMPACTION_POST, COMPAT_SESSION)?.attributes[ATTR_CONTINUITY_STATE]).toBe(
        'preserved',
      );
    },
    RUN_TIMEOUT,
  );

  it(
    "runs under node --require with the README's CommonJS tracing.js, a CommonJS app and an ES module app",
    async () => {
      writeFileSync(join(installed.app.dir, 'tracing.cjs'), readmeBlock('tracing-cjs'));
      for (const [file, sessionId, esm] of [
        ['app.cjs', CJS_SESSION, false],
        ['app-esm.mjs', `${CJS_SESSION}-esm`, true],
      ] as const) {
        const receiver = await startOtlpReceiver();
        try {
          const { output } = await runApp(
            installed.app,
            file,
            cjsAppSource(sessionId, esm),
            { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint },
            ['--require', './tracing.cjs'],
          );
          expect(output.state, file).toBe('preserved');
          expect(output.diag, file).toEqual({ warn: [], error: [] });
          const pre = spanOf(receiver, SPAN_COMPACTION_PRE, sessionId);
          const post = spanOf(receiver, SPAN_COMPACTION_POST, sessionId);
          expect(post?.attributes[ATTR_CONTINUITY_STATE], file).toBe('preserved');
          expect(post?.links, file).toEqual([{ traceId: pre!.traceId, spanId: pre!.spanId }]);
          expect(post?.service, file).toBe('my-agent');
        } finally {
          await receiver.close();
        }
      }
    },
    RUN_TIMEOUT,
  );

  it(
    `runs the by-hand set-up of docs/processor.md (${byHand})`,
    async () => {
      const { output, receiver } = await runScenario(
        installed.app,
        byHand,
        'as-written',
        {},
        'docs/processor.md',
      );
      expect(receiver.errors).toEqual([]);
      expect(output.diag).toEqual({ warn: [], error: [] });
      expect(spanOf(receiver, SPAN_COMPACTION_POST, COMPAT_SESSION)?.attributes[ATTR_CONTINUITY_STATE]).toBe(
        'preserved',
      );
    },
    RUN_TIMEOUT,
  );

  it(
    "runs continuity serve on the app's own metrics SDK",
    async () => {
      const dir = mkdtempSync(join(scratch, 'serve-'));
      const config = join(dir, 'serve.yaml');
      writeFileSync(
        config,
        stringify({
          server: { host: '127.0.0.1', port: 0 },
          downstream: { endpoint: 'http://127.0.0.1:9/v1/traces' },
          state: { dir: join(dir, 'state') },
          log: { level: 'warn' },
        }),
      );
      const serve = await startServe(config, {
        node: installed.app.node,
        bin: join(installed.app.dir, 'node_modules', 'agent-continuity', 'bin', 'continuity.js'),
        cwd: installed.app.dir,
        env: installed.app.env(),
      });
      try {
        expect((await fetchText(serve.addresses.ready)).status).toBe(200);
        const metrics = await fetchText(serve.addresses.metrics);
        expect(metrics.status).toBe(200);
        expect(metrics.body).toContain(PROMETHEUS_NAMES[METRIC_PENDING]);
      } finally {
        await stopChild(serve.child);
      }
      expect(serve.child.proc.exitCode).toBe(0);
    },
    RUN_TIMEOUT,
  );
});

describe('Node 20, sdk-trace-base 2.2.0: an SDK without onEnding', () => {
  let installed: Installed;
  beforeAll(() => {
    installed = apps.get(appKey(PEERS.otel2WithoutOnEnding, 20))!;
  });

  it('installs as one more package: npm ls shows the same OpenTelemetry copies as before', () => {
    expectNoAddedCopy(installed);
  });

  it(
    "runs the README's 2.x lines: one diag.warn naming the minimum version, the state on check spans, the metrics",
    async () => {
      // continuityProcessors finds sdk-trace-base 2.2.0's batch processor (no sdk-trace there).
      const { output, receiver } = await runScenario(installed.app, SETUP, 'as-written');
      expect(receiver.errors).toEqual([]);
      // observePost still tells the agent.
      expect(output.state).toBe('preserved');
      expect(output.diag.error).toEqual([]);
      expect(output.diag.warn).toHaveLength(1);
      expect(output.diag.warn[0]).toContain('does not call SpanProcessor.onEnding');
      expect(output.diag.warn[0]).toContain('@opentelemetry/sdk-trace-base >= 2.3.0');

      const pre = spanOf(receiver, SPAN_COMPACTION_PRE, COMPAT_SESSION)!;
      const post = spanOf(receiver, SPAN_COMPACTION_POST, COMPAT_SESSION)!;
      // The SDK ended the post span before the processor saw it: nothing is written there…
      expect(post.attributes[ATTR_CONTINUITY_STATE]).toBeUndefined();
      // …and the state travels on a check span linked to both.
      const check = spanOf(receiver, SPAN_CONTINUITY_CHECK, COMPAT_SESSION);
      expect(check?.attributes).toMatchObject({
        [ATTR_CONTINUITY_STATE]: 'preserved',
        [ATTR_CONTINUITY_ACTION]: 'continue',
        [ATTR_CONTINUITY_REASON]: 'digest_match_fresh',
      });
      expect(check?.links).toEqual([
        { traceId: pre.traceId, spanId: pre.spanId },
        { traceId: post.traceId, spanId: post.spanId },
      ]);
      expect(
        spanOf(receiver, SPAN_CONTINUITY_CHECK, COMPAT_PENDING_SESSION)?.attributes[ATTR_CONTINUITY_STATE],
      ).toBe('unverified');
      expect(valuesBy(receiver.metrics, METRIC_BOUNDARIES, METRIC_ATTR_STATE)).toEqual({
        preserved: 1,
        unverified: 1,
      });
    },
    RUN_TIMEOUT,
  );
});

describe('Node 20, an app with @opentelemetry/api and no SDK', () => {
  let installed: Installed;
  beforeAll(() => {
    installed = apps.get(appKey(PEERS.otelApiOnly, 20))!;
  });

  it("installs no OpenTelemetry package besides the app's api, and the library imports", async () => {
    expectNoAddedCopy(installed);
    expect(installed.after.map((p) => `${p.name}@${p.version}`)).toEqual(['@opentelemetry/api@1.9.1']);
    const r = await run(
      installed.app.node,
      [
        '--input-type=module',
        '-e',
        "const m = await import('agent-continuity'); console.log(typeof m.ContinuityProcessor, typeof m.createContinuity);",
      ],
      { cwd: installed.app.dir, env: installed.app.env() },
    );
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe('function function');
  });

  it('runs the CLI without the service packages, and `continuity serve` names the command that installs them', async () => {
    const bin = join(installed.app.dir, 'node_modules', '.bin', 'continuity');
    const version = await run(installed.app.node, [bin, '--version'], {
      cwd: installed.app.dir,
      env: installed.app.env(),
    });
    expect(version.stderr).toBe('');
    expect(version.stdout.trim()).toBe(JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')).version);
    const serve = await run(installed.app.node, [bin, 'serve'], {
      cwd: installed.app.dir,
      env: installed.app.env(),
    });
    expect(serve.status).toBe(3);
    expect(serve.stdout).toBe('');
    const lines = serve.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^continuity: serve needs (?:@opentelemetry|@grpc)\/[a-z-]+, which is not installed/,
    );
    expect(lines[0]).toContain(
      'install them: npm install @opentelemetry/resources@^2.12.0 @opentelemetry/sdk-metrics@^2.12.0',
    );
    expect(lines[0]).toMatch(/ @grpc\/grpc-js@\^1\.14\.7$/);
  });
});

describe("the README's code blocks", () => {
  it('are all run here: every <!-- compat --> block of README.md and docs/processor.md has a test', () => {
    expect(blockNames('README.md')).toEqual([SETUP, 'extension', 'tracing-cjs']);
    expect(blockNames('docs/processor.md')).toEqual(['sdk-2.x', 'sdk-3.x']);
  });

  it('leave no JavaScript or TypeScript block of README.md untested: each follows a <!-- compat --> marker', () => {
    const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
    const unmarked = [
      ...readme.matchAll(/(<!-- compat: [a-z0-9.-]+ -->\n)?```(js|mjs|cjs|ts|typescript|javascript)\n/g),
    ]
      .filter((m) => m[1] === undefined)
      .map((m) => `README.md line ${readme.slice(0, m.index).split('\n').length}`);
    expect(unmarked).toEqual([]);
  });
});

async function fetchText(url: string): Promise<{ status: number; body: string }> {
  const r = await fetch(url);
  return { status: r.status, body: await r.text() };
}
