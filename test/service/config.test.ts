/**
 * The configuration of `continuity serve`: defaults, the YAML file, environment overrides (the
 * standard OTEL_EXPORTER_OTLP_* for the downstream), and errors that name the key path.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/decision/problems.js';
import {
  defaultStateDir,
  loadServiceConfig,
  parseByteSize,
  parseDuration,
  redactConfig,
  redactUrl,
  SERVICE_DEFAULTS,
} from '../../src/service/config.js';
import { parseOtlpHeaders, signalUrl } from '../../src/service/env.js';
import { tempDir } from './harness.js';

function yamlFile(text: string): string {
  const file = join(tempDir('serve-config-'), 'serve.yaml');
  writeFileSync(file, text);
  return file;
}

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (e) {
    if (e instanceof InputError) return e.problems.map((p) => `${p.path}: ${p.message}`);
    throw e;
  }
  throw new Error('expected an InputError');
}

describe('service configuration', () => {
  describe('defaults', () => {
    it('listens on 127.0.0.1:4318 with no file and no environment', () => {
      const c = loadServiceConfig({ env: {} });
      expect(c.server).toMatchObject({ host: '127.0.0.1', port: 4318, maxRequestBytes: 20 * 1024 * 1024 });
      expect(c.server.host).toBe(SERVICE_DEFAULTS.host);
      expect(c.server.bearerToken).toBeUndefined();
      expect(c.downstream.endpoint).toBeUndefined();
      expect(c.downstream).toMatchObject({ protocol: 'http/protobuf', compression: 'none', timeout: 10_000 });
      expect(c.downstream.retry).toEqual({
        initialInterval: 1000,
        maxInterval: 30_000,
        maxElapsedTime: 300_000,
        multiplier: 2,
      });
      expect(c.metrics.port).toBeUndefined();
      expect(c.metrics.otlp.endpoint).toBeUndefined();
      expect(c.correlation.postWindows).toEqual({});
    });

    it('keeps state per port under XDG_STATE_HOME', () => {
      expect(defaultStateDir(4318, { XDG_STATE_HOME: '/var/lib/x' })).toBe(
        '/var/lib/x/agent-continuity/serve-4318',
      );
    });

    it('keeps state under the HOME it is given, and never under the working directory for a relative HOME or XDG_STATE_HOME', () => {
      expect(defaultStateDir(4318, { HOME: '/home/someone' })).toBe(
        '/home/someone/.local/state/agent-continuity/serve-4318',
      );
      for (const env of [{ HOME: 'relative/home' }, { HOME: '/home/someone', XDG_STATE_HOME: 'state' }]) {
        const dir = defaultStateDir(4318, env);
        expect(isAbsolute(dir), dir).toBe(true);
        expect(dir.startsWith(process.cwd()), dir).toBe(false);
        expect(dir.endsWith('/agent-continuity/serve-4318')).toBe(true);
      }
    });
  });

  describe('the YAML file', () => {
    it('reads durations, sizes and per-runtime post windows', () => {
      const file = yamlFile(
        [
          'server: { port: 14318, maxRequestBytes: 2MiB, bearerToken: "0123456789abcdef0123" }',
          'downstream:',
          '  endpoint: http://collector:4318/v1/traces',
          '  retry: { initialInterval: 250ms, maxElapsedTime: 2m }',
          'correlation:',
          '  postWindows: { claude-code: 20m, my-runtime: 90s }',
        ].join('\n'),
      );
      const c = loadServiceConfig({ file, env: {} });
      expect(c.server.port).toBe(14318);
      expect(c.server.maxRequestBytes).toBe(2 * 1024 * 1024);
      expect(c.downstream.retry.initialInterval).toBe(250);
      expect(c.downstream.retry.maxElapsedTime).toBe(120_000);
      expect(c.correlation.postWindows).toEqual({ 'claude-code': 1_200_000, 'my-runtime': 90_000 });
    });

    it('names the key path of every wrong value', () => {
      const file = yamlFile(
        [
          'server: { port: 99999, prot: 1 }',
          'downstream:',
          '  queueMaxSpans: -3',
          '  retry: { initialInterval: 5 }',
          '  protocol: thrift',
          'correlation: { postWindows: { sdk: soon } }',
        ].join('\n'),
      );
      const problems = problemsOf(() => loadServiceConfig({ file, env: {} }));
      expect(problems).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^server\.port: expected a port number/),
          expect.stringMatching(/^server\.prot: unknown key "prot"/),
          expect.stringMatching(/^downstream\.queueMaxSpans: expected a span count/),
          expect.stringMatching(/^downstream\.retry\.initialInterval: expected a duration with a unit/),
          expect.stringMatching(/^downstream\.protocol: expected http\/protobuf, http\/json or grpc/),
          expect.stringMatching(/^correlation\.postWindows\.sdk: expected a duration/),
        ]),
      );
    });

    it('names the file and the line of a YAML syntax error', () => {
      const file = yamlFile('server:\n  port: [\n');
      expect(() => loadServiceConfig({ file, env: {} })).toThrow(/serve\.yaml: line \d+: invalid YAML/);
    });

    it('refuses an unreadable file and a document that is not a mapping', () => {
      expect(() => loadServiceConfig({ file: '/nonexistent/serve.yaml', env: {} })).toThrow(
        /cannot read the configuration file \(ENOENT\)/,
      );
      expect(() => loadServiceConfig({ file: yamlFile('- a\n- b\n'), env: {} })).toThrow(
        /expected a YAML mapping/,
      );
    });

    it('refuses contradictions: two token sources, an initial retry interval above the maximum', () => {
      const two = yamlFile('server: { bearerToken: "0123456789abcdef", bearerTokenFile: /tmp/t }');
      expect(() => loadServiceConfig({ file: two, env: {} })).toThrow(/server\.bearerTokenFile: set either/);
      const retry = yamlFile('downstream: { retry: { initialInterval: 1m, maxInterval: 1s } }');
      expect(() => loadServiceConfig({ file: retry, env: {} })).toThrow(
        /downstream\.retry\.initialInterval: must not be longer/,
      );
    });
  });

  describe('environment overrides', () => {
    it('takes the downstream from OTEL_EXPORTER_OTLP_ENDPOINT with the signal path appended', () => {
      const c = loadServiceConfig({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' } });
      expect(c.downstream.endpoint).toBe('http://collector:4318/v1/traces');
      expect(c.metrics.otlp.endpoint).toBe('http://collector:4318/v1/metrics');
    });

    it('lets the signal-specific variables win over the generic ones, and both over the file', () => {
      const file = yamlFile('downstream: { endpoint: http://from-file:4318/v1/traces, protocol: http/json }');
      const c = loadServiceConfig({
        file,
        env: {
          OTEL_EXPORTER_OTLP_ENDPOINT: 'http://generic:4318/',
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces:9999/custom',
          OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
          OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf',
          OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20abc,x-tenant=t1',
          OTEL_EXPORTER_OTLP_TRACES_COMPRESSION: 'gzip',
          OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '2500',
        },
      });
      expect(c.downstream).toMatchObject({
        endpoint: 'http://traces:9999/custom',
        protocol: 'http/protobuf',
        compression: 'gzip',
        timeout: 2500,
        headers: { authorization: 'Bearer abc', 'x-tenant': 't1' },
      });
      expect(c.metrics.otlp.endpoint).toBe('http://generic:4318/v1/metrics');
      expect(c.metrics.otlp.protocol).toBe('http/json');
    });

    it('sets the listener, token and state directory from CONTINUITY_SERVE_*', () => {
      const file = yamlFile('server: { bearerTokenFile: /run/secrets/token }');
      const c = loadServiceConfig({
        file,
        env: {
          CONTINUITY_SERVE_HOST: '0.0.0.0',
          CONTINUITY_SERVE_PORT: '4400',
          CONTINUITY_SERVE_BEARER_TOKEN: 'abcdefghijklmnopqrstuvwxyz',
          CONTINUITY_SERVE_STATE_DIR: '/srv/state',
          CONTINUITY_SERVE_METRICS_PORT: '9464',
        },
      });
      expect(c.server).toMatchObject({
        host: '0.0.0.0',
        port: 4400,
        bearerToken: 'abcdefghijklmnopqrstuvwxyz',
      });
      expect(c.server.bearerTokenFile).toBeUndefined();
      expect(c.state.dir).toBe('/srv/state');
      expect(c.metrics.port).toBe(9464);
    });

    it('names the variable behind a wrong value', () => {
      expect(problemsOf(() => loadServiceConfig({ env: { OTEL_EXPORTER_OTLP_PROTOCOL: 'thrift' } }))).toEqual(
        [
          expect.stringMatching(
            /^downstream\.protocol \(from OTEL_EXPORTER_OTLP_PROTOCOL\): expected http\/protobuf, http\/json or grpc/,
          ),
          // The generic variable applies to both signals, so the metrics export is named too.
          expect.stringMatching(/^metrics\.otlp\.protocol \(from OTEL_EXPORTER_OTLP_PROTOCOL\)/),
        ],
      );
      // grpc is for the span downstream; the service's own metrics push stays OTLP/HTTP.
      const grpc = loadServiceConfig({
        env: { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4317' },
      });
      expect(grpc.downstream.protocol).toBe('grpc');
      expect(grpc.metrics.otlp.endpoint).toBeUndefined();
      expect(grpc.metrics.otlp.protocol).toBe('http/protobuf');
      expect(problemsOf(() => loadServiceConfig({ env: { CONTINUITY_SERVE_PORT: 'eighty' } }))).toEqual([
        expect.stringMatching(/^server\.port \(from CONTINUITY_SERVE_PORT\): expected a port number/),
      ]);
      expect(
        problemsOf(() =>
          loadServiceConfig({ env: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'collector:4318' } }),
        ),
      ).toEqual([
        expect.stringMatching(
          /^downstream\.endpoint \(from OTEL_EXPORTER_OTLP_TRACES_ENDPOINT\): expected an http/,
        ),
      ]);
      expect(() => loadServiceConfig({ env: { OTEL_EXPORTER_OTLP_HEADERS: 'no-equals-sign' } })).toThrow(
        /environment: OTEL_EXPORTER_OTLP_HEADERS \(downstream\.headers\): expected key=value pairs/,
      );
    });
  });

  describe('value parsers', () => {
    it('reads durations and sizes with units only', () => {
      expect(parseDuration('500ms')).toBe(500);
      expect(parseDuration('1.5m')).toBe(90_000);
      expect(parseDuration('2h')).toBe(7_200_000);
      expect(parseDuration('10')).toBeUndefined();
      expect(parseDuration('-1s')).toBeUndefined();
      expect(parseByteSize('8MiB')).toBe(8 * 1024 * 1024);
      expect(parseByteSize('4MB')).toBe(4_000_000);
      expect(parseByteSize(1024)).toBe(1024);
      expect(parseByteSize('0')).toBeUndefined();
      expect(parseByteSize('lots')).toBeUndefined();
    });

    it('reads OTLP header lists and signal URLs as the specification says', () => {
      expect(parseOtlpHeaders('a=1, b = two%20words ,')).toEqual({ a: '1', b: 'two words' });
      expect(parseOtlpHeaders('a')).toBeUndefined();
      expect(signalUrl('http://c:4318', '/v1/traces')).toBe('http://c:4318/v1/traces');
      expect(signalUrl('http://c:4318/base/', '/v1/metrics')).toBe('http://c:4318/base/v1/metrics');
    });
  });

  it('redacts credentials carried in endpoint URLs (user info, query values) and keeps the rest', () => {
    expect(redactUrl('https://user:key-123@tempo.example:4318/v1/traces?api-key=abc&x=1')).toBe(
      'https://redacted:redacted@tempo.example:4318/v1/traces?api-key=redacted&x=redacted',
    );
    expect(redactUrl('http://127.0.0.1:4319/v1/traces')).toBe('http://127.0.0.1:4319/v1/traces');
    const c = loadServiceConfig({
      env: {
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://u:downstream-pass@h:4318/v1/traces?token=q-secret',
      },
    });
    const text = JSON.stringify(redactConfig(c));
    expect(text).not.toContain('downstream-pass');
    expect(text).not.toContain('q-secret');
    expect(text).toContain('h:4318/v1/traces');
  });

  it('never prints secrets with --print-config', () => {
    const file = yamlFile(
      'server: { bearerToken: "super-secret-token-value" }\ndownstream: { headers: { authorization: "Bearer downstream-secret" } }\n',
    );
    const c = loadServiceConfig({ file, env: {} });
    const text = JSON.stringify(redactConfig(c));
    expect(text).not.toContain('super-secret-token-value');
    expect(text).not.toContain('downstream-secret');
    const r = spawnSync(
      process.execPath,
      ['bin/continuity.js', 'serve', '--config', file, '--print-config'],
      {
        cwd: new URL('../..', import.meta.url).pathname,
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '' },
      },
    );
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout).server.port).toBe(4318);
    expect(r.stdout).not.toContain('super-secret-token-value');
  });

  it('exits 2 with the key path on stderr and nothing on stdout for a bad file', () => {
    const file = yamlFile('server: { port: -1 }\n');
    const r = spawnSync(process.execPath, ['bin/continuity.js', 'serve', '--config', file], {
      cwd: new URL('../..', import.meta.url).pathname,
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '' },
    });
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/serve\.yaml: server\.port: expected a port number/);
  });
});
