/**
 * Snappy (block and framing format) and LZ4 (frame format) request bodies, as the OpenTelemetry
 * Collector's HTTP server reads them (config/confighttp/compression.go): bodies written by real
 * independent encoders (snappyjs's compressor; snappystream, whose blocks are Rust's snap and
 * CRC-32C @node-rs/crc32; the lz4 command, LZ4's reference implementation), vectors built from the
 * framing and frame format specifications, corrupt and truncated bodies (400 `bad_compression`
 * naming the coding, never a hang), bodies that expand past the limit (413, refused before
 * decoding where the format states the size), and the same bodies through the real
 * `continuity serve`, reaching the downstream byte for byte.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import snappyjs from 'snappyjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeTraceRequest } from '../../src/otlp/index.js';
import { type BodyCoding, BodyError, codingOf, decodeBody } from '../../src/service/body.js';
import { crc32c } from '../../src/service/crc.js';
import { xxh32 } from '../../src/service/lz4.js';
import { ensureNpmPeer, ensureSystemTools, PEERS } from '../support/peers.js';
import {
  type Downstream,
  post,
  type ServeProcess,
  startDownstream,
  startServe,
  tempDir,
  waitFor,
} from './harness.js';

const MiB = 1 << 20;
const LIMIT = MiB;

/** snappystream's encoder and the CRC-32C it uses, from the peer cache. */
let framedWith: (data: Buffer) => Promise<Buffer>;
let peerCrc32c: (data: Buffer) => number;

/** The lz4 command on a temporary file (so that --content-size can know the size). */
let lz4: (data: Buffer, flags?: string[]) => Buffer;

beforeAll(async () => {
  await ensureSystemTools([{ command: 'lz4', debianPackage: 'lz4' }]);
  const { dir, bin } = await ensureNpmPeer(PEERS.snappystream);
  const require = createRequire(join(dir, 'package.json'));
  const { SnappyStream } = require(bin) as { SnappyStream: new () => NodeJS.ReadWriteStream };
  peerCrc32c = (require('@node-rs/crc32') as { crc32c: (d: Buffer) => number }).crc32c;
  framedWith = (data) =>
    new Promise((resolve, reject) => {
      const stream = new SnappyStream();
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => resolve(Buffer.concat(chunks)));
      stream.on('error', reject);
      stream.end(data);
    });
  const scratch = tempDir('lz4-');
  let n = 0;
  lz4 = (data, flags = []) => {
    const file = join(scratch, `in-${n++}`);
    writeFileSync(file, data);
    return execFileSync('lz4', ['-q', '-c', ...flags, file], { maxBuffer: 64 * MiB });
  };
}, 600_000);

/** A readable, compressible payload, and one that does not compress (stored chunks and blocks). */
const text = Buffer.from(
  Array.from({ length: 6000 }, (_, i) => `span-${i % 97} gen_ai.input.messages ${i * 7919}\n`).join(''),
);
const noise = randomBytes(200_000);

async function refused(body: Buffer, coding: BodyCoding, maxBytes = LIMIT): Promise<BodyError> {
  const e = await decodeBody(body, coding, maxBytes).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e, `${coding} body was accepted`).toBeInstanceOf(BodyError);
  return e as BodyError;
}

async function expectCorrupt(body: Buffer, coding: BodyCoding, detail?: RegExp): Promise<void> {
  const e = await refused(body, coding);
  expect(e.status).toBe(400);
  expect(e.code).toBe('bad_compression');
  expect(e.message).toContain(`Content-Encoding is ${coding} but the body is not valid ${coding}`);
  if (detail) expect(e.message).toMatch(detail);
}

async function expectTooLarge(body: Buffer, coding: BodyCoding, maxBytes = LIMIT): Promise<void> {
  const e = await refused(body, coding, maxBytes);
  expect(e.status, e.message).toBe(413);
  expect(e.message).toMatch(/exceeds the limit of \d+ bytes \(server\.maxRequestBytes\)/);
}

/** Byte-for-byte equality (toEqual on large buffers is slow and prints megabytes on failure). */
function same(actual: Buffer, expected: Buffer): void {
  expect(actual.length).toBe(expected.length);
  expect(actual.equals(expected)).toBe(true);
}

/** A snappy framing-format chunk: type, 3-byte little-endian length, payload. */
function chunk(type: number, payload: Buffer): Buffer {
  const head = Buffer.from([type, payload.length & 0xff, (payload.length >> 8) & 0xff, payload.length >> 16]);
  return Buffer.concat([head, payload]);
}

