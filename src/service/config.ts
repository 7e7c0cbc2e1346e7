/**
 * The configuration of `continuity serve`: one YAML file validated with a schema, environment
 * overrides on top (see `env.ts`), and defaults that work with nothing configured.
 *
 * Precedence: defaults < YAML file < environment. Every problem names the key path (and the
 * environment variable when one set it) and what was expected, so a person can fix it.
 */
import { createPublicKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { PUBLIC_KEY_PATTERN } from '../authority/patterns.js';
import { publicKeyHex } from '../authority/signing.js';
import { formatPath, InputError, type InputProblem } from '../decision/problems.js';
import { defaultStateDir as userStateDir } from '../ledger/state-home.js';
import { UiConfigSchema } from '../ui/config.js';
import { applyEnvOverrides } from './env.js';
import { selfForwardProblem } from './self-forward.js';

/**
 * Fixed paths and default listen address of the service, defined once. The collector
 * configurations in `collector-config/` and their test import these rather than re-typing them.
 */
export const SERVICE_DEFAULTS = {
  /** Loopback only unless configured otherwise. */
  host: '127.0.0.1',
  /** The OTLP/HTTP port, as the OpenTelemetry Collector's otlp receiver uses. */
  port: 4318,
  /** The OTLP/gRPC port (the Collector's); 0 (a free port) when `server.port` is 0. */
  grpcPort: 4317,
  /** OTLP/HTTP traces path (OTLP specification). */
  tracesPath: '/v1/traces',
  /** OTLP/HTTP metrics and logs paths, passed through to the downstream. */
  metricsSignalPath: '/v1/metrics',
  logsPath: '/v1/logs',
  /** Prometheus scrape path, served on the same listener as OTLP unless `metrics.port` is set. */
  metricsPath: '/metrics',
  /** The continuity page, on the listener that serves `/metrics` (see `src/ui/`). */
  uiPath: '/ui',
  /** Liveness: 200 while the process runs. */
  healthPath: '/healthz',
  /** Readiness: 200 once pending state is recovered and while the service accepts spans. */
  readyPath: '/readyz',
  /** Most bytes of one request body, before and after gzip decompression. */
  maxRequestBytes: 20 * 1024 * 1024,
  /** Longest string attribute value accepted on a span, in UTF-16 code units. */
  maxAttributeValueLength: 16 * 1024,
  /** Most attributes on one span. */
  maxAttributesPerSpan: 1024,
  /** Most spans held in the forward queue. */
  queueMaxSpans: 100_000,
  /** Most spans in one downstream export request. */
  maxBatchSpans: 4096,
} as const;

// ── Value types with units ───────────────────────────────────────────────────────────────────

const DURATION_PATTERN = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/;
const DURATION_UNITS_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;

/** Parses `500ms`, `5s`, `1.5m`, `2h` into milliseconds; undefined for anything else. */
export function parseDuration(text: string): number | undefined {
  const m = DURATION_PATTERN.exec(text.trim());
  if (!m) return undefined;
  return Math.round(Number(m[1]) * DURATION_UNITS_MS[m[2] as keyof typeof DURATION_UNITS_MS]);
}

const DURATION_ERROR = 'expected a duration with a unit, e.g. 500ms, 5s, 10m, 1h';
const Duration = z.string({ error: DURATION_ERROR }).transform((s, ctx) => {
  const ms = parseDuration(s);
  if (ms === undefined) {
    ctx.addIssue({ code: 'custom', message: DURATION_ERROR });
    return z.NEVER;
  }
  return ms;
});

const SIZE_PATTERN = /^(\d+)\s*(B|KB|KiB|MB|MiB|GB|GiB)?$/;
const SIZE_UNITS = { B: 1, KB: 1e3, KiB: 1024, MB: 1e6, MiB: 1024 ** 2, GB: 1e9, GiB: 1024 ** 3 } as const;
const SIZE_ERROR = 'expected a size in bytes, e.g. 8388608 or 8MiB, 512KiB, 4MB';

/** Parses a byte size (`8388608`, `8MiB`, `512KiB`, `4MB`); undefined for anything else. */
export function parseByteSize(value: string | number): number | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value > 0 ? value : undefined;
  const m = SIZE_PATTERN.exec(value.trim());
  if (!m) return undefined;
  const n = Number(m[1]) * SIZE_UNITS[(m[2] ?? 'B') as keyof typeof SIZE_UNITS];
  return n > 0 && Number.isSafeInteger(n) ? n : undefined;
}

