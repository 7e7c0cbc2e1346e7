/**
 * LZ4 request bodies (`Content-Encoding: lz4`): the LZ4 frame format, which the OpenTelemetry
 * Collector's HTTP server reads with pierrec/lz4's `NewReader`.
 *
 * Written here because no maintained pure-JavaScript package decodes LZ4 frames safely: `lz4`
 * (pierrec/node-lz4) is a native addon built with node-gyp at install; `lz4js` 0.2.0 leaves the
 * checksums as TODOs (a wrong content checksum passes) and returns a truncated body's first bytes
 * without an error; `lz4-wasm-nodejs` and `@foxglove/wasm-lz4` read bare blocks, not frames. The
 * format is small and exactly specified (lz4's doc/lz4_Frame_format.md and
 * doc/lz4_Block_format.md): magic number, frame descriptor with its xxHash-32 header checksum,
 * blocks (compressed or stored, linked or independent, each optionally followed by the xxHash-32 of
 * its stored bytes, as the specification says and pierrec/lz4 computes it since its issue 223 was
 * fixed), end mark, optional content checksum. Skippable frames are skipped and frames may follow
 * one another, as the lz4 command reads them; the legacy format (`lz4 -l`) is read too, as
 * pierrec/lz4 reads it. Every checksum present is verified. Frames that need a dictionary are
 * refused (there is none to give).
 *
 * The decoded size is bounded before decoding when the frame states its content size, and block
 * by block otherwise: the output never grows past `maxBytes`.
 */
import { corrupt, tooLarge } from './decode-error.js';

const FRAME_MAGIC = 0x184d2204;
const LEGACY_MAGIC = 0x184c2102;
/** Skippable frames: 0x184D2A50 to 0x184D2A5F. */
const SKIPPABLE_MAGIC = 0x184d2a50;
const LEGACY_BLOCK_MAX = 8 << 20;

/** A growing output buffer that never holds more than `max` bytes. */
class Output {
  buf: Buffer;
  length = 0;
  constructor(
    readonly max: number,
    initial: number,
  ) {
    this.buf = Buffer.allocUnsafe(Math.min(max, Math.max(initial, 256)));
  }
  /** Makes room for `n` more bytes, or throws `too_large`. */
  reserve(n: number): void {
    const need = this.length + n;
    if (need > this.max) throw tooLarge();
    if (need <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.min(this.max, Math.max(need, this.buf.length * 2)));
    this.buf.copy(next, 0, 0, this.length);
    this.buf = next;
  }
  /** The decoded bytes (a view, not a copy). */
  bytes(): Buffer {
    return this.buf.subarray(0, this.length);
  }
}

const u32 = (b: Uint8Array, i: number) =>
  (b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24)) >>> 0;

/** Decodes an LZ4 body: one or more frames (skippable frames skipped). */
export function decodeLz4(body: Uint8Array, maxBytes: number): Buffer {
  const out = new Output(maxBytes, body.length * 4);
  let pos = 0;
  let frames = 0;
  do {
    if (body.length - pos < 4) throw corrupt(frames === 0 ? 'not an LZ4 frame' : 'truncated frame header');
    const magic = u32(body, pos);
    if ((magic & 0xffff_fff0) === SKIPPABLE_MAGIC) {
      if (body.length - pos < 8) throw corrupt('truncated skippable frame');
      const size = u32(body, pos + 4);
      if (body.length - pos - 8 < size) throw corrupt('truncated skippable frame');
      pos += 8 + size;
    } else if (magic === FRAME_MAGIC) {
      pos = readFrame(body, pos + 4, out);
    } else if (magic === LEGACY_MAGIC) {
      pos = readLegacyFrame(body, pos + 4, out);
    } else {
      throw corrupt(frames === 0 ? 'not an LZ4 frame (bad magic number)' : 'bytes after the last frame');
    }
    frames++;
  } while (pos < body.length);
  return out.bytes();
}

