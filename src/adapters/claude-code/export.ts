/**
 * The adapter's binding of the shared exporter (`src/export`): its settings (the configuration
 * file's `export` section and the `CONTINUITY_*` variables, exporting by default to a local
 * `continuity serve`), its spool under the state directory (`claude-code/spool/`) and its
 * `service.name` (`claude-code`). A hook's spans are sent within a short timeout; whatever cannot
 * be delivered is spooled and sent, oldest first, by a later hook run.
 *
 * Loaded only by the recording hooks and `continuity observe`, never by the gate's fast path.
 */
import { type ResolvedExport, resolveExportConfig } from '../../export/config.js';
import { type ExportReport, exportSpans } from '../../export/exporter.js';
import type { ExportSpan } from '../../export/spans.js';
import { type AdapterConfig, DEFAULT_OTLP_ENDPOINT, RUNTIME } from './config.js';
import { spoolDir } from './state.js';

/** The hooks' exporter settings: the file's `export` section, then `CONTINUITY_*`; default a local `continuity serve`. */
export function adapterExportConfig(config: AdapterConfig, env: NodeJS.ProcessEnv): ResolvedExport {
  return resolveExportConfig({ env, file: config.exportFile, defaultEndpoint: DEFAULT_OTLP_ENDPOINT });
}

/**
 * Sends a hook's spans (and, first, what earlier runs spooled) to the configured endpoint;
 * undelivered requests go to the adapter's spool. Never throws; `warn` receives a few lines at most.
 */
export async function exportHookSpans(
  spans: readonly ExportSpan[],
  config: AdapterConfig,
  env: NodeJS.ProcessEnv,
  warn: (line: string) => void,
): Promise<ExportReport> {
  const resolved = adapterExportConfig(config, env);
  if (resolved.warnings.length > 0) warn(`config: ${resolved.warnings.join('; ')}`);
  return exportSpans(spans, resolved.config, { spoolDir: spoolDir(env), serviceName: RUNTIME, warn });
}