const ByteSize = z.union([z.number(), z.string()], { error: SIZE_ERROR }).transform((v, ctx) => {
  const n = parseByteSize(v);
  if (n === undefined) {
    ctx.addIssue({ code: 'custom', message: SIZE_ERROR });
    return z.NEVER;
  }
  return n;
});

const Port = z
  .number({ error: 'expected a port number 0..65535 (0 picks a free port)' })
  .int({ error: 'expected a port number 0..65535 (0 picks a free port)' })
  .min(0, { error: 'expected a port number 0..65535 (0 picks a free port)' })
  .max(65535, { error: 'expected a port number 0..65535 (0 picks a free port)' });

const PositiveInt = (what: string) =>
  z
    .number({ error: `expected ${what} (integer >= 1)` })
    .int({ error: `expected ${what} (integer >= 1)` })
    .min(1, { error: `expected ${what} (integer >= 1)` });

const HttpUrl = z.string({ error: 'expected an http:// or https:// URL' }).refine(
  (s) => {
    try {
      const u = new URL(s);
      return u.protocol === 'http:' || u.protocol === 'https:';
    } catch {
      return false;
    }
  },
  { error: 'expected an http:// or https:// URL, e.g. http://127.0.0.1:4319/v1/traces' },
);

/** OTLP protocols the service speaks downstream. */
export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json', 'grpc'] as const;
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];
/** OTLP/HTTP encodings (the service's own metrics push). */
export type OtlpHttpProtocol = Exclude<OtlpProtocol, 'grpc'>;
const Protocol = z.enum(OTLP_PROTOCOLS, { error: 'expected http/protobuf, http/json or grpc' });
const HttpProtocol = z.enum(['http/protobuf', 'http/json'], {
  error: 'expected http/protobuf or http/json (the metrics push speaks OTLP/HTTP)',
});
const Compression = z.enum(['gzip', 'none'], { error: 'expected gzip or none' });
const Headers = z.record(z.string(), z.string({ error: 'expected a header value (string)' }), {
  error: 'expected a map of header name to value',
});
const LogLevel = z.enum(['debug', 'info', 'warn', 'error'], { error: 'expected debug, info, warn or error' });

// ── The schema ───────────────────────────────────────────────────────────────────────────────

const RetrySchema = z.strictObject({
  /** First wait after a retryable failure. Default 1s. */
  initialInterval: Duration.prefault('1s'),
  /** Longest wait between two attempts. Default 30s. */
  maxInterval: Duration.prefault('30s'),
  /** Give up on a batch (counted as dropped, reason `retry_exhausted`) after this long. Default 5m. */
  maxElapsedTime: Duration.prefault('5m'),
  /** Growth of the wait per attempt. Default 2. */
  multiplier: z
    .number({ error: 'expected a number >= 1' })
    .min(1, { error: 'expected a number >= 1' })
    .default(2),
});

const OtlpMetricsSchema = z.strictObject({
  /** OTLP/HTTP metrics URL (full path, e.g. http://collector:4318/v1/metrics). Default: none. */
  endpoint: HttpUrl.optional(),
  /** Default http/protobuf. */
  protocol: HttpProtocol.default('http/protobuf'),
  /** Extra request headers. Default none. */
  headers: Headers.default({}),
  /** Export interval. Default 60s (OTEL_METRIC_EXPORT_INTERVAL). */
  interval: Duration.prefault('60s'),
  /** Export timeout. Default 10s. */
  timeout: Duration.prefault('10s'),
});

