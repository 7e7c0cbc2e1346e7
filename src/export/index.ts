/**
 * The exporter of short-lived recording processes (the Claude Code hooks, `continuity snapshot`,
 * `continuity approve`): spans built by hand as an OTLP trace request, sent best effort over
 * OTLP/HTTP within a short timeout, and spooled (0600 files) when they cannot be delivered.
 * Explicit exports only.
 */
export type {
  ExportConfig,
  ExportFileSection,
  ExportSources,
  OtlpExportProtocol,
  ResolvedExport,
} from './config.js';
export {
  DEFAULT_EXPORT_TIMEOUT_MS,
  EXPORT_ENV,
  EXPORT_TIMEOUT_RANGE_MS,
  isHttpUrl,
  OTLP_EXPORT_PROTOCOLS,
  parseHeaderList,
  resolveExportConfig,
  tracesUrlFrom,
} from './config.js';
export type { ExportOptions, ExportReport, SendResult } from './exporter.js';
export { exportSpans, postOtlp } from './exporter.js';
export type { ExportSpan, SpanIds } from './spans.js';
export {
  boundarySpanIds,
  buildTraceRequest,
  CLI_SERVICE_NAME,
  nowNs,
  randomSpanIds,
  sessionSpanIds,
  timeNs,
} from './spans.js';
export type { SpoolEntry, SpoolExt } from './spool.js';
export { MAX_SPOOL_BYTES, MAX_SPOOL_FILES, spoolEntries, spoolRequest } from './spool.js';
