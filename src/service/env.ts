/**
 * Environment overrides for `continuity serve`: the standard `OTEL_EXPORTER_OTLP_*` variables
 * for the downstream (and the metrics export), and `CONTINUITY_SERVE_*` for the service itself.
 * The environment wins over the YAML file; the schema in `config.ts` validates the result, and
 * problems name the variable that set the value.
 */
import type { InputProblem } from '../decision/problems.js';

/** The service's own environment variables, each with the key path it sets. */
export const SERVICE_ENV = {
  CONTINUITY_SERVE_HOST: 'server.host',
  CONTINUITY_SERVE_PORT: 'server.port',
  CONTINUITY_SERVE_BEARER_TOKEN: 'server.bearerToken',
  CONTINUITY_SERVE_BEARER_TOKEN_FILE: 'server.bearerTokenFile',
  CONTINUITY_SERVE_STATE_DIR: 'state.dir',
  CONTINUITY_SERVE_METRICS_PORT: 'metrics.port',
  CONTINUITY_SERVE_LOG_LEVEL: 'log.level',
  CONTINUITY_SERVE_ALLOWED_HOSTS: 'server.allowedHosts',
  CONTINUITY_SERVE_APPROVER_KEYS: 'correlation.approverKeys',
} as const;

/** Key paths whose environment value is an integer. */
const INTEGER_PATHS = new Set(['server.port', 'metrics.port']);
/** Key paths whose environment value is a comma-separated list. */
const LIST_PATHS = new Set(['server.allowedHosts']);

/** The result of applying the environment to a parsed YAML document. */
export interface EnvOverrides {
  /** A deep copy of the input with the environment's values set. */
  config: Record<string, unknown>;
  /** Key path → the variable that set it, so validation problems can name the variable. */
  origins: Map<string, string>;
  /** Variables whose value could not be read at all (e.g. a malformed header list). */
  problems: InputProblem[];
}

/**
 * Parses an `OTEL_EXPORTER_OTLP_HEADERS` value: `key=value,key2=value2`, percent-encoded as the
 * OpenTelemetry specification says. Returns undefined when an entry has no `=`.
 */
export function parseOtlpHeaders(text: string): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (const part of text.split(',')) {
    if (part.trim() === '') continue;
    const eq = part.indexOf('=');
    if (eq <= 0) return undefined;
    try {
      out[decodeURIComponent(part.slice(0, eq).trim())] = decodeURIComponent(part.slice(eq + 1).trim());
    } catch {
      return undefined;
    }
  }
  return out;
}

/** Appends a signal path to an `OTEL_EXPORTER_OTLP_ENDPOINT` base URL, as the specification says. */
export function signalUrl(base: string, signalPath: '/v1/traces' | '/v1/metrics'): string {
  return base.endsWith('/') ? `${base}${signalPath.slice(1)}` : `${base}${signalPath}`;
}

function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.');
  let node = target;
  for (const key of keys.slice(0, -1)) {
    const next = node[key];
    if (next === null || typeof next !== 'object' || Array.isArray(next)) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[keys[keys.length - 1]!] = value;
}

