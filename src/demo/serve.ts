/**
 * `npm run demo -- --serve [--port N]`: the six cases on the continuity page, with nothing else
 * installed. Starts `continuity serve` in this process (loopback, port 4318 unless taken, a
 * throw-away state directory), gives the demo's span pipeline an OTLP/HTTP exporter to it, and
 * keeps serving until Ctrl-C.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ActivityState } from '../decision/model.js';
import { SERVICE_DEFAULTS, ServiceConfigSchema } from '../service/config.js';
import { createLogger } from '../service/log.js';
import { ContinuityService } from '../service/service.js';

/**
 * The activity each demo session reports, by case order: activity is its own dimension, so the
 * page shows, for example, a session that is `working` while its continuity is `conflicting`.
 */
export const DEMO_ACTIVITY: readonly ActivityState[] = [
  'idle',
  'working',
  'working',
  'waiting_human',
  'working',
  'working',
];

/** A running demo service. */
export interface DemoService {
  /** `http://127.0.0.1:port/ui` */
  pageUrl: string;
  /** Exports the demo's spans to the service. */
  spanProcessor: SpanProcessor;
  /** Stops the service and removes its state directory. */
  stop(): Promise<void>;
}

/** Parses `--serve` and `--port N` from the demo's arguments. */
export function parseDemoArgs(argv: readonly string[]): { serve: boolean; port: number } {
  const serve = argv.includes('--serve');
  const i = argv.indexOf('--port');
  const port = i >= 0 ? Number(argv[i + 1]) : SERVICE_DEFAULTS.port;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`--port: expected a port number 0..65535, got ${argv[i + 1] ?? '(nothing)'}`);
  }
  return { serve, port };
}

/** Starts the service on `port` (a free port when it is taken). */
export async function startDemoService(port: number, approverKeyHex: string): Promise<DemoService> {
  const dir = mkdtempSync(join(tmpdir(), 'continuity-demo-'));
  const start = (p: number) =>
    ContinuityService.start(
      // The six cases only: not the ledger the user's own agents write.
      ServiceConfigSchema.parse({
        server: { port: p },
        state: { dir: join(dir, `state-${p}`) },
        ui: { ledger: false },
        // The demo's in-memory approver (./approver.ts), trusted by this service only.
        correlation: { approverKeys: [approverKeyHex] },
      }),
      { logger: createLogger('warn'), env: {} },
    );
  let service: ContinuityService;
  try {
    service = await start(port);
  } catch (e) {
    if (port === 0 || !/in use/.test((e as Error).message)) throw e;
    process.stderr.write(`demo: port ${port} is in use; using a free port\n`);
    service = await start(0);
  }
  const spanProcessor = new BatchSpanProcessor(
    new OTLPTraceExporter({ url: `${service.url}${SERVICE_DEFAULTS.tracesPath}` }),
    { scheduledDelayMillis: 50 },
  );
  return {
    pageUrl: service.uiUrl!,
    spanProcessor,
    stop: async () => {
      await service.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Resolves on the first SIGINT or SIGTERM. */
export function untilSignal(): Promise<string> {
  return new Promise((resolve) => {
    const on = (signal: string) => {
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
      resolve(signal);
    };
    const onInt = () => on('SIGINT');
    const onTerm = () => on('SIGTERM');
    process.on('SIGINT', onInt);
    process.on('SIGTERM', onTerm);
  });
}
