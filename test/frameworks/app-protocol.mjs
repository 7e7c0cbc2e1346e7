// The application side of the framework tests' protocol (test/frameworks/harness.ts): one JSON
// request per stdin line, `{ id, op, args }`; one answer per stdout line, `{ id, ok, result }` or
// `{ id, ok: false, error }`. Requests are handled one at a time, in order. Also: the
// application's tracer provider (a ContinuityProcessor and an in-memory exporter) from this
// checkout, and the spans it ended, as plain objects.
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';

const ROOT = process.env.CONTINUITY_TEST_ROOT;
const fromRoot = createRequire(`${ROOT}/package.json`);

/** This checkout's built module `rel` (under dist/). */
export function dist(rel) {
  return import(pathToFileURL(`${ROOT}/dist/${rel}`).href);
}

/** A package from this checkout's node_modules (the OpenTelemetry SDK). */
export function repoPackage(name) {
  return import(pathToFileURL(fromRoot.resolve(name)).href);
}

/** The application's tracer provider: the ContinuityProcessor, then an in-memory exporter. */
export async function appTracing() {
  const base = await repoPackage('@opentelemetry/sdk-trace-base');
  const { ContinuityProcessor } = await dist('index.js');
  const exporter = new base.InMemorySpanExporter();
  const provider = new base.BasicTracerProvider({
    spanProcessors: [new ContinuityProcessor(), new base.SimpleSpanProcessor(exporter)],
  });
  const spans = () =>
    exporter.getFinishedSpans().map((s) => ({
      name: s.name,
      traceId: s.spanContext().traceId,
      spanId: s.spanContext().spanId,
      parentSpanId: s.parentSpanContext?.spanId ?? s.parentSpanId,
      attributes: s.attributes,
      links: s.links.map((l) => ({ traceId: l.context.traceId, spanId: l.context.spanId })),
    }));
  return { provider, exporter, spans };
}

/** Serves `handlers` (op → async function of args) until stdin ends. */
export function serve(handlers) {
  let chain = Promise.resolve();
  createInterface({ input: process.stdin }).on('line', (line) => {
    chain = chain.then(async () => {
      let req;
      try {
        req = JSON.parse(line);
        const fn = handlers[req.op];
        if (!fn) throw new Error(`unknown op ${req.op}`);
        const result = await fn(req.args ?? {});
        process.stdout.write(`${JSON.stringify({ id: req.id, ok: true, result: result ?? null })}\n`);
      } catch (e) {
        process.stderr.write(`${e?.stack ?? e}\n`);
        process.stdout.write(`${JSON.stringify({ id: req?.id, ok: false, error: String(e?.stack ?? e) })}\n`);
      }
    });
  });
}
