/**
 * Test support for the continuity page: a real `continuity serve` child fed with the six cases
 * (test/service/six-cases.ts) and with a live boundary recorded by the real CLI (`continuity
 * snapshot` exporting its spans to the service, values in a file, digests on the wire), extra spans
 * (activity, re-observations) sent through the OpenTelemetry JS SDK, and plain HTTP reads of the
 * page's endpoints.
 */
import { writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import type { Attributes } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { type Place, type Run, runCli } from '../export/harness.js';

export { makePlace, type Place, type Run, runCli } from '../export/harness.js';

/** One span to send: its name and attributes (the project's attribute codec builds them). */
export interface SpanSpec {
  name: string;
  attributes: Attributes;
}

/** Sends `spans` to `otlpUrl` (`…/v1/traces`) through the SDK's OTLP/HTTP protobuf exporter. */
export async function sendSpans(
  otlpUrl: string,
  spans: readonly SpanSpec[],
  headers: Record<string, string> = {},
): Promise<void> {
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'page-test-agent' }),
    spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url: otlpUrl, headers }))],
  });
  const tracer = provider.getTracer('page-test');
  for (const s of spans) tracer.startSpan(s.name, { attributes: s.attributes }).end();
  await provider.forceFlush();
  await provider.shutdown();
}

/** An HTTP request (GET unless told) with optional headers: status, headers and the raw body bytes. */
export function get(
  url: string,
  headers: Record<string, string> = {},
  method = 'GET',
): Promise<{ status: number; headers: import('node:http').IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers, method }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** The first chunk of a server-sent event stream, then the connection is closed. */
export function firstEvent(url: string, headers: Record<string, string> = {}): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers }, (res) => {
      res.once('data', (c: Buffer) => {
        resolve(c);
        req.destroy();
      });
      res.on('error', () => undefined);
    });
    req.on('error', (e) => (req.destroyed ? undefined : reject(e)));
    req.end();
  });
}

/** A live boundary recorded by the CLI: its session, the values files, what the commands printed. */
export interface LiveBoundary {
  sessionId: string;
  boundaryId: string;
  preFile: string;
  postFile: string;
}

/**
 * Records a boundary with `continuity snapshot` (pre, then post from `post`), exporting both spans
 * to the service at `serveBase`. The values stay in files; the CLI digests them.
 */
export async function recordLiveBoundary(
  place: Place,
  serveBase: string,
  sessionId: string,
  pre: unknown,
  post: unknown,
): Promise<LiveBoundary> {
  const preFile = join(place.dir, `${sessionId}-pre.json`);
  const postFile = join(place.dir, `${sessionId}-post.json`);
  writeFileSync(preFile, JSON.stringify(pre));
  writeFileSync(postFile, JSON.stringify(post));
  const a = await cli(place, serveBase, [
    'snapshot',
    '--session',
    sessionId,
    '--phase',
    'pre',
    '--runtime',
    'claude-code',
    '--trigger',
    'auto',
    '--decisions',
    preFile,
  ]);
  const boundaryId = a.stdout.trim();
  await cli(place, serveBase, [
    'snapshot',
    '--session',
    sessionId,
    '--phase',
    'post',
    '--decisions',
    postFile,
  ]);
  return { sessionId, boundaryId, preFile, postFile };
}

/** Runs the CLI with the place's ledger and span export to `serveBase`; throws on a non-zero exit. */
export async function cli(place: Place, serveBase: string, args: string[]): Promise<Run> {
  const r = await runCli(args, { env: place.env({ CONTINUITY_OTLP_ENDPOINT: serveBase }), cwd: place.dir });
  if (r.status !== 0 || r.stderr !== '')
    throw new Error(`continuity ${args[0]} exited ${r.status}: ${r.stderr}`);
  return r;
}

/**
 * Splits a command the page shows into argv (its words are ids, names, digests and flags, so
 * spaces separate them), replacing the `<placeholders>` a person fills in.
 */
export function pageCommandArgv(command: string, fill: Record<string, string>): string[] {
  const words = command.trim().split(/\s+/);
  if (words[0] !== 'continuity') throw new Error(`not a continuity command: ${words[0]}`);
  return words.slice(1).map((w) => fill[w] ?? w);
}
