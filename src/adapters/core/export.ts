/**
 * A runtime adapter's binding of the shared exporter (`src/export`): its settings (the
 * configuration file's `export` section and the `CONTINUITY_*` variables, exporting by default to
 * a local `continuity serve`), its spool under the adapter's state directory (`<runtime>/spool/`)
 * and its `service.name` (the runtime name). A hook's spans are sent within a short timeout;
 * whatever cannot be delivered is spooled and sent, oldest first, by a later hook run. An
 * in-process adapter may set a {@link SpanSink} on the configuration (the application's tracer
 * provider); the exporter then sends only what the sink declines.
 *
 * Loaded only by the recording paths and `continuity observe`, never by the gate's fast path.
 */
import { type ResolvedExport, resolveExportConfig } from '../../export/config.js';
import { type ExportReport, exportSpans } from '../../export/exporter.js';
import type { ExportSpan } from '../../export/spans.js';
import { type AdapterConfig, DEFAULT_OTLP_ENDPOINT, type SpanSink } from './config.js';
import { spoolDir, stateDirOf } from './state.js';

/** The adapter's exporter settings: the file's `export` section, then `CONTINUITY_*`; default a local `continuity serve`. */
export function adapterExportConfig(config: AdapterConfig): ResolvedExport {
  return resolveExportConfig({
    env: config.env.vars,
    file: config.exportFile,
    defaultEndpoint: DEFAULT_OTLP_ENDPOINT,
  });
}

/**
 * Sends spans (and, first, what earlier runs spooled) to the configured endpoint; undelivered
 * requests go to the adapter's spool. Never throws; `warn` receives a few lines at most.
 */
export async function exportAdapterSpans(
  spans: readonly ExportSpan[],
  config: AdapterConfig,
  warn: (line: string) => void,
): Promise<ExportReport> {
  if (config.spanSink && (await handOver(config.spanSink, spans, warn))) {
    return { sent: 1, spooled: 0, flushed: 0, dropped: 0, rejected: 0, lost: 0, waiting: 0 };
  }
  const resolved = adapterExportConfig(config);
  if (resolved.warnings.length > 0) warn(`config: ${resolved.warnings.join('; ')}`);
  const spool = spoolDir(stateDirOf(config.env.stateRoot, config.runtime));
  return exportSpans(spans, resolved.config, { spoolDir: spool, serviceName: config.runtime, warn });
}

/** Gives the spans to the configured sink; false (the exporter takes over) when it declines or fails. */
async function handOver(
  sink: SpanSink,
  spans: readonly ExportSpan[],
  warn: (line: string) => void,
): Promise<boolean> {
  try {
    return (await sink(spans)) === true;
  } catch (e) {
    warn(
      `span sink failed (${(e as Error).message?.split('\n')[0] ?? 'error'}); exporting over OTLP instead`,
    );
    return false;
  }
}
