/**
 * `continuity serve [--config FILE] [--print-config]`: runs the OTLP (HTTP and gRPC) processor service
 * (docs/service.md) until SIGTERM or SIGINT, then shuts down gracefully.
 *
 * On start it prints one JSON line on stdout with the addresses it listens on (useful with port
 * 0), and logs JSON lines on stderr.
 *
 * The service (and what it runs on: the OpenTelemetry metrics SDK and @grpc/grpc-js, optional peers
 * of the package) is imported only when `serve` runs: every other command works without them.
 */
import type { Command } from 'commander';
import { loadServiceConfig, redactConfig, SERVICE_DEFAULTS } from '../../service/config.js';
import {
  applyRuntimeHeapFloor,
  commandLineHeapFloor,
  HEAP_FLOOR_ENV,
  heapFloorMb,
} from '../../service/heap-floor.js';
import type { ContinuityService } from '../../service/service.js';
import { StateDirLockedError } from '../../service/state-lock.js';
import { CliError, EXIT } from '../exit-codes.js';

/** Registers `serve`. */
export function registerServe(program: Command): void {
  program
    .command('serve')
    .description(
      'run the OTLP processor service (HTTP and gRPC): correlate compaction spans, enrich, forward (docs/service.md)',
    )
    .option(
      '--config <file>',
      'YAML configuration file (keys in docs/service.md); environment overrides apply',
    )
    .option('--print-config', 'print the resolved configuration (secrets redacted) as JSON and exit')
    .action(async (opts: { config?: string; printConfig?: boolean }) => {
      const config = loadServiceConfig(opts.config === undefined ? {} : { file: opts.config });
      if (opts.printConfig) {
        process.stdout.write(`${JSON.stringify(redactConfig(config), null, 2)}\n`);
        return;
      }
      const { ContinuityService } = await importService();
      // The floor under V8's heap limit: bin/continuity.js put it on the command line where Node
      // can re-execute in place (22.15 and later); elsewhere it is applied from inside.
      const floorMb = heapFloorMb(process.env[HEAP_FLOOR_ENV]);
      if (floorMb === undefined) {
        throw new CliError(
          `${HEAP_FLOOR_ENV}: expected a whole number of MiB from 0 (no floor) to 1048576, e.g. 128`,
          EXIT.badInput,
        );
      }
      if (!commandLineHeapFloor(process.execArgv)) applyRuntimeHeapFloor(floorMb);
      // The signal handlers go in before the service starts, so before the address line: a
      // supervisor may send SIGTERM as soon as it reads the line. Measured with a bare Node
      // script: with process.on('SIGTERM') right after the line is written, a SIGTERM sent on
      // reading it killed the process 8 times in 30 (setting up Node's first signal handler is
      // slower than the reader); with it before the line, 0 in 30.
      let service: ContinuityService | undefined;
      let signalled: string | undefined;
      let stopped!: () => void;
      const done = new Promise<void>((resolve) => {
        stopped = resolve;
      });
      const unlisten = () => {
        process.off('SIGTERM', onTerm);
        process.off('SIGINT', onInt);
      };
      const stop = (signal: string) => {
        // A second signal, with no handler left, ends the process at once (Ctrl-C twice).
        unlisten();
        signalled = signal;
        process.stderr.write(
          `${JSON.stringify({ time: new Date().toISOString(), level: 'info', msg: 'shutting down', signal })}\n`,
        );
        // During the start, the stop waits for it (below).
        if (service) service.stop().then(stopped, stopped);
      };
      const onTerm = () => stop('SIGTERM');
      const onInt = () => stop('SIGINT');
      process.on('SIGTERM', onTerm);
      process.on('SIGINT', onInt);
      try {
        service = await ContinuityService.start(config);
      } catch (e) {
        unlisten();
        if (e instanceof StateDirLockedError) throw new CliError(e.message, EXIT.environment);
        throw e;
      }
      if (signalled !== undefined) service.stop().then(stopped, stopped);
      else {
        process.stdout.write(
          `${JSON.stringify({
            otlp: `${service.url}${SERVICE_DEFAULTS.tracesPath}`,
            ...(service.grpcAddress !== undefined && { grpc: service.grpcAddress }),
            metrics: `${service.metricsUrl}${SERVICE_DEFAULTS.metricsPath}`,
            health: `${service.metricsUrl}${SERVICE_DEFAULTS.healthPath}`,
            ready: `${service.metricsUrl}${SERVICE_DEFAULTS.readyPath}`,
            ...(service.uiUrl && { ui: service.uiUrl }),
            pid: process.pid,
          })}\n`,
        );
      }
      await done;
      // Everything is closed; if a library still holds a handle (a metrics export cut at the
      // shutdown deadline keeps retrying), do not let it stretch the stop past shutdown.timeout.
      setTimeout(() => process.exit(process.exitCode ?? EXIT.ok), 100).unref();
    });
}

/**
 * The packages `continuity serve` runs on: optional peer dependencies of agent-continuity (an app
 * that only uses the processor never installs or loads them), with the release lines it is tested
 * on. @grpc/grpc-js (the OTLP/gRPC receiver and downstream) is a peer too: the OpenTelemetry gRPC
 * exporters an app may have bring the same copy.
 */
export const SERVICE_PEERS = Object.freeze([
  '@opentelemetry/resources',
  '@opentelemetry/sdk-metrics',
  '@opentelemetry/exporter-prometheus',
  '@opentelemetry/exporter-metrics-otlp-http',
  '@opentelemetry/exporter-metrics-otlp-proto',
  '@grpc/grpc-js',
] as const);

/** The @grpc/grpc-js release line the service is tested on (the same on every Node). */
const GRPC_JS_LINE = '^1.14.7';

/** The `npm install` line for the service's packages on this Node (the 3.x line needs Node >= 22.15). */
export function servicePeersInstallCommand(nodeVersion = process.versions.node): string {
  const [major = 0, minor = 0] = nodeVersion.split('.').map(Number);
  const line3 = major > 22 || (major === 22 && minor >= 15);
  const version = (name: string) => {
    if (name === '@grpc/grpc-js') return GRPC_JS_LINE;
    if (name.includes('exporter-')) return line3 ? '^0.301.0' : '^0.223.0';
    return line3 ? '^3.1.0' : '^2.12.0';
  };
  return `npm install ${SERVICE_PEERS.map((p) => `${p}@${version(p)}`).join(' ')}`;
}

/** Imports the service; a missing peer package becomes one line naming the install command. */
async function importService(): Promise<typeof import('../../service/service.js')> {
  try {
    return await import('../../service/service.js');
  } catch (e) {
    const missing = /Cannot find (?:package|module) '((?:@opentelemetry|@grpc)\/[^/']+)/.exec(
      (e as Error).message ?? '',
    );
    if ((e as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND' && missing) {
      throw new CliError(
        `serve needs ${missing[1]}, which is not installed (the service's packages are optional peer dependencies); install them: ${servicePeersInstallCommand()}`,
        EXIT.environment,
      );
    }
    throw e;
  }
}
