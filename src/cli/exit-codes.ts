/**
 * Exit codes of the `continuity` command, documented in docs/cli.md. Defined once.
 */
export const EXIT = {
  /** Success (for `classify`: the file was valid, whatever the states). */
  ok: 0,
  /** A check failed: `ledger verify` found a bad record. */
  checkFailed: 1,
  /** Bad input or usage: unreadable or invalid file, unknown option, a value the normalizer refuses. */
  badInput: 2,
  /** An environment failure: a file could not be written, a lock could not be taken. */
  environment: 3,
  /**
   * No human authority: a command that signs with the approver key (`approve`, `key`, `task seal`)
   * found no controlling terminal, the passphrase was wrong or cancelled, or the key is not the
   * one the ledger trusts. Nothing was recorded.
   */
  noHuman: 4,
} as const;

/** An error the CLI reports with its own exit code and message. */
export class CliError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode: number) {
    super(message);
    this.name = 'CliError';
    this.exitCode = exitCode;
  }
}
