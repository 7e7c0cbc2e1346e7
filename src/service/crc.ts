/**
 * The CRC-32 checksums the service computes: IEEE (the journal's and snapshot's line checksum;
 * node:zlib's `crc32` where the runtime has it, Node 20.15 and 22.2 on) and Castagnoli (CRC-32C,
 * the snappy framing format's, which node:zlib does not offer), both table-driven, reflected.
 */
import * as zlib from 'node:zlib';

/** The lookup table of a reflected CRC-32 with polynomial `poly` (bit-reversed form). */
function reflectedTable(poly: number): Uint32Array {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ poly : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
}

function tableCrc(table: Uint32Array, data: Uint8Array): number {
  let crc = 0xffff_ffff;
  for (let i = 0; i < data.length; i++) crc = table[(crc ^ data[i]!) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffff_ffff) >>> 0;
}

const CRC32_TABLE = reflectedTable(0xedb88320);
const CRC32C_TABLE = reflectedTable(0x82f63b78);

/** CRC-32 (IEEE) by the table, whatever node:zlib has (the fallback, and for tests). */
export function crc32ByTable(data: Uint8Array): number {
  return tableCrc(CRC32_TABLE, data);
}

// A namespace import: a named import of `crc32` would not load at all where node:zlib lacks it.
const zlibCrc32 = (zlib as { crc32?: (data: Uint8Array) => number }).crc32;

/** CRC-32 (IEEE): node:zlib's where it has one, else {@link crc32ByTable}. */
export const crc32: (data: Uint8Array) => number = zlibCrc32 ? (d) => zlibCrc32(d) : crc32ByTable;

/** CRC-32C (Castagnoli) of the data. */
export function crc32c(data: Uint8Array): number {
  return tableCrc(CRC32C_TABLE, data);
}
