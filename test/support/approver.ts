/**
 * A test approver: an Ed25519 key made in memory, standing in for the human's key where a test
 * is about something else than how an approval is signed (the ledger's reader, the correlator,
 * the page). How a person signs at a terminal is tested in test/authority/.
 */
import { generateKeyPairSync } from 'node:crypto';
import { certify } from '../../src/authority/key-store.js';
import { writePin } from '../../src/authority/pin.js';
import { approvalStatement, keyIdOf, publicKeyHex, signStatement } from '../../src/authority/signing.js';
import type { KeyCertificate } from '../../src/authority/trust.js';
import type { Approval } from '../../src/decision/model.js';
import type { ApprovalSigner } from '../../src/otel/types.js';

/** A test approver key. */
export interface TestApprover {
  keyId: string;
  /** The public key in hex, for `correlation.approverKeys`. */
  publicKeyHex: string;
  certificate: KeyCertificate;
  /** The approval with its proof for `boundaryId` in `sessionId`. */
  sign<T extends Approval>(
    approval: T,
    sessionId: string,
    boundaryId: string,
  ): T & Required<Pick<Approval, 'boundaryId' | 'keyId' | 'signature'>>;
  /** A signer for the extension's `recordApproval` (and the demo's replay), for one boundary. */
  signerFor(boundaryId: string): ApprovalSigner;
  /** The `approver_key` ledger record of its certificate (append it before the approvals). */
  keyRecord(): { type: 'approver_key' } & KeyCertificate;
  /** Writes the pin beside `ledgerPath` (with {@link keyRecord} appended, the ledger trusts it). */
  pin(ledgerPath: string): void;
}

/** Makes a test approver. */
export function testApprover(): TestApprover {
  const { privateKey } = generateKeyPairSync('ed25519');
  const keyId = keyIdOf(privateKey);
  const hex = publicKeyHex(privateKey);
  const certificate = certify(hex, '2026-11-30T00:00:00Z', null, privateKey);
  return {
    keyId,
    publicKeyHex: hex,
    certificate,
    sign: (approval, sessionId, boundaryId) => {
      const proof = { boundaryId, keyId };
      const signature = signStatement(approvalStatement({ ...approval, ...proof, sessionId }), privateKey);
      return { ...approval, ...proof, signature };
    },
    signerFor: (boundaryId) => ({
      boundaryId,
      keyId,
      sign: (statement) => signStatement(statement, privateKey),
    }),
    keyRecord: () => ({ type: 'approver_key', ...certificate }),
    pin: (ledgerPath) => writePin(ledgerPath, [certificate]),
  };
}

/**
 * The approver the service tests' spans are signed with (./../service/six-cases.ts), and that
 * `startServe` configures by default: one key per test process.
 */
export const SERVICE_TEST_APPROVER: TestApprover = testApprover();
