/**
 * The collector configurations in collector-config/: every file parses; every pipeline refers to
 * components that are defined, connectors join a traces pipeline to a metrics pipeline, nothing is
 * defined and left unused; component keys are the ones the collector documents (checked against
 * opentelemetry-collector(-contrib) READMEs and config schemas); and the addresses agree with the
 * service's own defaults, imported from src/service/config.ts, not re-typed.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadServiceConfig, SERVICE_DEFAULTS } from '../../src/service/config.js';
import { expandEnvPlaceholders } from '../support/otelcol-env.js';

const DIR = new URL('../../collector-config/', import.meta.url).pathname;
const COLLECTOR_FILES = readdirSync(DIR).filter((f) => /^otelcol-.*\.yaml$/.test(f));

type Doc = {
  receivers?: Record<string, Record<string, unknown> | null>;
  processors?: Record<string, Record<string, unknown> | null>;
  exporters?: Record<string, Record<string, unknown> | null>;
  connectors?: Record<string, Record<string, unknown> | null>;
  service: {
    pipelines: Record<string, { receivers?: string[]; processors?: string[]; exporters?: string[] }>;
  };
};

/** A shipped configuration with its `${env:NAME:-default}` placeholders at their defaults. */
function load(file: string): Doc {
  return parse(expandEnvPlaceholders(readFileSync(join(DIR, file), 'utf8'))) as Doc;
}

/** `otlp/enriched` → `otlp`. */
const typeOf = (id: string) => id.split('/')[0]!;

/**
 * Top-level keys each component type accepts, from the collector's documentation: receiver otlp
 * and exporters otlp_grpc/otlp_http (opentelemetry-collector READMEs), load_balancing (contrib
 * config.schema.yaml: protocol, resolver, routing_key, routing_attributes, sending_queue, timeout,
 * retry_on_failure), span_metrics (contrib README), prometheus exporter and the two processors.
 * Only the current component names: the deprecated aliases (otlp, otlphttp, loadbalancing,
 * spanmetrics as exporter or connector types) log a warning in current releases.
 */
const KNOWN_KEYS: Record<string, Record<string, readonly string[]>> = {
  receivers: { otlp: ['protocols'] },
  processors: {
    memory_limiter: [
      'check_interval',
      'limit_percentage',
      'spike_limit_percentage',
      'limit_mib',
      'spike_limit_mib',
    ],
    batch: ['send_batch_size', 'send_batch_max_size', 'timeout'],
  },
  exporters: {
    otlp_grpc: ['endpoint', 'tls', 'timeout', 'headers', 'compression', 'retry_on_failure', 'sending_queue'],
    otlp_http: [
      'endpoint',
      'traces_endpoint',
      'metrics_endpoint',
      'logs_endpoint',
      'encoding',
      'compression',
      'tls',
      'headers',
      'timeout',
      'retry_on_failure',
      'sending_queue',
    ],
    load_balancing: [
      'protocol',
      'resolver',
      'routing_key',
      'routing_attributes',
      'sending_queue',
      'timeout',
      'retry_on_failure',
    ],
    prometheus: [
      'endpoint',
      'namespace',
      'const_labels',
      'resource_to_telemetry_conversion',
      'enable_open_metrics',
      'send_timestamps',
      'metric_expiration',
      'add_metric_suffixes',
    ],
  },
  connectors: {
    span_metrics: [
      'histogram',
      'dimensions',
      'exclude_dimensions',
      'dimensions_cache_size',
      'aggregation_temporality',
      'namespace',
      'metrics_flush_interval',
      'exemplars',
    ],
  },
};

function port(endpoint: string): number {
  return Number(/:(\d+)(?:\/|$)/.exec(endpoint)?.[1]);
}

