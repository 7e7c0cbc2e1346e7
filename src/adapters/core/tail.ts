/**
 * The tail of a runtime's own record file (an event log, a transcript), read locally by a hook:
 * opened as a regular file only, without following a link or blocking, and read from its end.
 *
 * Lean: node built-ins only (the gate's bundle holds it).
 */
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';

/** The last `max` bytes of a regular file (no FIFO, device or link; never blocks), or `undefined`. */
export function readTail(path: string, max: number): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch {
    return undefined;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return undefined;
    const length = Math.min(st.size, max);
    const buf = Buffer.alloc(length);
    let read = 0;
    while (read < length) {
      const n = readSync(fd, buf, read, length - read, st.size - length + read);
      if (n === 0) break;
      read += n;
    }
    return buf.subarray(0, read).toString('utf8');
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}
