/**
 * Settings of the OTLP/HTTP exporter shared by the Claude Code hooks and the recording commands
 * (`continuity snapshot`, `continuity approve`): where spans go, how they are encoded, how long one
 * attempt may take and which headers it carries. Resolved from, in rising precedence, a
 * configuration file's `export` section, the `CONTINUITY_*` environment variables and a
 * command-line endpoint.
 *
 * The exporter has its own `CONTINUITY_OTLP_*` variables rather than `OTEL_EXPORTER_OTLP_*`: Claude
 * Code removes `OTEL_*` from hook processes, and one set of names serves every recording path.
 *
 * Pure (no I/O, no imports): a bad value never stops a recording; it becomes a warning and the
 * default is used, because an exporter must never break the agent or the command it rides on.
 */

/** Environment variables read by the exporter, defined once. */
export const EXPORT_ENV = {
  /** `off` (or `0`, `false`, `no`, `none`) turns exporting off. */
  export: 'CONTINUITY_EXPORT',
  /** Base URL; `/v1/traces` is appended. */
  otlpEndpoint: 'CONTINUITY_OTLP_ENDPOINT',
  /** Full traces URL, used as is. */
  otlpTracesEndpoint: 'CONTINUITY_OTLP_TRACES_ENDPOINT',
  /** `http/json` or `http/protobuf`. */
  otlpProtocol: 'CONTINUITY_OTLP_PROTOCOL',
  /** Milliseconds per request, 50 to 10000. */
  otlpTimeoutMs: 'CONTINUITY_OTLP_TIMEOUT_MS',
  /** Extra headers, `k=v,k2=v2`. */
  otlpHeaders: 'CONTINUITY_OTLP_HEADERS',
} as const;

/** OTLP/HTTP encodings the exporter can send. */
export const OTLP_EXPORT_PROTOCOLS = ['http/json', 'http/protobuf'] as const;
/** An OTLP/HTTP encoding the exporter can send. */
export type OtlpExportProtocol = (typeof OTLP_EXPORT_PROTOCOLS)[number];

/** Default time allowed for one export attempt, in milliseconds. */
export const DEFAULT_EXPORT_TIMEOUT_MS = 1500;
/** Shortest and longest time accepted for one export attempt, in milliseconds. */
export const EXPORT_TIMEOUT_RANGE_MS = { min: 50, max: 10_000 } as const;

/** Exporter settings, resolved. */
export interface ExportConfig {
  /**
   * Send spans at all. Default true when an endpoint is known (a configured one, or the caller's
   * default); `CONTINUITY_EXPORT=off` turns it off. False, with `tracesUrl` empty, when no endpoint
   * is configured and the caller has no default.
   */
  enabled: boolean;
  /** The full traces URL, e.g. `http://127.0.0.1:4318/v1/traces`; empty when none is configured. */
  tracesUrl: string;
  /** Encoding. Default `http/json` (no protobuf library to load in a short-lived process). */
  protocol: OtlpExportProtocol;
  /** Time allowed for one request, in milliseconds. Default 1500. */
  timeoutMs: number;
  /** Extra HTTP headers (for a collector that wants a token). Default none. */
  headers: Record<string, string>;
}

/** A configuration file's `export` section, unvalidated, and how warnings name it. */
export interface ExportFileSection {
  /** The section as parsed JSON (keys `enabled`, `endpoint`, `tracesEndpoint`, `protocol`, `timeoutMs`, `headers`). */
  values: Readonly<Record<string, unknown>>;
  /** How warnings name the section, e.g. `.continuity/config.json.export`. */
  label: string;
}

/** Where {@link resolveExportConfig} reads from. */
export interface ExportSources {
  /** The environment (`CONTINUITY_EXPORT`, `CONTINUITY_OTLP_*`). */
  env: NodeJS.ProcessEnv;
  /** A configuration file's `export` section. Default none. */
  file?: ExportFileSection;
  /** An endpoint from the command line (base URL, `/v1/traces` appended); wins over everything. Default none. */
  endpointFlag?: { value: string; label: string };
  /**
   * The base URL used when nothing configures one. Default none: then exporting is off unless an
   * endpoint is configured (the recording commands); the Claude Code hooks pass a local
   * `continuity serve`.
   */
  defaultEndpoint?: string;
}

