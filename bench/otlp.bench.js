// @ts-check
// The OTLP codec's cost on a batch of 512 spans (as the batch span processor sends), as ratios to
// baselines measured in the same run:
// - decodeTraceRequest(protobuf) against protobufjs decoding the same bytes with the same
//   descriptor (the codec adds validation, hex ids and the uniform OTLP/JSON shape);
// - decodeTraceRequest(json) against JSON.parse of the same text;
// - encodeTraceRequest(protobuf) against protobufjs encoding the already-converted message.
// Rounds alternate with their baseline; medians of the per-round ratios are reported.
//
// Run: npm run bench (builds first), or node bench/run.js otlp after `npm run build`.
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { decodeTraceRequest, encodeTraceRequest } from '../dist/core.js';
import { otlpRoot } from '../dist/otlp/index.js';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const tracer = provider.getTracer('bench-agent');
for (let i = 0; i < 512; i++) {
  tracer
    .startSpan(i % 2 ? 'chat claude-sonnet' : 'execute_tool read_file', {
      attributes: {
        'session.id': `sess-${i % 50}`,
        'gen_ai.operation.name': i % 2 ? 'chat' : 'execute_tool',
        'gen_ai.usage.input_tokens': 1000 + i,
        'http.response.status_code': 200,
      },
    })
    .end();
}
await provider.forceFlush();
const spans = exporter.getFinishedSpans();
const proto = /** @type {Uint8Array} */ (ProtobufTraceSerializer.serializeRequest(spans));
const json = /** @type {Uint8Array} */ (JsonTraceSerializer.serializeRequest(spans));
const jsonText = Buffer.from(json).toString('utf8');
const Request = otlpRoot.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
const decoded = decodeTraceRequest(proto, 'protobuf');
const wireMessage = Request.decode(proto);

let sink = 0;
/** @param {() => unknown} f @param {number} n */
function perCall(f, n) {
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) sink += f() ? 1 : 0;
  return Number(process.hrtime.bigint() - start) / n;
}
/** @param {number[]} xs */
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

/** @param {string} label @param {() => unknown} subject @param {() => unknown} baseline */
function compare(label, subject, baseline) {
  perCall(subject, 20);
  perCall(baseline, 20);
  const ratios = [];
  const ns = [];
  for (let round = 0; round < 9; round++) {
    const s = perCall(subject, 40);
    const b = perCall(baseline, 40);
    ratios.push(s / b);
    ns.push(s);
  }
  const ms = median(ns) / 1e6;
  process.stdout.write(
    `${label.padEnd(44)} ${median(ratios).toFixed(2)}× baseline  (${ms.toFixed(2)} ms per 512 spans, ` +
      `${Math.round(512 / (ms / 1000)).toLocaleString('en-US')} spans/s)\n`,
  );
}

compare(
  'decode protobuf vs protobufjs decode',
  () => decodeTraceRequest(proto, 'protobuf'),
  () => Request.decode(proto),
);
compare(
  'decode json vs JSON.parse',
  () => decodeTraceRequest(json, 'json'),
  () => JSON.parse(jsonText),
);
compare(
  'encode protobuf vs protobufjs encode',
  () => encodeTraceRequest(decoded, 'protobuf'),
  () => Request.encode(wireMessage).finish(),
);
if (sink < 0) process.stdout.write('unreachable\n');