/** The configuration file's schema. Every field is optional; defaults are applied here. */
export const ServiceConfigSchema = z.strictObject({
  server: z
    .strictObject({
      /** Listen address. Default 127.0.0.1. */
      host: z.string({ error: 'expected a host name or address' }).min(1).default(SERVICE_DEFAULTS.host),
      /** Listen port. Default 4318; 0 picks a free port (printed on start). */
      port: Port.default(SERVICE_DEFAULTS.port),
      /**
       * OTLP/gRPC listen port (trace, metrics and logs services); `false` turns gRPC off.
       * Default 4317, or 0 (a free port) when `port` is 0.
       */
      grpcPort: z.union([Port, z.literal(false)], { error: 'expected a port number or false' }).optional(),
      /** Most bytes in one request body, before and after decompression (413 above). Default 20MiB (the Collector's). */
      maxRequestBytes: ByteSize.prefault(SERVICE_DEFAULTS.maxRequestBytes),
      /** When set, `/v1/traces` requires `Authorization: Bearer <token>`. Default none. */
      bearerToken: z
        .string({ error: 'expected a token (string)' })
        .min(16, { error: 'expected a token of at least 16 characters' })
        .optional(),
      /** A file holding the bearer token (first line). Default none. */
      bearerTokenFile: z.string({ error: 'expected a file path' }).min(1).optional(),
      /** Headers and body must arrive within this time: slow headers close the connection, a slow body is answered 503 + Retry-After. Default 30s. */
      requestTimeout: Duration.prefault('30s'),
      /**
       * Host names (no port) clients may send in `Host` besides loopback names and IP literals,
       * e.g. the service's DNS name behind a load balancer. Every other `Host` is answered 403 on
       * every endpoint (DNS rebinding: `host-check.ts`). Default none.
       */
      allowedHosts: z
        .array(
          z.string({ error: 'expected a host name' }).regex(/^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})$/, {
            error: 'expected a host name without port or scheme, e.g. continuity-serve',
          }),
          { error: 'expected a list of host names' },
        )
        .default([]),
    })
    .prefault({}),
  limits: z
    .strictObject({
      /** Longest string attribute value on a span; longer spans are rejected. Default 16384. */
      maxAttributeValueLength: PositiveInt('a length').default(SERVICE_DEFAULTS.maxAttributeValueLength),
      /** Most attributes on a span; spans with more are rejected. Default 1024. */
      maxAttributesPerSpan: PositiveInt('a count').default(SERVICE_DEFAULTS.maxAttributesPerSpan),
    })
    .prefault({}),
  downstream: z
    .strictObject({
      /**
       * OTLP/HTTP traces URL the spans are forwarded to (full path), or for `grpc` the server's
       * `http://host:port`. Default none: the service correlates and exports metrics only, and
       * counts every span as dropped (`no_downstream`).
       */
      endpoint: HttpUrl.optional(),
      /**
       * Where metrics and logs received are passed through. Default: `endpoint` with `/v1/traces`
       * replaced by `/v1/metrics` / `/v1/logs` (for `grpc`, the same server).
       */
      metricsEndpoint: HttpUrl.optional(),
      logsEndpoint: HttpUrl.optional(),
      /** Default http/protobuf. */
      protocol: Protocol.default('http/protobuf'),
      /** Extra request headers (e.g. authorization for the next hop). Default none. */
      headers: Headers.default({}),
      /** Default none. */
      compression: Compression.default('none'),
      /** One export attempt's timeout. Default 10s. */
      timeout: Duration.prefault('10s'),
      /** Most spans waiting to be forwarded; above it the receiver answers 429/503. Default 100000. */
      queueMaxSpans: PositiveInt('a span count').default(SERVICE_DEFAULTS.queueMaxSpans),
      /** Most spans in one export request. Default 4096. */
      maxBatchSpans: PositiveInt('a span count').default(SERVICE_DEFAULTS.maxBatchSpans),
      /** Export requests in flight at once. Default 2. */
      concurrency: PositiveInt('a count').default(2),
      retry: RetrySchema.prefault({}),
    })
    .prefault({}),
  correlation: z
    .strictObject({
      /**
       * How long a boundary waits for its post observation, per runtime (`claude-code: 10m`).
       * Runtimes not listed use the correlator's defaults.
       */
      postWindows: z
        .record(z.string().min(1), Duration, { error: 'expected a map of runtime to duration' })
        .default({}),
      /** Most boundaries held pending; the oldest are evicted (and counted) above it. Default: the correlator's. */
      maxPendingBoundaries: PositiveInt('a count').optional(),
      /** How often expired post windows are checked. Default 1s. */
      expireInterval: Duration.prefault('1s'),
      /**
       * The approver public keys an approval must be signed by to count (docs/security.md): each
       * the raw Ed25519 key in 64 hex digits, or the path of a public key PEM file
       * (`continuity key show` prints both). Default none: no approval counts, and every one
       * received is counted as an attempt. Resolved to hex digits when the configuration loads.
       */
      approverKeys: z
        .preprocess(
          (v) =>
            typeof v === 'string'
              ? v
                  .split(',')
                  .map((k) => k.trim())
                  .filter((k) => k.length > 0)
              : v,
          z.array(z.string({ error: 'expected a public key (64 hex digits) or a PEM file path' }).min(1), {
            error: 'expected a list of approver public keys',
          }),
        )
        .default([]),
    })
    .prefault({}),
  state: z
    .strictObject({
      /**
       * Where pending boundaries are kept (journal + snapshot, 0600 files in a 0700 dir).
       * Default `$XDG_STATE_HOME/agent-continuity/serve-<port>` (or `~/.local/state/...`).
       */
      dir: z.string({ error: 'expected a directory path' }).min(1).optional(),
      /** Rewrite the snapshot and start a new journal once the journal is this large. Default 64MiB. */
      compactAfterBytes: ByteSize.prefault(64 * 1024 * 1024),
    })
    .prefault({}),
  metrics: z
    .strictObject({
      /** Serve `/metrics` on its own listener on this port. Default: on the OTLP listener. */
      port: Port.optional(),
      /** Host of the separate metrics listener. Default: `server.host`. */
      host: z.string().min(1).optional(),
      otlp: OtlpMetricsSchema.prefault({}),
    })
    .prefault({}),
  shutdown: z
    .strictObject({
      /** On SIGTERM, how long to keep trying to flush the queue before counting the rest dropped. Default 10s. */
      timeout: Duration.prefault('10s'),
    })
    .prefault({}),
  log: z.strictObject({ level: LogLevel.default('info') }).prefault({}),
  /** The continuity page (`src/ui/config.ts`). */
  ui: UiConfigSchema,
});