/** The framing format's masked CRC-32C, computed with @node-rs/crc32 as the spec says. */
function masked(data: Buffer): Buffer {
  const c = peerCrc32c(data);
  const out = Buffer.alloc(4);
  out.writeUInt32LE((((c >>> 15) | (c << 17)) + 0xa282ead8) >>> 0);
  return out;
}

/** From framing_format.txt section 4.1: the stream identifier chunk. */
const STREAM_ID = Buffer.from('ff060000734e61507059', 'hex');

/** A snappy block's length header (varint) followed by nothing. */
function varint(n: number): Buffer {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n % 0x80) | 0x80);
    n = Math.floor(n / 0x80);
  }
  out.push(n);
  return Buffer.from(out);
}

describe('Content-Encoding names', () => {
  it('accepts snappy, x-snappy-framed and lz4 as the Collector does, and still refuses others with 415', () => {
    expect(codingOf('snappy')).toBe('snappy');
    expect(codingOf('x-snappy-framed')).toBe('x-snappy-framed');
    expect(codingOf('lz4')).toBe('lz4');
    expect(() => codingOf('br')).toThrow(
      /unsupported Content-Encoding "br": send gzip, zstd, deflate, zlib, snappy, x-snappy-framed, lz4/,
    );
    expect(() => codingOf('x-snappy')).toThrow(BodyError);
  });
});

describe('checksums', () => {
  it('CRC-32C gives the check value and agrees with @node-rs/crc32', () => {
    expect(crc32c(Buffer.from('123456789'))).toBe(0xe3069283);
    for (const data of [Buffer.alloc(0), text, noise]) expect(crc32c(data)).toBe(peerCrc32c(data));
  });

  it('xxHash-32 gives the reference values', () => {
    expect(xxh32(Buffer.alloc(0))).toBe(0x02cc5d05);
    expect(xxh32(Buffer.from('abc'))).toBe(0x32d153ff);
  });
});

describe('snappy block format (Content-Encoding: snappy)', () => {
  it("decodes what snappyjs's compressor writes", async () => {
    for (const data of [text, noise, Buffer.alloc(0)]) {
      same(await decodeBody(Buffer.from(snappyjs.compress(data)), 'snappy', LIMIT), data);
    }
  });

  it('refuses a block whose header states more than the limit, before decoding it (413)', async () => {
    // A header and nothing else: decoding would call it corrupt, so a 413 shows it was not decoded.
    await expectTooLarge(varint(LIMIT + 1), 'snappy');
    await expectTooLarge(varint(0xffff_ffff), 'snappy');
    await expectTooLarge(Buffer.from(snappyjs.compress(Buffer.alloc(8 * MiB))), 'snappy');
    // Exactly the limit is allowed.
    expect(
      (await decodeBody(Buffer.from(snappyjs.compress(Buffer.alloc(LIMIT))), 'snappy', LIMIT)).length,
    ).toBe(LIMIT);
  });

  it('refuses corrupt blocks with 400, including those snappyjs would accept or spin on', async () => {
    await expectCorrupt(Buffer.alloc(0), 'snappy', /invalid length header/);
    await expectCorrupt(Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80, 0x01]), 'snappy');
    // Declares 100 bytes, holds a 5-byte literal (snappyjs returns 100 bytes, 95 of them zeros).
    await expectCorrupt(Buffer.from([100, 0x10, 1, 2, 3, 4, 5]), 'snappy');
    // Declares 2 bytes, holds 5 (snappyjs drops the rest silently).
    await expectCorrupt(Buffer.from([2, 0x10, 1, 2, 3, 4, 5]), 'snappy');
    // A literal whose 4-byte length is negative (snappyjs walks backwards for minutes).
    await expectCorrupt(Buffer.from([10, 0xfc, 0x00, 0x00, 0x00, 0x80, 1]), 'snappy');
    // A copy before the start of the output.
    await expectCorrupt(Buffer.from([8, 0x00, 0x41, 0x0d, 0x05]), 'snappy');
    const good = Buffer.from(snappyjs.compress(text));
    await expectCorrupt(good.subarray(0, good.length - 7), 'snappy');
  });
});

