/**
 * `continuity serve [--config FILE] [--print-config]`: runs the OTLP/HTTP processor service
 * (docs/service.md) until SIGTERM or SIGINT, then shuts down gracefully.
 *
 * On start it prints one JSON line on stdout with the addresses it listens on (useful with port
 * 0), and logs JSON lines on stderr.
 */
import type { Command } from 'commander';
import { loadServiceConfig, redactConfig, SERVICE_DEFAULTS } from '../../service/config.js';
import { ContinuityService } from '../../service/service.js';
import { StateDirLockedError } from '../../service/state.js';
import { EXIT } from '../exit-codes.js';
import { CliError } from '../main.js';

/** Registers `serve`. */
export function registerServe(program: Command): void {
  program
    .command('serve')
    .description(
      'run the OTLP/HTTP processor service: correlate compaction spans, enrich, forward (docs/service.md)',
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
      let service: ContinuityService;
      try {
        service = await ContinuityService.start(config);
      } catch (e) {
        if (e instanceof StateDirLockedError) throw new CliError(e.message, EXIT.environment);
        throw e;
      }
      process.stdout.write(
        `${JSON.stringify({
          otlp: `${service.url}${SERVICE_DEFAULTS.tracesPath}`,
          metrics: `${service.metricsUrl}${SERVICE_DEFAULTS.metricsPath}`,
          health: `${service.metricsUrl}${SERVICE_DEFAULTS.healthPath}`,
          ready: `${service.metricsUrl}${SERVICE_DEFAULTS.readyPath}`,
          pid: process.pid,
        })}\n`,
      );
      await new Promise<void>((resolve) => {
        const stop = (signal: string) => {
          process.off('SIGTERM', onTerm);
          process.off('SIGINT', onInt);
          process.stderr.write(
            `${JSON.stringify({ time: new Date().toISOString(), level: 'info', msg: 'shutting down', signal })}\n`,
          );
          service.stop().then(resolve, resolve);
        };
        const onTerm = () => stop('SIGTERM');
        const onInt = () => stop('SIGINT');
        process.on('SIGTERM', onTerm);
        process.on('SIGINT', onInt);
      });
      // Everything is closed; if a library still holds a handle, do not hang on it.
      setTimeout(() => process.exit(process.exitCode ?? EXIT.ok), 2000).unref();
    });
}