/** Reads one frame after its magic number; returns the position after it. */
function readFrame(body: Uint8Array, start: number, out: Output): number {
  if (body.length - start < 3) throw corrupt('truncated frame descriptor');
  const flg = body[start]!;
  const bd = body[start + 1]!;
  if (flg >>> 6 !== 1) throw corrupt(`unsupported frame version ${flg >>> 6}`);
  if (flg & 0x02 || bd & 0x8f) throw corrupt('reserved descriptor bits set');
  const independent = (flg & 0x20) !== 0;
  const blockChecksum = (flg & 0x10) !== 0;
  const hasContentSize = (flg & 0x08) !== 0;
  const contentChecksum = (flg & 0x04) !== 0;
  const hasDictionary = (flg & 0x01) !== 0;
  const sizeIndex = (bd >>> 4) & 0x07;
  if (sizeIndex < 4) throw corrupt(`invalid block maximum size ${sizeIndex}`);
  const blockMax = 1 << (2 * sizeIndex + 8);
  const descriptorLength = 2 + (hasContentSize ? 8 : 0) + (hasDictionary ? 4 : 0);
  if (body.length - start < descriptorLength + 1) throw corrupt('truncated frame descriptor');
  const descriptor = body.subarray(start, start + descriptorLength);
  if (((xxh32(descriptor) >>> 8) & 0xff) !== body[start + descriptorLength]) {
    throw corrupt('frame descriptor checksum mismatch');
  }
  if (hasDictionary) throw corrupt('the frame needs a dictionary');
  let contentSize = -1;
  if (hasContentSize) {
    contentSize = u32(body, start + 2) + u32(body, start + 6) * 2 ** 32;
    // The frame states its size: refuse it before decoding anything.
    if (contentSize > out.max - out.length) throw tooLarge();
    out.reserve(contentSize);
  }
  const frameStart = out.length;
  let pos = start + descriptorLength + 1;
  for (;;) {
    if (body.length - pos < 4) throw corrupt('truncated block header');
    const header = u32(body, pos);
    pos += 4;
    if (header === 0) break;
    const size = header & 0x7fff_ffff;
    if (size > blockMax) throw corrupt('block larger than the frame allows');
    if (body.length - pos < size + (blockChecksum ? 4 : 0)) throw corrupt('truncated block');
    const block = body.subarray(pos, pos + size);
    pos += size;
    if (blockChecksum) {
      if (xxh32(block) !== u32(body, pos)) throw corrupt('block checksum mismatch');
      pos += 4;
    }
    if (header & 0x8000_0000) {
      out.reserve(size);
      out.buf.set(block, out.length);
      out.length += size;
    } else {
      decodeBlock(block, out, independent ? out.length : frameStart, blockMax);
    }
  }
  if (contentChecksum) {
    if (body.length - pos < 4) throw corrupt('truncated content checksum');
    if (xxh32(out.buf.subarray(frameStart, out.length)) !== u32(body, pos)) {
      throw corrupt('content checksum mismatch');
    }
    pos += 4;
  }
  if (contentSize >= 0 && out.length - frameStart !== contentSize) throw corrupt('content size mismatch');
  return pos;
}

/**
 * Reads a legacy frame (independent blocks of up to 8 MiB, each after its compressed size, no
 * checksums) up to the end of the body or the next frame's magic number.
 */
function readLegacyFrame(body: Uint8Array, start: number, out: Output): number {
  let pos = start;
  while (pos < body.length) {
    if (body.length - pos < 4) throw corrupt('truncated block header');
    const size = u32(body, pos);
    if (size === LEGACY_MAGIC) {
      pos += 4;
      continue;
    }
    if (size === FRAME_MAGIC || (size & 0xffff_fff0) === SKIPPABLE_MAGIC) break;
    pos += 4;
    if (body.length - pos < size) throw corrupt('truncated block');
    decodeBlock(body.subarray(pos, pos + size), out, out.length, LEGACY_BLOCK_MAX);
    pos += size;
  }
  return pos;
}

/**
 * Decodes one LZ4 block onto the output. Matches may reach back to `lowest` (the block's start for
 * independent blocks, the frame's for linked ones); the block decodes to at most `blockMax` bytes.
 */