describe('snappy framing format (x-snappy-framed, and snappy when the body starts with the stream identifier)', () => {
  it('decodes what snappystream writes, under both names (compressed and stored chunks)', async () => {
    for (const data of [text, noise, Buffer.concat([text, noise, text])]) {
      const body = await framedWith(data);
      expect(body.subarray(0, 10)).toEqual(STREAM_ID);
      same(await decodeBody(body, 'x-snappy-framed', LIMIT), data);
      same(await decodeBody(body, 'snappy', LIMIT), data);
    }
    // snappystream stores incompressible data in uncompressed chunks (type 0x01).
    expect((await framedWith(noise))[10]).toBe(0x01);
    expect((await framedWith(text))[10]).toBe(0x00);
  });

  it('reads the chunk types of the specification: padding and reserved skippable chunks skipped', async () => {
    const a = Buffer.from('first chunk, stored; ');
    const b = text.subarray(0, 30_000);
    const body = Buffer.concat([
      STREAM_ID,
      chunk(0xfe, Buffer.alloc(17)), // padding
      chunk(0x01, Buffer.concat([masked(a), a])), // uncompressed data
      chunk(0x80, Buffer.from('reserved skippable')),
      chunk(0x00, Buffer.concat([masked(b), Buffer.from(snappyjs.compress(b))])), // compressed data
      STREAM_ID, // the identifier may appear again
      chunk(0xfd, Buffer.alloc(3)),
    ]);
    same(await decodeBody(body, 'x-snappy-framed', LIMIT), Buffer.concat([a, b]));
    same(await decodeBody(Buffer.alloc(0), 'x-snappy-framed', LIMIT), Buffer.alloc(0));
    same(await decodeBody(STREAM_ID, 'x-snappy-framed', LIMIT), Buffer.alloc(0));
  });

  it("verifies every checksum, as Go's snappy.Reader does (400)", async () => {
    const body = await framedWith(text);
    const badCrc = Buffer.from(body);
    badCrc[14]! ^= 0x01; // the first data chunk's masked CRC
    await expectCorrupt(badCrc, 'x-snappy-framed', /checksum mismatch/);
    await expectCorrupt(badCrc, 'snappy', /framing format: checksum mismatch/);
    const stored = await framedWith(noise);
    const badData = Buffer.from(stored);
    badData[100]! ^= 0x40; // a byte of a stored chunk's data
    await expectCorrupt(badData, 'x-snappy-framed', /checksum mismatch/);
  });

  it('refuses what the specification calls corrupt (400)', async () => {
    const a = Buffer.from('data');
    const ok = chunk(0x01, Buffer.concat([masked(a), a]));
    await expectCorrupt(ok, 'x-snappy-framed', /no stream identifier/);
    await expectCorrupt(
      Buffer.concat([chunk(0xfe, Buffer.alloc(2)), STREAM_ID, ok]),
      'x-snappy-framed',
      /no stream identifier/,
    );
    await expectCorrupt(
      Buffer.concat([STREAM_ID, chunk(0x02, Buffer.alloc(4))]),
      'x-snappy-framed',
      /reserved unskippable chunk type 0x02/,
    );
    await expectCorrupt(
      Buffer.concat([STREAM_ID, chunk(0x7f, Buffer.alloc(4))]),
      'x-snappy-framed',
      /unskippable/,
    );
    await expectCorrupt(
      Buffer.concat([STREAM_ID, chunk(0x01, Buffer.alloc(3))]),
      'x-snappy-framed',
      /shorter than its checksum/,
    );
    await expectCorrupt(Buffer.concat([STREAM_ID, ok.subarray(0, 6)]), 'x-snappy-framed', /truncated chunk/);
    await expectCorrupt(
      Buffer.concat([STREAM_ID, ok.subarray(0, 2)]),
      'x-snappy-framed',
      /truncated chunk header/,
    );
    await expectCorrupt(
      Buffer.from('ff060000734e61507058', 'hex'),
      'x-snappy-framed',
      /bad stream identifier/,
    );
    const big = Buffer.alloc(65_537, 1);
    await expectCorrupt(
      Buffer.concat([STREAM_ID, chunk(0x01, Buffer.concat([masked(big), big]))]),
      'x-snappy-framed',
      /over 64 KiB/,
    );
    // A block-format body is not a framed stream.
    await expectCorrupt(Buffer.from(snappyjs.compress(text)), 'x-snappy-framed', /no stream identifier/);
  });

  it('refuses a stream that expands past the limit (413), counting chunk by chunk', async () => {
    const body = await framedWith(Buffer.alloc(8 * MiB));
    expect(body.length).toBeLessThan(LIMIT / 2);
    await expectTooLarge(body, 'x-snappy-framed');
    await expectTooLarge(body, 'snappy');
    const exact = await framedWith(Buffer.alloc(LIMIT, 7));
    expect((await decodeBody(exact, 'x-snappy-framed', LIMIT)).length).toBe(LIMIT);
    await expectTooLarge(exact, 'x-snappy-framed', LIMIT - 1);
  });
});

