/**
 * `verify`: checks every record and the chain, and names the first bad seq and why.
 *
 * Per line, in order: whole (ends with a newline, else `torn`); JSON; `seq` is the next one
 * (a later seq is `removed` or, when the missing seq appears further on, `reordered`; an earlier
 * one is `duplicated`); the line is the canonical JSON of its record (else `edited`: a hand edit);
 * the hash scheme is the ledger's (a change is a rewrite without the key: `edited`); the hash
 * matches the content (`edited`); `prev` is the previous record's hash (else the previous record
 * was edited and its hash recomputed: `edited` at that seq); the record fits its schema and the
 * leak guard (`invalid`). The record the head file names must still carry the hash the head
 * recorded (else `edited`: rewritten with its hash recomputed), and a ledger that ends before the
 * head's seq (or before the last seq its own index saw) is `removed` at the tail. A head file that
 * is not a head record is reported as `head`.
 *
 * Limits: without a chain key, whoever can write the file can rewrite every hash from the edited
 * record onward (the head then shows the rewrite only if it was not rewritten too), and removing
 * the last records leaves no trace when the head file is deleted or rewritten as well. With a
 * chain key kept outside the agent's reach, records cannot be rewritten without the key; removing
 * the tail together with the head stays undetectable (docs/ledger.md, Security).
 */
import { closeSync, constants, existsSync, fstatSync } from 'node:fs';
import { type ChainKey, canonicalBodyOf, chainSchemeOf, hashCanonical } from './chain.js';
import { type LedgerFileError, onFile, openNoFollow } from './files.js';
import { guardRecord } from './guard.js';
import { hashScheme } from './hash-scheme.js';
import { describeMismatch, type HeadRead, readHead } from './head.js';
import { sidecarPaths } from './paths.js';
import { StoredRecordSchema } from './records.js';
import { forEachLine, type LedgerLine, parseRecordLine } from './scan.js';
import { inodeOf, readCovered } from './session-index.js';

/** Why a record failed verification. */
export type VerifyWhy =
  | 'edited'
  | 'removed'
  | 'reordered'
  | 'duplicated'
  | 'torn'
  | 'invalid'
  | 'unkeyed'
  | 'head';

/** Every {@link VerifyWhy}, for documentation and checks. */
export const VERIFY_WHYS: readonly VerifyWhy[] = [
  'edited',
  'removed',
  'reordered',
  'duplicated',
  'torn',
  'invalid',
  'unkeyed',
  'head',
];

/** The result of verifying a ledger. */
export type VerifyResult =
  | {
      ok: true;
      /** How many records were checked. */
      records: number;
      /** The last seq (0 for an empty ledger). */
      lastSeq: number;
      /** The chain scheme: `sha256` or `hmac-sha256:<keyId>` (`none` when empty). */
      scheme: string;
      /** How many torn tails were moved to the quarantine file over the ledger's life. */
      quarantined: number;
      /**
       * `checked`: the head file names a record the ledger holds, so no record was removed from
       * the end since it was written. `absent`: no head file yet (a ledger written before it
       * existed, until its next append), so a removed tail could not be checked.
       */
      head: 'checked' | 'absent';
      seq?: never;
      why?: never;
    }
  | {
      ok: false;
      /** The first bad seq. */
      seq: number;
      why: VerifyWhy;
      /** One sentence naming what was found. */
      message: string;
      /** 1-based line number in the file where the problem was found. */
      line: number;
      records?: never;
    };

/** Verification options. */
export interface VerifyOptions {
  /** The chain key; required for an HMAC-chained ledger. Default none (plain SHA-256). */
  chainKey?: ChainKey | undefined;
}

/** The ledger cannot be verified as configured (no ledger, or the chain key is missing or another). */
export class VerifyConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'VerifyConfigError';
  }
}

type Rec = Record<string, unknown>;