function getPath(target: Record<string, unknown>, path: string): unknown {
  let node: unknown = target;
  for (const key of path.split('.')) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

/**
 * Applies the environment on top of `raw` (the parsed YAML, not yet validated).
 * Per signal, the signal-specific variable (`OTEL_EXPORTER_OTLP_TRACES_*`) wins over the generic
 * one (`OTEL_EXPORTER_OTLP_*`), which wins over the file.
 */
export function applyEnvOverrides(raw: unknown, env: NodeJS.ProcessEnv): EnvOverrides {
  const config = structuredClone((raw ?? {}) as Record<string, unknown>);
  const origins = new Map<string, string>();
  const problems: InputProblem[] = [];
  const set = (path: string, value: unknown, name: string) => {
    setPath(config, path, value);
    origins.set(path, name);
  };
  const get = (name: string): string | undefined => {
    const v = env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  };

  for (const [name, path] of Object.entries(SERVICE_ENV)) {
    const v = get(name);
    if (v === undefined) continue;
    if (INTEGER_PATHS.has(path)) {
      set(path, /^\d+$/.test(v) ? Number(v) : v, name);
    } else if (LIST_PATHS.has(path)) {
      set(
        path,
        v
          .split(',')
          .map((x) => x.trim())
          .filter((x) => x !== ''),
        name,
      );
    } else {
      set(path, v, name);
    }
    // The environment's token replaces the file's, whichever form the file used.
    if (name === 'CONTINUITY_SERVE_BEARER_TOKEN')
      delete (config.server as Record<string, unknown>).bearerTokenFile;
    if (name === 'CONTINUITY_SERVE_BEARER_TOKEN_FILE')
      delete (config.server as Record<string, unknown>).bearerToken;
  }

  // Endpoints: the signal-specific URL is used as is; the generic base gets the signal path.
  const base = get('OTEL_EXPORTER_OTLP_ENDPOINT');
  const traces = get('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  if (traces !== undefined) set('downstream.endpoint', traces, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  else if (base !== undefined)
    set('downstream.endpoint', signalUrl(base, '/v1/traces'), 'OTEL_EXPORTER_OTLP_ENDPOINT');
  // The service pushes its own metrics over OTLP/HTTP only: a generic `grpc` protocol (and the
  // gRPC base endpoint that comes with it) applies to the span downstream, not to that push.
  const genericGrpc =
    get('OTEL_EXPORTER_OTLP_PROTOCOL') === 'grpc' && get('OTEL_EXPORTER_OTLP_METRICS_PROTOCOL') === undefined;
  const metrics = get('OTEL_EXPORTER_OTLP_METRICS_ENDPOINT');
  if (metrics !== undefined) set('metrics.otlp.endpoint', metrics, 'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT');
  else if (base !== undefined && !genericGrpc)
    set('metrics.otlp.endpoint', signalUrl(base, '/v1/metrics'), 'OTEL_EXPORTER_OTLP_ENDPOINT');

  const perSignal = [
    { signal: 'TRACES', section: 'downstream' },
    { signal: 'METRICS', section: 'metrics.otlp' },
  ] as const;
  for (const { signal, section } of perSignal) {
    const pick = (field: string) => {
      const specific = `OTEL_EXPORTER_OTLP_${signal}_${field}`;
      const generic = `OTEL_EXPORTER_OTLP_${field}`;
      const sv = get(specific);
      if (sv !== undefined) return { name: specific, value: sv };
      const gv = get(generic);
      return gv === undefined ? undefined : { name: generic, value: gv };
    };
    const protocol = pick('PROTOCOL');
    if (protocol && !(section === 'metrics.otlp' && genericGrpc)) {
      set(`${section}.protocol`, protocol.value, protocol.name);
    }
    const timeout = pick('TIMEOUT');
    if (timeout) {
      // The specification gives the timeout in milliseconds.
      set(
        `${section}.timeout`,
        /^\d+$/.test(timeout.value) ? `${timeout.value}ms` : timeout.value,
        timeout.name,
      );
    }
    if (section === 'downstream') {
      const compression = pick('COMPRESSION');
      if (compression) set('downstream.compression', compression.value, compression.name);
    }
    const headers = pick('HEADERS');
    if (headers) {
      const parsed = parseOtlpHeaders(headers.value);
      if (parsed === undefined) {
        problems.push({
          path: `${headers.name} (${section}.headers)`,
          message:
            'expected key=value pairs separated by commas, percent-encoded (e.g. authorization=Bearer%20abc)',
        });
      } else {
        const existing = getPath(config, `${section}.headers`);
        const merged =
          existing && typeof existing === 'object' ? { ...(existing as object), ...parsed } : parsed;
        set(`${section}.headers`, merged, headers.name);
      }
    }
  }

  const interval = get('OTEL_METRIC_EXPORT_INTERVAL');
  if (interval !== undefined)
    set(
      'metrics.otlp.interval',
      /^\d+$/.test(interval) ? `${interval}ms` : interval,
      'OTEL_METRIC_EXPORT_INTERVAL',
    );

  return { config, origins, problems };
}
