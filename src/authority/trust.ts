/**
 * The approver key chain and its pin: which public keys an approval may be signed by.
 *
 * A key enters the chain by a certificate: the key, when it was made, the key before it, and a
 * signature. The first certificate is signed by its own key (trust on first use); every later one
 * must be signed by the key before it, so replacing the key needs the old passphrase. The chain a
 * ledger trusts is pinned beside it (`<ledger>.approvers.json`, 0600) when a human first uses a
 * key on it, and each certificate is also appended to the ledger as an `approver_key` record.
 *
 * The pin is a file the agent can write, like every file of the user: what makes a replacement
 * useless is that a certificate not signed by the pinned key before it breaks the chain here
 * (`approver_key_changed`), so keys after the break never count. A pin rewritten from scratch is
 * caught by `continuity ledger verify` against the ledger's own `approver_key` records, and never
 * by `continuity serve`, which trusts only the keys in its own configuration (docs/security.md).
 *
 * Imports node built-ins and lean local modules only: the gate's slow path reads the pin.
 */
import type { KeyObject } from 'node:crypto';
import { nodeFs } from './builtins.js';
import { KEY_ID_PATTERN } from './patterns.js';
import { approvalStatement, keyIdOfHex, publicKeyFromHex, SIGNED_KINDS, verifyStatement } from './signing.js';

/** One key of the approver chain, as pinned and as appended to the ledger. */
export interface KeyCertificate {
  keyId: string;
  /** The raw Ed25519 public key, 64 hex digits. */
  publicKey: string;
  createdAt: string;
  /** The key this one replaces, whose signature is `signature`; null for the first key. */
  previous: string | null;
  signature: string;
}

/** The code of a key chain that does not hold. */
export const KEY_CHANGED = 'approver_key_changed' as const;

/** How an approval's proof was judged. `signed` counts; every other value is an attempt. */
export type ApprovalProof = 'signed' | 'unsigned' | 'bad_signature' | 'unknown_key' | 'other_boundary';

/** The proof values that are attempts, for metrics and documentation. */
export const APPROVAL_ATTEMPT_RESULTS = [
  'unsigned',
  'bad_signature',
  'unknown_key',
  'other_boundary',
] as const satisfies readonly ApprovalProof[];

/** The keys a chain makes trusted, and what broke it. */
export interface TrustedKeys {
  /** Key id → public key, for every certificate up to the first that does not hold. */
  keys: ReadonlyMap<string, KeyObject>;
  /** The latest trusted key id, or null when nothing is trusted. */
  current: string | null;
  /** Why the chain stopped being trusted at some certificate (`approver_key_changed`), if it did. */
  broken?: { index: number; keyId: string; message: string };
}

/** No key trusted (no pin yet). */
export const NO_KEYS: TrustedKeys = Object.freeze({ keys: new Map(), current: null });

/** The statement a key certificate's signature covers. */
export function keyStatement(c: Omit<KeyCertificate, 'signature'>): Record<string, unknown> {
  return {
    kind: SIGNED_KINDS.key,
    keyId: c.keyId,
    publicKey: c.publicKey,
    createdAt: c.createdAt,
    previous: c.previous,
  };
}

function isCertificate(v: unknown): v is KeyCertificate {
  if (typeof v !== 'object' || v === null) return false;
  const c = v as Record<string, unknown>;
  return (
    typeof c.keyId === 'string' &&
    typeof c.publicKey === 'string' &&
    typeof c.createdAt === 'string' &&
    (c.previous === null || typeof c.previous === 'string') &&
    typeof c.signature === 'string'
  );
}

/**
 * Walks a chain of certificates (pure): the first must be self-signed, each later one signed by
 * the key before it. Trust stops at the first certificate that does not hold.
 */
export function evaluateChain(certs: readonly unknown[]): TrustedKeys {
  const keys = new Map<string, KeyObject>();
  let current: string | null = null;
  for (const [index, c] of certs.entries()) {
    const fail = (message: string): TrustedKeys => ({
      keys,
      current,
      broken: { index, keyId: isCertificate(c) ? c.keyId : '?', message },
    });
    if (!isCertificate(c)) return fail(`certificate ${index} is malformed`);
    const key = publicKeyFromHex(c.publicKey);
    if (!key || !KEY_ID_PATTERN.test(c.keyId) || keyIdOfHex(c.publicKey) !== c.keyId) {
      return fail(`certificate ${index} (${c.keyId}): the key id does not match its public key`);
    }
    if (c.previous !== current) {
      return fail(
        current === null
          ? `certificate ${index} (${c.keyId}) names a previous key, but it is the first of the chain`
          : `certificate ${index} (${c.keyId}) does not follow the pinned key ${current}`,
      );
    }
    const signer = current === null ? key : keys.get(current)!;
    if (!verifyStatement(keyStatement(c), c.signature, signer)) {
      return fail(
        current === null
          ? `certificate ${index} (${c.keyId}) is not signed by its own key`
          : `certificate ${index} (${c.keyId}) is not signed by the pinned key ${current}: a key replaced without the old passphrase`,
      );
    }
    keys.set(c.keyId, key);
    current = c.keyId;
  }
  return { keys, current };
}

/** The approval fields its proof is judged on (a ledger record or a span's approval). */
export interface ApprovalWithProof {
  sessionId: string;
  decision: string;
  fromDigest: string;
  toDigest: string;
  approvalRef: string;
  approvedBy: string;
  approvedAt: string;
  boundaryId?: string | undefined;
  keyId?: string | undefined;
  signature?: string | undefined;
}