describe('collector configurations', () => {
  it('exist for the gateway and the sidecar (no relay: continuity serve speaks OTLP/gRPC)', () => {
    expect(COLLECTOR_FILES.sort()).toEqual(['otelcol-gateway.yaml', 'otelcol-sidecar.yaml']);
  });

  for (const file of COLLECTOR_FILES) {
    describe(file, () => {
      const doc = load(file);

      it('refers only to defined components, and uses every one it defines', () => {
        const used = new Set<string>();
        for (const [name, p] of Object.entries(doc.service.pipelines)) {
          const signal = name.split('/')[0]!;
          expect(['traces', 'metrics', 'logs'], name).toContain(signal);
          expect(p.receivers?.length, `${name} has receivers`).toBeGreaterThan(0);
          expect(p.exporters?.length, `${name} has exporters`).toBeGreaterThan(0);
          for (const r of p.receivers ?? []) {
            expect(r in (doc.receivers ?? {}) || r in (doc.connectors ?? {}), `${name}: receiver ${r}`).toBe(
              true,
            );
            used.add(`receivers:${r}`);
            used.add(`connectors:${r}`);
          }
          for (const x of p.processors ?? []) {
            expect(x in (doc.processors ?? {}), `${name}: processor ${x}`).toBe(true);
            used.add(`processors:${x}`);
          }
          for (const e of p.exporters ?? []) {
            expect(e in (doc.exporters ?? {}) || e in (doc.connectors ?? {}), `${name}: exporter ${e}`).toBe(
              true,
            );
            used.add(`exporters:${e}`);
            used.add(`connectors:${e}`);
          }
        }
        for (const kind of ['receivers', 'processors', 'exporters', 'connectors'] as const) {
          for (const id of Object.keys(doc[kind] ?? {}))
            expect(used.has(`${kind}:${id}`), `${kind} ${id} unused`).toBe(true);
        }
      });

      it('joins each connector from a traces pipeline to a metrics pipeline', () => {
        for (const c of Object.keys(doc.connectors ?? {})) {
          const asExporter = Object.entries(doc.service.pipelines).filter(([, p]) =>
            p.exporters?.includes(c),
          );
          const asReceiver = Object.entries(doc.service.pipelines).filter(([, p]) =>
            p.receivers?.includes(c),
          );
          expect(
            asExporter.map(([n]) => n.split('/')[0]),
            c,
          ).toEqual(expect.arrayContaining(['traces']));
          expect(
            asReceiver.map(([n]) => n.split('/')[0]),
            c,
          ).toEqual(expect.arrayContaining(['metrics']));
        }
      });

      it('uses only documented configuration keys', () => {
        for (const kind of ['receivers', 'processors', 'exporters', 'connectors'] as const) {
          for (const [id, cfg] of Object.entries(doc[kind] ?? {})) {
            const known = KNOWN_KEYS[kind]![typeOf(id)];
            expect(known, `${kind} ${id}: a component type the test knows`).toBeDefined();
            for (const key of Object.keys(cfg ?? {})) expect(known, `${kind} ${id}.${key}`).toContain(key);
          }
        }
      });
    });
  }

  it('keeps continuity serve on its defaults beside the sidecar', () => {
    // Agents send to the service directly (OTLP/gRPC and OTLP/HTTP), so the sidecar collector
    // listens on neither of its ports.
    const config = loadServiceConfig({ file: join(DIR, 'continuity-serve.yaml'), env: {} });
    expect(config.server.host).toBe(SERVICE_DEFAULTS.host);
    expect(config.server.port).toBe(SERVICE_DEFAULTS.port);
    expect(config.server.grpcPort).toBe(SERVICE_DEFAULTS.grpcPort);
    const sidecar = load('otelcol-sidecar.yaml');
    const ports = Object.values(sidecar.receivers ?? {}).flatMap((r) =>
      Object.values((r as { protocols: Record<string, { endpoint: string }> }).protocols).map((p) =>
        port(p.endpoint),
      ),
    );
    expect(ports).not.toContain(SERVICE_DEFAULTS.port);
    expect(ports).not.toContain(SERVICE_DEFAULTS.grpcPort);
  });

  it('has continuity serve forward to the collector’s otlp/enriched receiver', () => {
    const config = loadServiceConfig({ file: join(DIR, 'continuity-serve.yaml'), env: {} });
    const sidecar = load('otelcol-sidecar.yaml').receivers!['otlp/enriched'] as {
      protocols: { http: { endpoint: string } };
    };
    const gateway = load('otelcol-gateway.yaml').receivers!['otlp/enriched'] as {
      protocols: { http: { endpoint: string } };
    };
    const url = new URL(config.downstream.endpoint!);
    expect(url.pathname).toBe(SERVICE_DEFAULTS.tracesPath);
    expect(Number(url.port)).toBe(port(sidecar.protocols.http.endpoint));
    expect(port(gateway.protocols.http.endpoint)).toBe(port(sidecar.protocols.http.endpoint));
    // Not the service's own port: it must never forward to itself.
    expect(Number(url.port)).not.toBe(SERVICE_DEFAULTS.port);
  });

  it('routes by trace id in the gateway (the default), straight to the instances’ OTLP/gRPC port', () => {
    const lb = load('otelcol-gateway.yaml').exporters!.load_balancing as {
      routing_key?: string;
      routing_attributes?: string[];
      protocol: { otlp: object };
      resolver: { static: { hostnames: string[] } };
    };
    expect(lb.routing_key ?? 'traceID').toBe('traceID');
    expect(lb.routing_attributes).toBeUndefined();
    expect(Object.keys(lb.protocol)).toEqual(['otlp']);
    expect(lb.resolver.static.hostnames.length).toBeGreaterThan(1);
    for (const h of lb.resolver.static.hostnames) expect(port(h)).toBe(SERVICE_DEFAULTS.grpcPort);
  });

  it('uses no deprecated component name', () => {
    for (const file of COLLECTOR_FILES) {
      const doc = load(file);
      const types = [...Object.keys(doc.exporters ?? {}), ...Object.keys(doc.connectors ?? {})].map(typeOf);
      for (const old of ['otlp', 'otlphttp', 'loadbalancing', 'spanmetrics'])
        expect(types, file).not.toContain(old);
    }
  });

  it('matches the Prometheus scrape configuration: the service’s /metrics and the collector’s exporter', () => {
    const prom = parse(readFileSync(join(DIR, 'prometheus', 'prometheus.yml'), 'utf8')) as {
      scrape_configs: Array<{
        job_name: string;
        metrics_path?: string;
        static_configs: Array<{ targets: string[] }>;
      }>;
    };
    const serve = prom.scrape_configs.find((j) => j.job_name === 'continuity-serve')!;
    expect(serve.metrics_path ?? '/metrics').toBe(SERVICE_DEFAULTS.metricsPath);
    for (const t of serve.static_configs.flatMap((s) => s.targets))
      expect(port(t)).toBe(SERVICE_DEFAULTS.port);
    const collector = prom.scrape_configs.find((j) => j.job_name === 'otel-collector')!;
    for (const file of ['otelcol-sidecar.yaml', 'otelcol-gateway.yaml']) {
      const exporter = load(file).exporters!.prometheus as { endpoint: string };
      for (const t of collector.static_configs.flatMap((s) => s.targets))
        expect(port(t), file).toBe(port(exporter.endpoint));
    }
  });
});