/** The validated configuration, durations in milliseconds and sizes in bytes. */
export type ServiceConfig = z.output<typeof ServiceConfigSchema>;
/** What a YAML file may contain (durations as strings, sizes as numbers or strings). */
export type ServiceConfigInput = z.input<typeof ServiceConfigSchema>;

/** Where `loadServiceConfig` reads from. */
export interface LoadConfigOptions {
  /** The YAML file (`--config`). Default none: defaults and environment only. */
  file?: string;
  /** The environment. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
}

/**
 * Reads, merges and validates the configuration. Throws {@link InputError} naming the file (or
 * the environment variable) and each key path that is wrong.
 */
export function loadServiceConfig(options: LoadConfigOptions = {}): ServiceConfig {
  const env = options.env ?? process.env;
  const source = options.file ?? '(defaults)';
  const raw = options.file === undefined ? {} : readYamlFile(options.file);
  const { config: merged, origins, problems: envProblems } = applyEnvOverrides(raw, env);
  if (envProblems.length > 0) throw new InputError('environment', envProblems);
  const parsed = ServiceConfigSchema.safeParse(merged);
  if (!parsed.success) {
    const problems: InputProblem[] = parsed.error.issues.map((issue) => {
      const path = formatPath(issue.path);
      const message =
        issue.code === 'unrecognized_keys'
          ? `unknown key ${JSON.stringify(issue.keys[0])}; remove it or check its spelling (docs/service.md lists every key)`
          : issue.message;
      const fullPath =
        issue.code === 'unrecognized_keys' ? formatPath([...issue.path, issue.keys[0] ?? '']) : path;
      // An item of a list set by a variable (`server.allowedHosts[0]`) names that variable too.
      const envName = origins.get(fullPath) ?? origins.get(fullPath.replace(/\[\d+\]$/, ''));
      return { path: envName ? `${fullPath} (from ${envName})` : fullPath, message };
    });
    throw new InputError(source, problems);
  }
  const config = parsed.data;
  if (config.server.bearerToken !== undefined && config.server.bearerTokenFile !== undefined) {
    throw new InputError(source, [
      {
        path: 'server.bearerTokenFile',
        message: 'set either server.bearerToken or server.bearerTokenFile, not both',
      },
    ]);
  }
  if (config.downstream.retry.initialInterval > config.downstream.retry.maxInterval) {
    throw new InputError(source, [
      {
        path: 'downstream.retry.initialInterval',
        message: 'must not be longer than downstream.retry.maxInterval',
      },
    ]);
  }
  const loop = selfForwardProblem(
    { server: { ...config.server, grpcPort: grpcPortOf(config) }, downstream: config.downstream },
    origins,
    ownAddresses(),
  );
  if (loop) throw new InputError(source, [loop]);
  config.correlation.approverKeys = config.correlation.approverKeys.map((k, i) =>
    approverKeyHex(k, `correlation.approverKeys[${i}]`, source),
  );
  return config;
}

/** This machine's interface addresses (a listener on 0.0.0.0 is reached through any of them). */
function ownAddresses(): string[] {
  try {
    return Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address));
  } catch {
    return [];
  }
}