/**
 * Judges one approval (pure): `signed` only with a valid signature, by a trusted key, over the
 * approval's own fields and the boundary it counts for (`boundaryId`, when the reader knows it).
 */
export function judgeApproval(a: ApprovalWithProof, trust: TrustedKeys, boundaryId?: string): ApprovalProof {
  if (a.signature === undefined || a.keyId === undefined || a.boundaryId === undefined) return 'unsigned';
  const key = trust.keys.get(a.keyId);
  if (!key) return 'unknown_key';
  const statement = approvalStatement({ ...a, boundaryId: a.boundaryId, keyId: a.keyId });
  if (!verifyStatement(statement, a.signature, key)) return 'bad_signature';
  if (boundaryId !== undefined && a.boundaryId !== boundaryId) return 'other_boundary';
  return 'signed';
}

/** The pin file of a ledger. */
export function pinPathOf(ledgerPath: string): string {
  return `${ledgerPath}.approvers.json`;
}

/** Largest pin file read: a chain of a few hundred keys. */
const MAX_PIN_BYTES = 256 * 1024;

/** What reading a pin found. */
export type PinRead =
  | { kind: 'absent' }
  | { kind: 'pinned'; certificates: unknown[] }
  | { kind: 'unreadable'; message: string };

/**
 * Reads the pin beside a ledger, as a regular file only (no link, FIFO or device; opened
 * non-blocking, so a FIFO planted there cannot hold the reader). Never throws.
 */
export function readPin(ledgerPath: string): PinRead {
  const file = pinPathOf(ledgerPath);
  const { closeSync, constants, fstatSync, openSync, readFileSync } = nodeFs();
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { kind: 'absent' };
    return { kind: 'unreadable', message: `cannot open (${code ?? 'error'})` };
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return { kind: 'unreadable', message: 'not a regular file' };
    if (st.size > MAX_PIN_BYTES) return { kind: 'unreadable', message: 'larger than a pin can be' };
    const doc = JSON.parse(readFileSync(fd, 'utf8')) as unknown;
    const keys = (doc as { keys?: unknown } | null)?.keys;
    if (!Array.isArray(keys)) return { kind: 'unreadable', message: 'expected {"v":1,"keys":[…]}' };
    return { kind: 'pinned', certificates: keys };
  } catch (e) {
    return { kind: 'unreadable', message: e instanceof SyntaxError ? 'not valid JSON' : 'cannot read' };
  } finally {
    closeSync(fd);
  }
}

/**
 * The keys trusted for approvals in the ledger at `ledgerPath` (pure but for reading the pin):
 * the chain of the ledger's own `approver_key` records, checked against the pin beside it. The
 * two are written together by a human's command; when they disagree (a certificate of one is not
 * the other's, or the pin names more than the ledger holds) nothing is trusted and the break is
 * reported as `approver_key_changed`. An unreadable pin trusts nothing either. Never throws.
 *
 * `roots` (from `approverRootsOf`, ./patterns.ts) anchors the chain outside the ledger: when given, the
 * chain counts only if its first key is one of them. The ledger and its pin are files the agent
 * can write whole (its own first key, a forged history); the environment a runtime was started
 * with is not, for as long as that runtime runs.
 */
export function trustedKeysOf(
  ledgerPath: string,
  ledgerCertificates: readonly unknown[],
  roots: readonly string[] = [],
): TrustedKeys & { pin: PinRead['kind'] } {
  const first = ledgerCertificates[0] as Partial<KeyCertificate> | undefined;
  if (roots.length > 0 && first !== undefined && !roots.includes(String(first?.keyId))) {
    const keyId = typeof first?.keyId === 'string' ? first.keyId : '?';
    return {
      ...NO_KEYS,
      pin: readPin(ledgerPath).kind,
      broken: {
        index: 0,
        keyId,
        message: `${KEY_CHANGED}: the ledger's first approver key ${keyId} is not one this run trusts (CONTINUITY_APPROVER_KEYS); no approval counts until a human looks`,
      },
    };
  }
  const pin = readPin(ledgerPath);
  if (pin.kind === 'unreadable') {
    return {
      ...NO_KEYS,
      pin: pin.kind,
      broken: { index: 0, keyId: '?', message: `the approver pin beside the ledger: ${pin.message}` },
    };
  }
  if (pin.kind === 'pinned') {
    const pinned = pin.certificates;
    const differs = pinned.findIndex((c, i) => {
      const l = ledgerCertificates[i] as Partial<KeyCertificate> | undefined;
      const p = c as Partial<KeyCertificate> | null;
      return !l || !p || l.keyId !== p.keyId || l.signature !== p.signature;
    });
    if (differs !== -1) {
      const p = pinned[differs] as Partial<KeyCertificate> | null;
      return {
        ...NO_KEYS,
        pin: pin.kind,
        broken: {
          index: differs,
          keyId: typeof p?.keyId === 'string' ? p.keyId : '?',
          message: `${KEY_CHANGED}: the approver pin beside the ledger and the ledger's approver_key records disagree at certificate ${differs}; no approval counts until a human looks`,
        },
      };
    }
  }
  return { ...evaluateChain(ledgerCertificates), pin: pin.kind };
}
