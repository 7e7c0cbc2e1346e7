/**
 * `npm run demo -- --serve [--port N] [--approver-key FILE]`: the six cases on the continuity page,
 * with nothing else installed. Starts `continuity serve` in this process (loopback, port 4318
 * unless taken, a throw-away state directory), gives the demo's span pipeline an OTLP/HTTP
 * exporter to it, and keeps serving until Ctrl-C. The service trusts the demo's in-memory approver
 * and the user's own approver key (`--approver-key`, else the key store's public key), so the
 * page's signed approval call, run by the user, resolves the demo's conflict.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { approverDir, keyStoreFiles } from '../authority/key-store.js';
import { keyIdOfHex } from '../authority/signing.js';
import type { ActivityState } from '../decision/model.js';
import { InputError } from '../decision/problems.js';
import { approverKeyHex, SERVICE_DEFAULTS, ServiceConfigSchema } from '../service/config.js';
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

/** Where a bad demo argument is reported from (exit 2, one line). */
const DEMO_ARGS = 'demo arguments';

/** The demo's arguments. */
export interface DemoArgs {
  serve: boolean;
  port: number;
  /** `--approver-key FILE` (repeatable): public keys (PEM files or 64 hex digits) the service trusts. */
  approverKeys: string[];
}

/** Parses `--serve`, `--port N` and `--approver-key FILE` from the demo's arguments. */
export function parseDemoArgs(argv: readonly string[]): DemoArgs {
  const serve = argv.includes('--serve');
  const i = argv.indexOf('--port');
  const port = i >= 0 ? Number(argv[i + 1]) : SERVICE_DEFAULTS.port;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new InputError(DEMO_ARGS, [
      { path: '--port', message: `expected a port number 0..65535, got ${argv[i + 1] ?? '(nothing)'}` },
    ]);
  }
  const approverKeys: string[] = [];
  argv.forEach((a, j) => {
    if (a !== '--approver-key') return;
    const file = argv[j + 1];
    if (file === undefined || file.startsWith('--'))
      throw new InputError(DEMO_ARGS, [
        { path: '--approver-key', message: 'expected the path of a public key file (`continuity key show`)' },
      ]);
    approverKeys.push(file);
  });
  return { serve, port, approverKeys };
}

/** An approver key the demo's service trusts, and where it came from (printed by the demo). */
export interface TrustedKey {
  hex: string;
  keyId: string;
  from: string;
}

/**
 * The approver keys the demo's service trusts besides the demo's own in-memory one: each
 * `--approver-key`, else the public key of the user's own key store (`continuity key init`) when
 * there is one, so an approval the page's call signs with the user's key counts in the demo.
 * A public key only: the private key and its passphrase stay in the user's key store.
 */
export function userApproverKeys(args: DemoArgs, env: NodeJS.ProcessEnv): TrustedKey[] {
  const trusted = (value: string, i: number, from: string): TrustedKey => {
    const hex = approverKeyHex(value, `--approver-key[${i}]`, DEMO_ARGS);
    return { hex, keyId: keyIdOfHex(hex), from };
  };
  if (args.approverKeys.length > 0) return args.approverKeys.map((k, i) => trusted(k, i, '--approver-key'));
  const own = keyStoreFiles(approverDir(env)).publicKey;
  return existsSync(own) ? [trusted(own, 0, 'your key store (continuity key init)')] : [];
}

/** Starts the service on `port` (a free port when it is taken), trusting `approverKeys` (hex). */
export async function startDemoService(port: number, approverKeys: readonly string[]): Promise<DemoService> {
  const dir = mkdtempSync(join(tmpdir(), 'continuity-demo-'));
  const start = (p: number) =>
    ContinuityService.start(
      // The six cases only: not the ledger the user's own agents write.
      ServiceConfigSchema.parse({
        server: { port: p },
        state: { dir: join(dir, `state-${p}`) },
        ui: { ledger: false },
        // The demo's in-memory approver (./approver.ts), and the user's keys (userApproverKeys).
        correlation: { approverKeys: [...approverKeys] },
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