/** An approver public key as 64 hex digits, from hex or from a PEM file; InputError when neither. */
export function approverKeyHex(value: string, path: string, source: string): string {
  if (PUBLIC_KEY_PATTERN.test(value)) return value;
  let key: KeyObject;
  try {
    key = createPublicKey(readFileSync(value, 'utf8'));
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new InputError(source, [
      {
        path,
        message: code
          ? `cannot read the public key file (${code})`
          : 'not an Ed25519 public key (64 hex digits, or a PEM file as `continuity key show` prints it)',
      },
    ]);
  }
  if (key.asymmetricKeyType !== 'ed25519')
    throw new InputError(source, [
      { path, message: `expected an Ed25519 key, got ${key.asymmetricKeyType}` },
    ]);
  return publicKeyHex(key);
}

function readYamlFile(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? 'error';
    throw new InputError(file, [{ path: '(file)', message: `cannot read the configuration file (${code})` }]);
  }
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new InputError(
      file,
      doc.errors.map((e) => ({
        path: e.linePos ? `line ${e.linePos[0].line}` : '(root)',
        message: `invalid YAML: ${e.message.split('\n')[0]}`,
      })),
    );
  }
  let value: unknown;
  try {
    // yaml refuses documents whose aliases expand past maxAliasCount (an "alias bomb").
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (e) {
    throw new InputError(file, [
      {
        path: '(aliases)',
        message: `invalid YAML: ${(e as Error).message.split('\n')[0]} (aliases may expand at most 100 times)`,
      },
    ]);
  }
  if (value === null || value === undefined) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new InputError(file, [
      { path: '(root)', message: 'expected a YAML mapping of sections (server:, downstream:, ...)' },
    ]);
  }
  return value;
}

/**
 * The default state directory for a service listening on `port`: `serve-<port>`, so a restart on
 * the same port finds its pending boundaries. With `port` 0 (a free port picked at start) no later
 * instance could be the same one, so each instance gets its own `serve-ephemeral-<pid>`: two
 * port-0 instances never share (or fight over) one directory.
 */