describe('LZ4 frame format (Content-Encoding: lz4)', () => {
  const variants: Array<[string, string[]]> = [
    ['defaults (4 MiB blocks, independent, content checksum)', []],
    ['64 KiB linked blocks, block checksums, content size', ['-B4', '-BD', '-BX', '--content-size']],
    ['256 KiB blocks without the content checksum', ['-B5', '--no-frame-crc']],
    ['1 MiB linked blocks, block checksums, no content checksum', ['-B6', '-BD', '-BX', '--no-frame-crc']],
    ['highest compression (-12), content size', ['-12', '--content-size']],
    ['the legacy frame format (lz4 -l)', ['-l']],
  ];

  it.each(variants)('decodes what the lz4 command writes: %s', async (_, flags) => {
    for (const data of [text, noise, Buffer.concat([text, noise, text, text]), Buffer.alloc(0)]) {
      same(await decodeBody(lz4(data, flags), 'lz4', 4 * MiB), data);
    }
  });

  it('reads concatenated frames and skips skippable frames, as the lz4 command does', async () => {
    const skippable = Buffer.concat([
      Buffer.from('5a2a4d18', 'hex'),
      Buffer.from([5, 0, 0, 0]),
      Buffer.from('hello'),
    ]);
    const body = Buffer.concat([
      skippable,
      lz4(text),
      lz4(noise, ['-BD', '-BX']),
      skippable,
      lz4(text, ['-l']),
    ]);
    const expected = Buffer.concat([text, noise, text]);
    same(execFileSync('lz4', ['-d', '-q', '-c'], { input: body, maxBuffer: 64 * MiB }), expected);
    same(await decodeBody(body, 'lz4', LIMIT), expected);
  });

  it('refuses a frame whose content size is over the limit before decoding it (413)', async () => {
    const bomb = lz4(Buffer.alloc(8 * MiB), ['--content-size']);
    expect(bomb.length).toBeLessThan(LIMIT / 8);
    await expectTooLarge(bomb, 'lz4');
    // The same header with no blocks after it: a decoder would find it truncated, so a 413 shows
    // the stated size was checked first.
    const descriptorEnd = 4 + 2 + 8 + 1;
    await expectTooLarge(bomb.subarray(0, descriptorEnd), 'lz4');
    expect((await decodeBody(lz4(Buffer.alloc(LIMIT), ['--content-size']), 'lz4', LIMIT)).length).toBe(LIMIT);
  });

  it('bounds a frame without a content size while decoding (413)', async () => {
    for (const flags of [[], ['-B4', '-BD'], ['-l']]) {
      const bomb = lz4(Buffer.alloc(8 * MiB), flags);
      expect(bomb.length).toBeLessThan(LIMIT / 8);
      await expectTooLarge(bomb, 'lz4');
      await expectTooLarge(lz4(Buffer.alloc(LIMIT + 1), flags), 'lz4');
      expect((await decodeBody(lz4(Buffer.alloc(LIMIT), flags), 'lz4', LIMIT)).length).toBe(LIMIT);
    }
  });

  it('verifies the header, block and content checksums, and refuses corrupt frames (400)', async () => {
    const plain = lz4(text, ['-B4']);
    const badHeader = Buffer.from(plain);
    badHeader[6]! ^= 0xff; // the descriptor checksum byte (no content size)
    await expectCorrupt(badHeader, 'lz4', /frame descriptor checksum mismatch/);
    const badContent = Buffer.from(plain);
    badContent[badContent.length - 1]! ^= 0x01;
    await expectCorrupt(badContent, 'lz4', /content checksum mismatch/);
    const stored = lz4(noise, ['-B4', '-BX']);
    const badBlock = Buffer.from(stored);
    badBlock[40]! ^= 0x01; // inside the first (stored) block
    await expectCorrupt(badBlock, 'lz4', /block checksum mismatch/);
    await expectCorrupt(Buffer.alloc(0), 'lz4', /not an LZ4 frame/);
    await expectCorrupt(gzipSync(text), 'lz4', /bad magic number/);
    await expectCorrupt(plain.subarray(0, plain.length - 9), 'lz4', /truncated/);
    await expectCorrupt(Buffer.concat([plain, Buffer.from('trailing')]), 'lz4', /bytes after the last frame/);
    const v2 = Buffer.from(plain);
    v2[4] = (v2[4]! & 0x3f) | 0x80;
    await expectCorrupt(v2, 'lz4', /unsupported frame version 2/);
  });
});

