/**
 * A runtime adapter's binding of the shared exporter (`src/export`): its settings (the
 * configuration file's `export` section and the `CONTINUITY_*` variables, exporting by default to
 * a local `continuity serve`), its spool under the adapter's state directory (`<runtime>/spool/`)
 * and its `service.name` (the runtime name). A hook's spans are sent within a short timeout;
 * whatever cannot be delivered is spooled and sent, oldest first, by a later hook run.
 *
 * Loaded only by the recording paths and `continuity observe`, never by the gate's fast path.
 */
import { type ResolvedExport, resolveExportConfig } from '../../export/config.js';
import { type ExportReport, exportSpans } from '../../export/exporter.js';
import type { ExportSpan } from '../../export/spans.js';
import { type AdapterConfig, DEFAULT_OTLP_ENDPOINT } from './config.js';
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
  const resolved = adapterExportConfig(config);
  if (resolved.warnings.length > 0) warn(`config: ${resolved.warnings.join('; ')}`);
  const spool = spoolDir(stateDirOf(config.env.stateRoot, config.runtime));
  return exportSpans(spans, resolved.config, { spoolDir: spool, serviceName: config.runtime, warn });
}