function countQuarantined(ledgerPath: string): number {
  const q = sidecarPaths(ledgerPath).quarantine;
  if (!existsSync(q)) return 0;
  let n = 0;
  const fd = openNoFollow(q, constants.O_RDONLY);
  try {
    forEachLine(fd, (l) => {
      if (l.complete && l.text.length > 0) n++;
    });
  } finally {
    closeSync(fd);
  }
  return n;
}

/** Looks for a record with `seq` after `from` (a reordering, rather than a removal). */
function seqAppearsAfter(fd: number, from: number, seq: number): boolean {
  let found = false;
  const needle = `"seq":${seq},`;
  forEachLine(
    fd,
    (l) => {
      if (!l.complete || !l.text.includes(needle)) return;
      try {
        if ((JSON.parse(l.text) as Rec).seq === seq) {
          found = true;
          return false;
        }
      } catch {
        // Not a record; keep looking.
      }
    },
    from,
  );
  return found;
}

/**
 * Verifies the ledger at `ledgerPath`. Returns the first problem, or a summary when intact.
 * Throws {@link VerifyConfigError} when the ledger is missing or HMAC-chained under a key that
 * is not configured. Read-only: a torn tail is reported, not repaired.
 */
export function verifyLedger(ledgerPath: string, options: VerifyOptions = {}): VerifyResult {
  let fd: number;
  try {
    fd = openNoFollow(ledgerPath, constants.O_RDONLY);
  } catch (e) {
    if ((e as LedgerFileError).code === 'ENOENT') {
      throw new VerifyConfigError(
        `ledger ${ledgerPath}: no such file; pass --ledger PATH or set CONTINUITY_LEDGER`,
      );
    }
    throw e;
  }
  try {
    // The head first: it is written after the ledger, so it never names a record not yet there.
    const head = readHead(sidecarPaths(ledgerPath).head);
    return onFile(ledgerPath, 'read', () => verifyOpen(fd, ledgerPath, options.chainKey, head));
  } finally {
    closeSync(fd);
  }
}

