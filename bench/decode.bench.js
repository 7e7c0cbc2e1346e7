// @ts-check
// The event loop's time per compressed request body: zstd and LZ4 bodies (written by the real
// `zstd` and `lz4` programs) decoded by `continuity serve`'s decoder thread, as a ratio to the
// same bodies decoded in place on the event loop, in the same run. What the ratio measures is
// how long every other request would wait behind one compressed body; the thread's own CPU is
// printed beside it (it does the same decoding, on another core).
//
// Run: npm run bench (builds first), or node bench/run.js decode after `npm run build`.
import { execFileSync } from 'node:child_process';
import { encodeTraceRequest, recordToAttributes } from '../dist/otlp/index.js';
import { decodeInProcess } from '../dist/service/body.js';
import { DecoderThread } from '../dist/service/decode-thread.js';

for (const command of ['zstd', 'lz4']) {
  try {
    execFileSync(command, ['--version'], { stdio: 'ignore' });
  } catch {
    console.error(`decode bench: the ${command} program is missing: apt-get install ${command}`);
    process.exit(1);
  }
}

const hex = (/** @type {number} */ n, /** @type {number} */ l) => n.toString(16).padStart(l, '0');
/** An OTLP/protobuf request of `n` LLM-call spans. @param {number} n */
function request(n) {
  const spans = Array.from({ length: n }, (_, i) => ({
    traceId: hex(i * 7919 + 1, 32),
    spanId: hex(i + 1, 16),
    name: 'chat claude-sonnet',
    kind: 1,
    startTimeUnixNano: String(1764500000000000000n + BigInt(i) * 1000003n),
    endTimeUnixNano: String(1764500000100000000n + BigInt(i) * 999n),
    attributes: recordToAttributes({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': `model-${i % 7}`,
      'gen_ai.usage.input_tokens': 1200 + i,
      'gen_ai.output.messages': `answer ${i} `.repeat(i % 40),
    }),
  }));
  const resourceSpans = [{ resource: { attributes: [] }, scopeSpans: [{ scope: { name: 'bench' }, spans }] }];
  return Buffer.from(encodeTraceRequest({ resourceSpans }, 'protobuf'));
}

const MAX = 64 << 20;
const decoder = new DecoderThread();
console.log("event loop's time per compressed body: decoder thread / decoded in place (lower is better)");
for (const spans of [512, 8192]) {
  const raw = request(spans);
  /** @type {Array<[import('../dist/service/body.js').InProcessCoding, Buffer]>} */
  const bodies = [
    ['zstd', execFileSync('zstd', ['-q', '-c', '-3'], { input: raw })],
    ['lz4', execFileSync('lz4', ['-q', '-c'], { input: raw })],
  ];
  for (const [coding, body] of bodies) {
    const n = spans > 1000 ? 20 : 200;
    const ratios = [];
    let inPlaceMs = 0;
    let threadMs = 0;
    for (let round = 0; round < 5; round++) {
      let t = performance.now();
      for (let i = 0; i < n; i++) decodeInProcess(body, coding, MAX);
      const here = (performance.now() - t) / n;
      const copies = Array.from({ length: n }, () => Buffer.from(body));
      const elu = performance.eventLoopUtilization();
      t = performance.now();
      for (const c of copies) await decoder.decode(c, coding, MAX);
      const busy = performance.eventLoopUtilization(elu).active / n;
      if (round === 0) continue; // warm-up
      ratios.push(busy / here);
      inPlaceMs += here / 4;
      threadMs += busy / 4;
    }
    ratios.sort((a, b) => a - b);
    console.log(
      `  ${coding.padEnd(4)} ${String(spans).padStart(4)} spans (${(raw.length / 1024).toFixed(0)} KiB, ${(body.length / 1024).toFixed(0)} KiB sent): ` +
        `in place ${inPlaceMs.toFixed(2)} ms, thread ${threadMs.toFixed(2)} ms of the event loop: ratio ${ratios[2]?.toFixed(3)}`,
    );
  }
}
await decoder.close();
