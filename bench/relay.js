// @ts-check
// The baseline of the service benches (bench/otlp-load.js startRelay): a pass-through relay on the
// same HTTP stack as `continuity serve` (node:http in a child process): read the body, answer 200,
// forward the bytes with the same keep-alive concurrency. Prints its address as one JSON line.
//
// Run: node bench/relay.js <downstream OTLP/HTTP traces url>
import { Agent, createServer, request } from 'node:http';

const downstream = process.argv[2];
if (!downstream) {
  process.stderr.write('usage: node bench/relay.js <downstream OTLP/HTTP traces url>\n');
  process.exit(2);
}
const target = new URL(downstream);
const agent = new Agent({ keepAlive: true, maxSockets: 2 });
/** @type {Buffer[]} */
const queue = [];
let active = 0;
const pump = () => {
  while (active < 2 && queue.length > 0) {
    const body = /** @type {Buffer} */ (queue.shift());
    active++;
    const req = request(
      target,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/x-protobuf', 'content-length': body.length },
      },
      (res) => {
        res.resume();
        res.on('end', () => {
          active--;
          pump();
        });
      },
    );
    req.on('error', () => {
      active--;
      pump();
    });
    req.end(body);
  }
};
const server = createServer((req, res) => {
  /** @type {Buffer[]} */
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    queue.push(Buffer.concat(chunks));
    pump();
    res.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-length': 0 });
    res.end();
  });
});
// As the service's listener (src/service/server.ts): Node's 5 s default closes a keep-alive
// socket the client is just reusing while the other side is measured ("socket hang up").
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => {
  const a = /** @type {import('node:net').AddressInfo} */ (server.address());
  process.stdout.write(`${JSON.stringify({ otlp: `http://127.0.0.1:${a.port}/v1/traces` })}\n`);
});
process.on('SIGTERM', () => process.exit(0));