function verifyOpen(fd: number, ledgerPath: string, key: ChainKey | undefined, head: HeadRead): VerifyResult {
  const headFile = sidecarPaths(ledgerPath).head;
  const configured = chainSchemeOf(key);
  let scheme: string | undefined;
  let expected = 1;
  let prevHash: string | null = null;
  let lineNo = 0;
  let failure: Extract<VerifyResult, { ok: false }> | undefined;
  const fail = (seq: number, why: VerifyWhy, message: string): false => {
    failure = { ok: false, seq, why, message, line: lineNo };
    return false;
  };

  forEachLine(fd, (l: LedgerLine) => {
    lineNo++;
    if (!l.complete) {
      return fail(
        expected,
        'torn',
        `${l.length} bytes at offset ${l.offset} are not a whole record (a write torn by a crash); opening the ledger for writing moves them to ${sidecarPaths(ledgerPath).quarantine}`,
      );
    }
    const rec = parseRecordLine(l.text);
    if (!rec) return fail(expected, 'edited', `line ${lineNo} is not a JSON record`);
    const seq = rec.seq;
    if (typeof seq !== 'number' || !Number.isSafeInteger(seq)) {
      return fail(expected, 'edited', `line ${lineNo} has no integer seq`);
    }
    if (seq < expected) {
      return fail(
        seq,
        'duplicated',
        `seq ${seq} appears again on line ${lineNo}, where seq ${expected} was expected`,
      );
    }
    if (seq > expected) {
      const later = seqAppearsAfter(fd, l.offset + l.length, expected);
      return later
        ? fail(
            expected,
            'reordered',
            `line ${lineNo} holds seq ${seq} where seq ${expected} was expected; seq ${expected} appears later`,
          )
        : fail(
            expected,
            'removed',
            `line ${lineNo} holds seq ${seq} where seq ${expected} was expected; ${seq - expected === 1 ? `seq ${expected} is` : `seqs ${expected}..${seq - 1} are`} missing`,
          );
    }
    const body = canonicalBodyOf(rec, l.text);
    if (body === undefined) {
      return fail(seq, 'edited', 'the line is not the canonical JSON of its record (changed by hand)');
    }
    const s = hashScheme(rec.hash);
    if (s === undefined) return fail(seq, 'edited', 'the hash is missing or malformed');
    if (scheme === undefined) {
      scheme = s;
      if (s !== configured) {
        if (configured === 'sha256') {
          throw new VerifyConfigError(
            `ledger ${ledgerPath}: chained with ${s}; set CONTINUITY_CHAIN_KEY_FILE or pass --chain-key-file with the key of id ${s.split(':')[1]}`,
          );
        }
        if (s !== 'sha256') {
          throw new VerifyConfigError(
            `ledger ${ledgerPath}: chained with ${s}, but the configured key is ${configured}; use the key of id ${s.split(':')[1]}`,
          );
        }
        return fail(
          seq,
          'unkeyed',
          'the chain is plain SHA-256 although a chain key is configured: the ledger was rewritten without the key, or started before the key was set',
        );
      }
    } else if (s !== scheme) {
      return fail(
        seq,
        'edited',
        `the hash scheme changes from ${scheme} to ${s} (rewritten without the key)`,
      );
    }
    if (hashCanonical(body, key) !== rec.hash) {
      return fail(seq, 'edited', 'the hash does not match the record (content changed)');
    }
    if (rec.prev !== prevHash) {
      return seq === 1
        ? fail(seq, 'edited', 'the first record must have prev null')
        : fail(
            seq - 1,
            'edited',
            `seq ${seq}'s prev does not match the hash of seq ${seq - 1}: seq ${seq - 1} was changed and its hash recomputed (or seq ${seq}'s prev was altered)`,
          );
    }
    const parsed = StoredRecordSchema.safeParse(rec);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return fail(
        seq,
        'invalid',
        `the record does not fit its schema (${issue?.path.join('.') || '(root)'}: ${issue?.message})`,
      );
    }
    const leaks = guardRecord(rec);
    if (leaks.length > 0) {
      return fail(seq, 'invalid', `${leaks[0]!.path}: ${leaks[0]!.message}`);
    }
    if (head.kind === 'head' && seq === head.head.seq && rec.hash !== head.head.hash) {
      return fail(
        seq,
        'edited',
        `the record's hash is not the one ${headFile} recorded for seq ${seq}: the record was rewritten and its hash recomputed`,
      );
    }
    prevHash = rec.hash as string;
    expected++;
    return undefined;
  });
  if (failure) return failure;

  const lastSeq = expected - 1;
  if (head.kind === 'malformed') {
    return {
      ok: false,
      seq: lastSeq,
      why: 'head',
      message: describeMismatch(headFile, head, { seq: lastSeq }),
      line: lineNo,
    };
  }
  if (head.kind === 'head' && head.head.seq > lastSeq) {
    return {
      ok: false,
      seq: lastSeq + 1,
      why: 'removed',
      message: describeMismatch(headFile, head, { seq: lastSeq }),
      line: lineNo + 1,
    };
  }
  const covered = readCovered(sidecarPaths(ledgerPath).indexDir);
  if (covered && covered.ino === inodeOf(fd) && covered.seq > lastSeq) {
    lineNo++;
    return {
      ok: false,
      seq: lastSeq + 1,
      why: 'removed',
      message: `the ledger ends at seq ${lastSeq} (${fstatSync(fd).size} bytes) but its index saw seq ${covered.seq}: the last records were removed`,
      line: lineNo,
    };
  }
  return {
    ok: true,
    records: lastSeq,
    lastSeq,
    scheme: scheme ?? 'none',
    quarantined: countQuarantined(ledgerPath),
    head: head.kind === 'head' ? 'checked' : 'absent',
  };
}
