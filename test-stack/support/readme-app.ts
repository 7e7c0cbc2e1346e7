/**
 * The README's Node app for the stack: a fresh app that installs the packed package and the
 * OpenTelemetry 2.x line this repository pins (test/support/peers.ts), and runs the README's own
 * set-up block and extension block (test/compat/apps.ts reads them) for several sessions at once,
 * each inside an agent span `agent.turn`. Over OTLP/HTTP as the README writes it
 * (`exporter-*-otlp-proto`), or over OTLP/gRPC with only the two exporter packages swapped
 * (`exporter-*-otlp-grpc`, the same class names).
 */
import { join } from 'node:path';
import type { App } from '../../test/compat/apps.js';
import {
  createApp,
  installTarball,
  packRepository,
  readmeBlock,
  runApp,
  setupBlock,
} from '../../test/compat/apps.js';
import { PEERS } from '../../test/support/peers.js';

/** The app's dependencies: the pinned 2.x line plus the gRPC exporters of the same release. */
const LINE = {
  id: 'stack-readme-app',
  packages: [
    ...PEERS.otel2Pinned.packages,
    '@opentelemetry/exporter-trace-otlp-grpc@0.223.0',
    '@opentelemetry/exporter-metrics-otlp-grpc@0.223.0',
  ],
};

/** Which transport the README's exporters use. */
export type Transport = 'http' | 'grpc';

/** One session of the app and what its agent restates after compaction. */
export interface AppSession {
  session: string;
  script: 'preserved' | 'conflicting';
}

/** Creates the app in `dir` with the packed package installed. */
export async function createReadmeApp(dir: string): Promise<App> {
  const app = await createApp(dir, LINE, process.execPath);
  await installTarball(app, await packRepository(dir));
  return app;
}

/**
 * The README's extension block for one of the app's sessions: its own example session id gives way
 * to the app's (`sessionId`, declared around it), and its restated `target` is the script's (a
 * conflicting session restates another branch). Every other line is the README's.
 */
function extensionBlock(): string {
  const block = readmeBlock('extension');
  const own = /^const sessionId = .*;\n/m;
  if (!own.test(block)) throw new Error('README.md extension no longer declares its sessionId');
  const target = "target: { value: 'release/2.4' },";
  const at = block.lastIndexOf(target);
  if (at < 0 || at === block.indexOf(target))
    throw new Error('README.md extension no longer restates target');
  const restated =
    block.slice(0, at) +
    "target: { value: s.script === 'conflicting' ? 'main' : 'release/2.4' }," +
    block.slice(at + target.length);
  return restated.replace(own, '');
}

/** The app's source for `transport`: the README's lines, sessions from STACK_SESSIONS. */
export function readmeAppSource(transport: Transport): string {
  // The README names its service `my-agent`; each transport's app is its own service here.
  const named = "serviceName: 'my-agent',";
  let setup = setupBlock('setup', 'as-written');
  if (!setup.includes(named)) throw new Error('README.md setup no longer sets serviceName');
  setup = setup.replace(named, 'serviceName: process.env.OTEL_SERVICE_NAME,');
  if (transport === 'grpc') {
    for (const signal of ['trace', 'metrics']) {
      const proto = `@opentelemetry/exporter-${signal}-otlp-proto`;
      if (!setup.includes(proto)) throw new Error(`README.md setup no longer imports ${proto}`);
      setup = setup.replace(proto, `@opentelemetry/exporter-${signal}-otlp-grpc`);
    }
  }
  return `// Assembled by test-stack/support/readme-app.ts from README.md.
import { trace } from '@opentelemetry/api';

// ---- README.md: set-up ----
${setup}
// ---- end of README.md ----

const sessions = JSON.parse(process.env.STACK_SESSIONS);
const tracer = trace.getTracer('stack-readme-app');
const out = { states: {}, agentSpans: {} };
await Promise.all(
  sessions.map((s) =>
    tracer.startActiveSpan('agent.turn', { attributes: { 'session.id': s.session } }, async (span) => {
      const sessionId = s.session;
      const scope = { repository: 'acme/payments', paths: ['services/ledger'] };
      const branch = 'release/2.4';
      const testCommand = 'npm test -- ledger';
      const decisionsAsTheAgentNowStatesThem = {
        scope: { value: scope },
        target: { value: s.script === 'conflicting' ? 'main' : branch },
        acceptance_test: { value: testCommand },
      };
      // ---- README.md: the extension ----
${extensionBlock()}
      // ---- end of README.md ----
      out.states[sessionId] = state;
      const c = span.spanContext();
      out.agentSpans[sessionId] = [c.traceId, c.spanId];
      span.end();
    }),
  ),
);
await sdk.shutdown();
process.stdout.write(JSON.stringify(out) + '\\n');
`;
}

/** What the app printed. */
export interface AppRun {
  states: Record<string, string>;
  agentSpans: Record<string, [string, string]>;
}

/** Runs the app for `sessions`, exporting to `endpoint` (OTEL_EXPORTER_OTLP_ENDPOINT). */
export async function runReadmeApp(
  app: App,
  transport: Transport,
  endpoint: string,
  sessions: AppSession[],
  stateDir: string,
): Promise<AppRun> {
  const { output } = await runApp(app, `readme-${transport}.mjs`, readmeAppSource(transport), {
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_SERVICE_NAME: `readme-app-${transport}`,
    STACK_SESSIONS: JSON.stringify(sessions),
    XDG_STATE_HOME: join(stateDir, transport),
  });
  return output as unknown as AppRun;
}