describe('corrupted bodies (mutation test)', () => {
  it('every mutation of a valid body is decoded or refused with 400/413, never another error or a hang', async () => {
    let seed = 20261201;
    const rand = (n: number) => {
      seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
      return seed % n;
    };
    const sample = text.subarray(0, 40_000);
    const bodies: Array<[BodyCoding, Buffer]> = [
      ['snappy', Buffer.from(snappyjs.compress(sample))],
      ['snappy', await framedWith(sample)],
      ['x-snappy-framed', await framedWith(Buffer.concat([sample, noise.subarray(0, 70_000)]))],
      ['lz4', lz4(sample, ['-B4', '-BD', '-BX', '--content-size'])],
      ['lz4', lz4(sample, ['-B4', '--no-frame-crc'])],
      ['lz4', lz4(sample, ['-l'])],
    ];
    const outcomes = { decoded: 0, 400: 0, 413: 0 };
    for (const [coding, valid] of bodies) {
      for (let i = 0; i < 400; i++) {
        const body = Buffer.from(valid);
        const flips = 1 + rand(4);
        for (let f = 0; f < flips; f++) body[rand(body.length)] = rand(256);
        const cut = i % 5 === 0 ? body.subarray(0, rand(body.length)) : body;
        const result = await decodeBody(cut, coding, 256 * 1024).then(
          () => 'decoded' as const,
          (e: unknown) => {
            if (!(e instanceof BodyError) || (e.status !== 400 && e.status !== 413)) throw e;
            return e.status;
          },
        );
        outcomes[result]++;
      }
    }
    // Most mutations are caught (checksums, lengths); none threw anything else.
    expect(outcomes[400]).toBeGreaterThan(1500);
  });
});

