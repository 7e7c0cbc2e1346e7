/**
 * The demo's approver: an Ed25519 key pair made in memory for one `npm run demo` run, standing in
 * for the human who approved the fixture's change. Demo only: nothing writes it to a file, no
 * ledger pins it, and the only service that trusts it is the demo's own in-process
 * `continuity serve`, whose configuration is given its public key. Outside the demo an approval
 * counts only when signed with a person's key at a terminal (docs/security.md).
 */
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { keyIdOf, publicKeyHex, signStatement } from '../authority/signing.js';
import type { ApprovalSigner } from '../otel/types.js';

/** The demo's in-memory approver. */
export interface DemoApprover {
  /** Its public key, for the demo service's `correlation.approverKeys`. */
  publicKeyHex: string;
  /** A signer for one boundary's approvals. */
  signerFor(boundaryId: string): ApprovalSigner;
}

/** Makes the demo's approver for this run. */
export function demoApprover(): DemoApprover {
  const { privateKey } = generateKeyPairSync('ed25519');
  const keyId = keyIdOf(privateKey);
  const key: KeyObject = privateKey;
  return {
    publicKeyHex: publicKeyHex(key),
    signerFor: (boundaryId) => ({ boundaryId, keyId, sign: (statement) => signStatement(statement, key) }),
  };
}
