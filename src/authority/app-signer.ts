/**
 * The approver's signer inside an app (the SDK extension's `recordApproval({ signer })`): the same
 * proof as `continuity approve` — the human's key from their key store (./key-store.ts), unlocked
 * by the passphrase typed at the app process's controlling terminal for this boundary
 * (./tty.ts), never taken from an argument, the environment or a file.
 *
 * Loaded only when an app asks for a signer (`approverSigner` in src/otel/extension.ts), so
 * `import 'agent-continuity'` stays light.
 */
import { OPAQUE_ID_PATTERN } from '../decision/rules.js';
import type { ApprovalSigner } from '../otel/types.js';
import { approverDir, KeyStoreError, readKeyStore, unlockKey } from './key-store.js';
import { keyIdOf, SIGNED_KINDS, signStatement } from './signing.js';
import { openTerminal } from './tty.js';

/** Where the key store is: the user's configuration directory unless told otherwise. */
export interface ApproverSignerOptions {
  /** Read for `XDG_CONFIG_HOME` and `HOME` (./key-store.ts `approverDir`). Default `process.env`. */
  env?: NodeJS.ProcessEnv;
}

/**
 * Asks the human at this process's terminal for the approver passphrase, showing the boundary and
 * key it unlocks for, and returns a signer that signs approval statements of that boundary only.
 * Rejects with `NoTerminalError` (no controlling terminal), `PromptAbortedError` (Ctrl-C) or
 * `KeyStoreError` (no key store, wrong passphrase): nothing is signed then.
 */
export async function unlockApproverSigner(
  boundaryId: string,
  options: ApproverSignerOptions = {},
): Promise<ApprovalSigner> {
  const what = 'approverSigner';
  if (typeof boundaryId !== 'string' || !OPAQUE_ID_PATTERN.test(boundaryId)) {
    throw new TypeError(
      `${what}: boundaryId must be the boundary's opaque id, as the continuity page shows it`,
    );
  }
  const store = readKeyStore(approverDir(options.env ?? process.env));
  if (!store) {
    throw new KeyStoreError(
      `${what}: no approver key; make one in your own terminal with \`continuity key init\``,
    );
  }
  const term = openTerminal(what);
  let key: ReturnType<typeof unlockKey>;
  try {
    term.say(
      `Approving a change of boundary ${boundaryId} with approver key ${store.chain.at(-1)?.keyId ?? '(unknown)'}.\n`,
    );
    key = unlockKey(store, await term.secret('Approver passphrase: '));
  } finally {
    term.close();
  }
  const keyId = keyIdOf(key);
  return {
    boundaryId,
    keyId,
    sign: (statement) => {
      // Only what was shown at the prompt: an approval of this boundary by this key.
      if (
        statement.kind !== SIGNED_KINDS.approval ||
        statement.boundaryId !== boundaryId ||
        statement.keyId !== keyId
      ) {
        throw new Error(`${what}: this signer signs approvals of boundary ${boundaryId} only`);
      }
      return signStatement(statement, key);
    },
  };
}
