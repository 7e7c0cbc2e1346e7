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
} as const;
