/**
 * `approverSigner(boundaryId)`: the human's signer for `recordApproval({ signer })` in an app,
 * unlocked by the approver passphrase typed at the app's terminal (docs/security.md). A thin,
 * lazy entry: the key store, node:crypto and canonicalize load when it is called, not at
 * `import 'agent-continuity'`.
 */
import type { ApproverSignerOptions } from '../authority/app-signer.js';
import type { ApprovalSigner } from './types.js';

export type { ApproverSignerOptions } from '../authority/app-signer.js';

/**
 * Asks the approver passphrase at this process's controlling terminal (showing the boundary and
 * key id first) and returns a signer of approvals for `boundaryId` only, for
 * `continuity.recordApproval(sessionId, { …, signer })`. The key is the one `continuity key init`
 * made in the user's configuration directory. Rejects, signing nothing, when there is no terminal,
 * no key store, a wrong passphrase or Ctrl-C. Call it from a human's action, never from the agent.
 */
export async function approverSigner(
  boundaryId: string,
  options?: ApproverSignerOptions,
): Promise<ApprovalSigner> {
  const { unlockApproverSigner } = await import('../authority/app-signer.js');
  return unlockApproverSigner(boundaryId, options);
}