export function defaultStateDir(
  port: number,
  env: NodeJS.ProcessEnv = process.env,
  pid: number = process.pid,
): string {
  // The ledger's state home: a relative XDG_STATE_HOME or HOME is ignored, never the working directory.
  return join(userStateDir(env), port === 0 ? `serve-ephemeral-${pid}` : `serve-${port}`);
}

/** The OTLP/gRPC port to bind: `server.grpcPort`, else 4317, or 0 when `server.port` is 0; false: off. */
export function grpcPortOf(config: ServiceConfig): number | false {
  if (config.server.grpcPort !== undefined) return config.server.grpcPort;
  return config.server.port === 0 ? 0 : SERVICE_DEFAULTS.grpcPort;
}

/**
 * Where metrics or logs are passed through: the configured endpoint, else the traces endpoint with
 * `/v1/traces` swapped for the signal's path (for gRPC the same server); undefined without one.
 */
export function passthroughEndpoint(config: ServiceConfig, signal: 'metrics' | 'logs'): string | undefined {
  const set = signal === 'metrics' ? config.downstream.metricsEndpoint : config.downstream.logsEndpoint;
  if (set !== undefined) return set;
  const traces = config.downstream.endpoint;
  if (traces === undefined) return undefined;
  if (config.downstream.protocol === 'grpc') return traces;
  const path = signal === 'metrics' ? SERVICE_DEFAULTS.metricsSignalPath : SERVICE_DEFAULTS.logsPath;
  const url = new URL(traces);
  url.pathname = url.pathname.endsWith(SERVICE_DEFAULTS.tracesPath)
    ? url.pathname.slice(0, -SERVICE_DEFAULTS.tracesPath.length) + path
    : url.pathname.replace(/\/$/, '') + path;
  return url.toString();
}

/** Reads the bearer token from the configuration (inline or file). Undefined when none is set. */
export function resolveBearerToken(config: ServiceConfig): string | undefined {
  if (config.server.bearerToken !== undefined) return config.server.bearerToken;
  const file = config.server.bearerTokenFile;
  if (file === undefined) return undefined;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? 'error';
    throw new InputError(file, [
      { path: 'server.bearerTokenFile', message: `cannot read the token file (${code})` },
    ]);
  }
  const token = text.split('\n')[0]!.trim();
  if (token.length < 16) {
    throw new InputError(file, [
      {
        path: 'server.bearerTokenFile',
        message: 'the token file must hold a token of at least 16 characters on its first line',
      },
    ]);
  }
  return token;
}

/**
 * An endpoint URL safe to print: user info and query values replaced, since some backends take
 * credentials there (`https://user:key@host/…`, `…?api-key=…`). Text that is not a URL is
 * returned unchanged (it cannot carry either).
 */
export function redactUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return url;
  }
  // A plain word: URL encoding would turn '(redacted)' into %28redacted%29 in the query.
  if (u.username) u.username = 'redacted';
  if (u.password) u.password = 'redacted';
  for (const key of [...u.searchParams.keys()]) u.searchParams.set(key, 'redacted');
  return u.toString();
}

/** The configuration with secrets replaced, for `--print-config` and logs. */
export function redactConfig(config: ServiceConfig): unknown {
  const redactHeaders = (h: Record<string, string>) =>
    Object.fromEntries(Object.keys(h).map((k) => [k, '(redacted)']));
  return {
    ...config,
    server: {
      ...config.server,
      bearerToken: config.server.bearerToken === undefined ? undefined : '(redacted)',
    },
    downstream: {
      ...config.downstream,
      endpoint: redactOptionalUrl(config.downstream.endpoint),
      headers: redactHeaders(config.downstream.headers),
    },
    metrics: {
      ...config.metrics,
      otlp: {
        ...config.metrics.otlp,
        endpoint: redactOptionalUrl(config.metrics.otlp.endpoint),
        headers: redactHeaders(config.metrics.otlp.headers),
      },
    },
  };
}

function redactOptionalUrl(url: string | undefined): string | undefined {
  return url === undefined ? undefined : redactUrl(url);
}