/** A resolved configuration and what was wrong with the input (each already replaced by a default). */
export interface ResolvedExport {
  config: ExportConfig;
  warnings: string[];
}

/** True when `text` is an absolute `http:` or `https:` URL. */
export function isHttpUrl(text: string): boolean {
  try {
    const u = new URL(text);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}

/** The traces URL of an OTLP/HTTP base endpoint: `<base>/v1/traces`. */
export function tracesUrlFrom(base: string): string {
  return `${base.replace(/\/+$/, '')}/v1/traces`;
}

/** Parses `k=v,k2=v2` (entries without `=` or with an empty key are skipped). */
export function parseHeaderList(text: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const part of text.split(',')) {
    const eq = part.indexOf('=');
    if (eq > 0) {
      const key = part.slice(0, eq).trim();
      if (key.length > 0) out.push([key, part.slice(eq + 1).trim()]);
    }
  }
  return out;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Resolves the exporter settings. Endpoints, lowest precedence first: `defaultEndpoint`, the
 * file's `endpoint` then `tracesEndpoint`, `CONTINUITY_OTLP_ENDPOINT`,
 * `CONTINUITY_OTLP_TRACES_ENDPOINT`, `endpointFlag`. A URL that is not http(s) is ignored with a
 * warning. Never throws.
 */
export function resolveExportConfig(sources: ExportSources): ResolvedExport {
  const { env } = sources;
  const file = sources.file?.values ?? {};
  const label = sources.file?.label ?? 'export';
  const warnings: string[] = [];

  let enabled = file.enabled !== false;
  const envExport = env[EXPORT_ENV.export];
  if (envExport !== undefined) enabled = !/^(?:0|off|false|no|none)$/i.test(envExport.trim());

  let tracesUrl = sources.defaultEndpoint !== undefined ? tracesUrlFrom(sources.defaultEndpoint) : '';
  const candidates: Array<[unknown, string, boolean]> = [
    [file.endpoint, `${label}.endpoint`, false],
    [file.tracesEndpoint, `${label}.tracesEndpoint`, true],
    [env[EXPORT_ENV.otlpEndpoint], EXPORT_ENV.otlpEndpoint, false],
    [env[EXPORT_ENV.otlpTracesEndpoint], EXPORT_ENV.otlpTracesEndpoint, true],
    [sources.endpointFlag?.value, sources.endpointFlag?.label ?? '', false],
  ];
  for (const [value, source, full] of candidates) {
    if (value === undefined || value === '') continue;
    if (typeof value === 'string' && isHttpUrl(value)) tracesUrl = full ? value : tracesUrlFrom(value);
    else warnings.push(`${source}: expected an http(s) URL; ignored`);
  }
  if (tracesUrl === '') enabled = false;

  let protocol: OtlpExportProtocol = 'http/json';
  const protoRaw = env[EXPORT_ENV.otlpProtocol] ?? file.protocol;
  if (protoRaw !== undefined) {
    if ((OTLP_EXPORT_PROTOCOLS as readonly unknown[]).includes(protoRaw))
      protocol = protoRaw as OtlpExportProtocol;
    else warnings.push('export protocol: expected http/json or http/protobuf; using http/json');
  }

  let timeoutMs = DEFAULT_EXPORT_TIMEOUT_MS;
  const timeoutRaw = env[EXPORT_ENV.otlpTimeoutMs] ?? file.timeoutMs;
  if (timeoutRaw !== undefined) {
    const n = Number(timeoutRaw);
    const { min, max } = EXPORT_TIMEOUT_RANGE_MS;
    if (Number.isInteger(n) && n >= min && n <= max) timeoutMs = n;
    else
      warnings.push(
        `export timeoutMs: expected an integer from ${min} to ${max}; using ${DEFAULT_EXPORT_TIMEOUT_MS}`,
      );
  }

  const headers: Record<string, string> = {};
  if (isRecord(file.headers)) {
    for (const [k, v] of Object.entries(file.headers)) if (typeof v === 'string') headers[k] = v;
  }
  const envHeaders = env[EXPORT_ENV.otlpHeaders];
  if (envHeaders) for (const [k, v] of parseHeaderList(envHeaders)) headers[k] = v;

  return { config: { enabled, tracesUrl, protocol, timeoutMs, headers }, warnings };
}