describe('continuity serve with snappy and lz4 request bodies', () => {
  let downstream: Downstream;
  let serve: ServeProcess;
  const MAX_BODY = 256 * 1024;
  const PB = { 'content-type': 'application/x-protobuf' };

  /** An ordinary trace request (no compaction span), which the service forwards as sent. */
  function traceRequest(tag: string): Buffer {
    const spans = Array.from({ length: 300 }, (_, i) => ({
      traceId: (i + 1).toString(16).padStart(32, '0'),
      spanId: (i + 1).toString(16).padStart(16, '0'),
      name: `${tag} span ${i}`,
      kind: 1,
      startTimeUnixNano: '1764500000000000000',
      endTimeUnixNano: '1764500000100000000',
      attributes: [
        { key: 'gen_ai.input.messages', value: { stringValue: `${tag} message ${i} `.repeat(8) } },
      ],
    }));
    return Buffer.from(
      encodeTraceRequest(
        {
          resourceSpans: [
            {
              resource: { attributes: [{ key: 'service.name', value: { stringValue: 'compression-test' } }] },
              scopeSpans: [{ scope: { name: 'test' }, spans }],
            },
          ],
        },
        'protobuf',
      ),
    );
  }

  beforeAll(async () => {
    downstream = await startDownstream();
    serve = await startServe({
      config: {
        server: { maxRequestBytes: MAX_BODY },
        downstream: { endpoint: `${downstream.base}/v1/traces` },
      },
    });
  }, 60_000);

  afterAll(async () => {
    await serve?.stop();
    await downstream?.close();
  });

  it('forwards every coding to the downstream byte for byte, as it does gzip', async () => {
    const codings: Array<[string, (b: Buffer) => Buffer | Promise<Buffer>]> = [
      ['gzip', (b) => gzipSync(b)],
      ['snappy', (b) => Buffer.from(snappyjs.compress(b))],
      ['snappy', (b) => framedWith(b)],
      ['x-snappy-framed', (b) => framedWith(b)],
      ['lz4', (b) => lz4(b)],
      ['lz4', (b) => lz4(b, ['-B4', '-BD', '-BX', '--content-size'])],
    ];
    for (const [i, [coding, compress]] of codings.entries()) {
      const payload = traceRequest(`${coding}-${i}`);
      expect(payload.length).toBeGreaterThan(64 * 1024);
      const body = await compress(payload);
      const before = downstream.raw.length;
      const answer = await post(serve.otlp, body, { ...PB, 'content-encoding': coding });
      expect(answer.status, answer.body.toString()).toBe(200);
      await waitFor(`the ${coding} request downstream`, () => downstream.raw.length > before);
      const forwarded = downstream.raw.slice(before).filter((r) => r.path === '/v1/traces');
      expect(forwarded).toHaveLength(1);
      expect(forwarded[0]!.body.equals(payload), `${coding} #${i} reached the downstream changed`).toBe(true);
    }
  });

  it('decodes metrics and logs bodies the same way, passing them through byte for byte', async () => {
    // An unknown field only: the service passes metrics and logs as sent, whatever they hold.
    const opaque = (tag: string) =>
      Buffer.concat([Buffer.from([(99 << 3) | 2, 0x80, 0x01]), Buffer.from(tag.padEnd(128, '.'))]);
    const sends: Array<[string, string, Buffer]> = [
      ['/v1/logs', 'snappy', Buffer.from(snappyjs.compress(opaque('logs-snappy')))],
      ['/v1/metrics', 'x-snappy-framed', await framedWith(opaque('metrics-x-snappy-framed'))],
      ['/v1/logs', 'lz4', lz4(opaque('logs-lz4'), ['--content-size'])],
    ];
    for (const [path, coding, body] of sends) {
      const answer = await post(`${serve.base}${path}`, body, { ...PB, 'content-encoding': coding });
      expect(answer.status, `${path} ${coding}: ${answer.body.toString()}`).toBe(200);
    }
    const tags = ['logs-snappy', 'metrics-x-snappy-framed', 'logs-lz4'];
    await waitFor('the metrics and logs downstream', () =>
      tags.every((t) => downstream.raw.some((r) => r.body.includes(t))),
    );
    for (const [i, [path]] of sends.entries()) {
      const got = downstream.raw.filter((r) => r.body.includes(tags[i]!));
      expect(got.map((r) => r.path)).toEqual([path]);
      expect(got[0]!.body.equals(opaque(tags[i]!))).toBe(true);
    }
  });

  it('answers corrupt bodies 400 naming the coding, bodies that expand past the limit 413, and keeps serving', async () => {
    const payload = traceRequest('bad');
    const framed = Buffer.from(await framedWith(payload));
    framed[14]! ^= 0x01;
    const cases: Array<[string, Buffer, number, RegExp]> = [
      ['snappy', Buffer.from(snappyjs.compress(payload)).subarray(0, 5000), 400, /not valid snappy/],
      ['snappy', framed, 400, /not valid snappy \(framing format: checksum mismatch\)/],
      ['x-snappy-framed', framed, 400, /not valid x-snappy-framed \(checksum mismatch\)/],
      ['lz4', lz4(payload).subarray(0, 3000), 400, /not valid lz4/],
      ['snappy', Buffer.from(snappyjs.compress(Buffer.alloc(4 * MiB))), 413, /server\.maxRequestBytes/],
      ['x-snappy-framed', await framedWith(Buffer.alloc(4 * MiB)), 413, /server\.maxRequestBytes/],
      ['lz4', lz4(Buffer.alloc(4 * MiB), ['--content-size']), 413, /server\.maxRequestBytes/],
      ['lz4', lz4(Buffer.alloc(4 * MiB)), 413, /server\.maxRequestBytes/],
    ];
    for (const [coding, body, status, message] of cases) {
      expect(body.length).toBeLessThan(MAX_BODY);
      const answer = await post(serve.otlp, body, { ...PB, 'content-encoding': coding });
      expect(answer.status, `${coding}: ${answer.body.toString()}`).toBe(status);
      expect(answer.body.toString()).toMatch(message);
    }
    const before = downstream.raw.length;
    const after = await post(serve.otlp, lz4(payload), { ...PB, 'content-encoding': 'lz4' });
    expect(after.status).toBe(200);
    await waitFor('the valid request after the bad ones', () => downstream.raw.length > before);
    expect(downstream.raw.at(-1)!.body.equals(payload)).toBe(true);
  });
});