function decodeBlock(src: Uint8Array, out: Output, lowest: number, blockMax: number): void {
  if (src.length === 0) throw corrupt('empty block');
  const overLimit = out.length + blockMax > out.max;
  out.reserve(Math.min(blockMax, out.max - out.length));
  const cap = Math.min(out.length + blockMax, out.max);
  const dst = out.buf;
  const end = src.length;
  let op = out.length;
  let ip = 0;
  const overflow = () => (overLimit ? tooLarge() : corrupt('block decodes past its maximum size'));
  // A length of 15 in the token continues in the bytes that follow, each added, until one is not 255.
  const extend = (length: number, what: string) => {
    let b: number;
    do {
      if (ip >= end) throw corrupt(`truncated ${what} length`);
      b = src[ip++]!;
      length += b;
    } while (b === 255);
    return length;
  };
  for (;;) {
    const token = src[ip++]!;
    let literals = token >>> 4;
    if (literals === 15) literals = extend(literals, 'literal');
    if (literals > end - ip) throw corrupt('literals past the end of the block');
    if (literals > cap - op) throw overflow();
    // Short runs are copied byte by byte: a native copy costs more than it saves below ~32 bytes.
    if (literals < 32) {
      for (let k = 0; k < literals; k++) dst[op + k] = src[ip + k]!;
    } else {
      dst.set(src.subarray(ip, ip + literals), op);
    }
    ip += literals;
    op += literals;
    if (ip === end) break; // the last sequence has literals only
    if (end - ip < 2) throw corrupt('truncated match offset');
    const offset = src[ip]! | (src[ip + 1]! << 8);
    ip += 2;
    if (offset === 0 || op - offset < lowest) throw corrupt('match offset out of range');
    let length = token & 0x0f;
    if (length === 15) length = extend(length, 'match');
    length += 4;
    if (length > cap - op) throw overflow();
    // An overlapping match repeats the last `offset` bytes: copy in doubling runs of that period.
    const from = op - offset;
    if (length < 32) {
      for (let k = 0; k < length; k++) dst[op + k] = dst[from + k]!;
      op += length;
      continue;
    }
    let run = offset;
    let left = length;
    while (left > 0) {
      const n = Math.min(run, left);
      dst.copyWithin(op, from, from + n);
      op += n;
      left -= n;
      run += n;
    }
  }
  out.length = op;
}

const P1 = 0x9e3779b1;
const P2 = 0x85ebca77;
const P3 = 0xc2b2ae3d;
const P4 = 0x27d4eb2f;
const P5 = 0x165667b1;

const rotl = (x: number, r: number) => (x << r) | (x >>> (32 - r));
const round = (acc: number, lane: number) => Math.imul(rotl((acc + Math.imul(lane, P2)) | 0, 13), P1);

/** xxHash-32 with seed 0 (the LZ4 frame format's checksum). */
export function xxh32(b: Uint8Array): number {
  const len = b.length;
  let i = 0;
  let h: number;
  if (len >= 16) {
    let v1 = (P1 + P2) | 0;
    let v2 = P2;
    let v3 = 0;
    let v4 = -P1 | 0;
    for (; i <= len - 16; i += 16) {
      v1 = round(v1, u32(b, i));
      v2 = round(v2, u32(b, i + 4));
      v3 = round(v3, u32(b, i + 8));
      v4 = round(v4, u32(b, i + 12));
    }
    h = (rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18)) | 0;
  } else {
    h = P5;
  }
  h = (h + len) | 0;
  for (; i + 4 <= len; i += 4) h = Math.imul(rotl((h + Math.imul(u32(b, i), P3)) | 0, 17), P4);
  for (; i < len; i++) h = Math.imul(rotl((h + Math.imul(b[i]!, P5)) | 0, 11), P1);
  h ^= h >>> 15;
  h = Math.imul(h, P2);
  h ^= h >>> 13;
  h = Math.imul(h, P3);
  h ^= h >>> 16;
  return h >>> 0;
}
