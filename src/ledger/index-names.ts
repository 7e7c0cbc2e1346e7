/**
 * The names and the small fixed formats of the per-session index (`<ledger>.index/`, see
 * ./session-index.ts), apart from its reader and writer: the write gate's fast path checks, with
 * two `stat`s and one small read, whether anything was recorded for a session since its cache was
 * derived, and must not load the index's reader to do it.
 *
 * Pure; imports only `node:path`.
 */
import { join } from 'node:path';

/** The file naming the last record whose index entries are written. */
export const COVERED_FILE = 'covered';

/** The index directory of the ledger at `ledgerPath`. */
export function indexDirOf(ledgerPath: string): string {
  return `${ledgerPath}.index`;
}

/** A short, non-cryptographic hash of a session id for file names (FNV-1a and djb2, 32 bits each). */
export function sessionFileKey(sessionId: string): string {
  let fnv = 0x811c9dc5;
  let djb = 5381;
  for (let i = 0; i < sessionId.length; i++) {
    const c = sessionId.charCodeAt(i);
    fnv = Math.imul(fnv ^ c, 0x01000193) >>> 0;
    djb = (Math.imul(djb, 33) + c) >>> 0;
  }
  return fnv.toString(16).padStart(8, '0') + djb.toString(16).padStart(8, '0');
}

/** Which file of a session: its evidence entries, its activity entries, or its boundaries. */
export type IndexFamily = 'evidence' | 'activity' | 'boundaries';

const FAMILY_PREFIX: Record<IndexFamily, string> = { evidence: 's', activity: 'a', boundaries: 'b' };

/** The index file holding a session's entries of one family. */
export function indexFile(indexDir: string, family: IndexFamily, sessionId: string): string {
  return join(indexDir, `${FAMILY_PREFIX[family]}-${sessionFileKey(sessionId)}.idx`);
}

/** The last record whose index entries are written, in which boot, for which file. */
export interface Covered {
  seq: number;
  end: number;
  /** Its hash's last 16 hex digits. */
  hashPrefix: string;
  boot: string;
  ino: string;
}

/** Parses the text of `covered`; undefined when it is malformed or of an earlier format. */
export function parseCovered(text: string): Covered | undefined {
  const m = /^v2 +(\S+) +(\d+) +(\d+) +(\d+) +([0-9a-f]{16})\n/.exec(text);
  if (!m) return undefined;
  return { boot: m[1]!, ino: m[2]!, seq: Number(m[3]), end: Number(m[4]), hashPrefix: m[5]! };
}
