/**
 * Reading ledger lines in order, in bounded memory: the one loop behind `verify`, index rebuilds,
 * the full-scan fallback of the lean reader and `status` over all sessions.
 *
 * Imports only node built-ins.
 */
import { readSync } from 'node:fs';

/** One line of the ledger, without its newline. */
export interface LedgerLine {
  /** Byte offset of the line's first byte. */
  offset: number;
  /** Length in bytes including the newline (0 bytes missing when `complete` is false). */
  length: number;
  /** The line's text, decoded as UTF-8. */
  text: string;
  /** False for trailing bytes not ended by a newline (a torn record). */
  complete: boolean;
}

const CHUNK = 1 << 20;

/** A line's JSON object, or undefined when it is not JSON or not an object. */
export function parseRecordLine(text: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(text) as unknown;
    return v !== null && typeof v === 'object' && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Calls `onLine` for every line of `fd` between byte offsets `from` and `to` (default: the whole
 * file as it is now). `from` must be the start of a line. Trailing bytes without a newline are
 * reported once with `complete: false`. Return `false` from `onLine` to stop early.
 */
export function forEachLine(
  fd: number,
  onLine: (line: LedgerLine) => unknown,
  from = 0,
  to = Number.POSITIVE_INFINITY,
): void {
  const buf = Buffer.allocUnsafe(CHUNK);
  let carry: Buffer | undefined;
  let carryOffset = from;
  let pos = from;
  while (pos < to) {
    const n = readSync(fd, buf, 0, Math.min(CHUNK, to - pos), pos);
    if (n === 0) break;
    pos += n;
    let data = buf.subarray(0, n);
    let dataOffset = pos - n;
    if (carry) {
      data = Buffer.concat([carry, data]);
      dataOffset = carryOffset;
      carry = undefined;
    }
    let start = 0;
    for (;;) {
      const nl = data.indexOf(0x0a, start);
      if (nl === -1) break;
      const line: LedgerLine = {
        offset: dataOffset + start,
        length: nl + 1 - start,
        text: data.toString('utf8', start, nl),
        complete: true,
      };
      if (onLine(line) === false) return;
      start = nl + 1;
    }
    if (start < data.length) {
      // Copy: `buf` is reused by the next read.
      carry = Buffer.from(data.subarray(start));
      carryOffset = dataOffset + start;
    }
  }
  if (carry && carry.length > 0) {
    onLine({ offset: carryOffset, length: carry.length, text: carry.toString('utf8'), complete: false });
  }
}
