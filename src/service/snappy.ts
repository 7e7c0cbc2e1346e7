/**
 * Snappy request bodies, read as the OpenTelemetry Collector's HTTP server reads them
 * (config/confighttp/compression.go): `Content-Encoding: snappy` is the block format, unless the
 * body starts with the 10-byte stream identifier of the framing format, which is then read as
 * framed (older Collectors sent framed data under that name); `x-snappy-framed` is always the
 * framing format.
 *
 * Blocks are decoded by `hysnappy` (a snappy decompressor in C compiled to WebAssembly, no native
 * build; strict where `snappyjs` is not, below). The framing format is written here because no
 * maintained pure-JavaScript package reads it (`snappystream` and `@chainsafe/snappy-stream` need
 * the native `snappy` addon): it is a chunk list over the block format (google/snappy
 * framing_format.txt), checked as Go's `snappy.Reader` checks it — the stream identifier first,
 * every data chunk's masked CRC-32C, reserved unskippable chunk types refused, padding and reserved
 * skippable chunks skipped. `snappyjs`, the most downloaded pure-JavaScript snappy, is not used to
 * decode: it accepts corrupt blocks (output shorter or longer than the header says) and spins for
 * minutes on a 7-byte block whose literal length is negative.
 *
 * The decoded size is bounded before anything is allocated for it: a block's header states its
 * length (Go's `snappy.DecodedLen`), a frame's chunks are at most 64 KiB each and are counted.
 */
import { snappyUncompressor } from 'hysnappy';
import { crc32c } from './crc.js';
import { corrupt, tooLarge } from './decode-error.js';

/** The first 10 bytes of every snappy framed stream: a stream identifier chunk, "sNaPpY". */
const STREAM_IDENTIFIER = Buffer.from([0xff, 0x06, 0x00, 0x00, 0x73, 0x4e, 0x61, 0x50, 0x70, 0x59]);

/** Most bytes one framed chunk decodes to (the framing format's limit). */
const MAX_CHUNK_DATA = 65_536;

/** Whether a body starts with the framing format's stream identifier (the Collector's test). */
export function isSnappyFramed(body: Uint8Array): boolean {
  return body.length >= STREAM_IDENTIFIER.length && STREAM_IDENTIFIER.equals(body.subarray(0, 10));
}

/**
 * The decoded length a snappy block declares (a little-endian base-128 varint of at most 32 bits),
 * or -1 when the header is not valid.
 */
export function snappyDecodedLength(block: Uint8Array): number {
  let value = 0;
  for (let i = 0; i < 5 && i < block.length; i++) {
    const b = block[i]!;
    value += (b & 0x7f) * 2 ** (7 * i);
    if (b < 0x80) return value > 0xffff_ffff ? -1 : value;
  }
  return -1;
}

let uncompress: ((input: Uint8Array, outputLength: number) => Uint8Array) | undefined;

/**
 * Decodes one snappy block, refusing (`too_large`) a declared length over `maxBytes` before
 * decoding and (`corrupt`) any block that does not decode to exactly its declared length.
 */
export function decodeSnappyBlock(block: Uint8Array, maxBytes: number): Buffer {
  const length = snappyDecodedLength(block);
  if (length < 0) throw corrupt('invalid length header');
  if (length > maxBytes) throw tooLarge();
  uncompress ??= snappyUncompressor();
  let out: Uint8Array;
  try {
    out = uncompress(block, length);
  } catch (e) {
    throw corrupt((e as Error).message);
  }
  return Buffer.from(out.buffer, out.byteOffset, out.length);
}

/** Decodes a `Content-Encoding: snappy` body: framed when it starts with the stream identifier. */
export function decodeSnappy(body: Uint8Array, maxBytes: number): Buffer {
  return isSnappyFramed(body) ? decodeSnappyFramed(body, maxBytes) : decodeSnappyBlock(body, maxBytes);
}

/**
 * Decodes a snappy framed stream (`x-snappy-framed`). An empty body is an empty stream, as Go's
 * reader takes it; anything else must start with the stream identifier.
 */
export function decodeSnappyFramed(body: Uint8Array, maxBytes: number): Buffer {
  const parts: Uint8Array[] = [];
  let total = 0;
  let pos = 0;
  let identified = false;
  while (pos < body.length) {
    if (body.length - pos < 4) throw corrupt('truncated chunk header');
    const type = body[pos]!;
    const length = body[pos + 1]! | (body[pos + 2]! << 8) | (body[pos + 3]! << 16);
    pos += 4;
    if (!identified && type !== 0xff) throw corrupt('no stream identifier');
    if (body.length - pos < length) throw corrupt('truncated chunk');
    const chunk = body.subarray(pos, pos + length);
    pos += length;
    if (type === 0xff) {
      if (!STREAM_IDENTIFIER.subarray(4).equals(chunk)) throw corrupt('bad stream identifier');
      identified = true;
      continue;
    }
    if (type === 0x00 || type === 0x01) {
      if (length < 4) throw corrupt('data chunk shorter than its checksum');
      const payload = chunk.subarray(4);
      const size = type === 0x00 ? snappyDecodedLength(payload) : payload.length;
      if (size < 0) throw corrupt('invalid length header');
      if (size > MAX_CHUNK_DATA) throw corrupt('chunk over 64 KiB');
      if (total + size > maxBytes) throw tooLarge();
      const data = type === 0x00 ? decodeSnappyBlock(payload, MAX_CHUNK_DATA) : payload;
      const expected = (chunk[0]! | (chunk[1]! << 8) | (chunk[2]! << 16) | (chunk[3]! << 24)) >>> 0;
      if (maskedCrc32c(data) !== expected) throw corrupt('checksum mismatch');
      parts.push(data);
      total += data.length;
      continue;
    }
    // 0xfe padding and 0x80-0xfd reserved skippable chunks are skipped; 0x02-0x7f must not be.
    if (type < 0x80) throw corrupt(`reserved unskippable chunk type 0x${type.toString(16).padStart(2, '0')}`);
  }
  return Buffer.concat(parts, total);
}

/** The framing format's masked checksum: the CRC rotated right by 15 plus 0xa282ead8. */
export function maskedCrc32c(data: Uint8Array): number {
  const c = crc32c(data);
  return (((c >>> 15) | (c << 17)) + 0xa282ead8) >>> 0;
}
