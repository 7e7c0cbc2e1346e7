/**
 * Ledger constants shared by the write path and the lean read path. This file imports nothing,
 * so the Claude Code write gate can use it without loading zod, commander or OpenTelemetry.
 */

/** Format version written in every record's `v` field. */
export const LEDGER_FORMAT_VERSION = 1 as const;

/** The record types a ledger holds. */
export const RECORD_TYPES = [
  'snapshot',
  'approval',
  'classification',
  'evidence_missing',
  'boundary',
  'activity',
  'approver_key',
] as const;
/** One of {@link RECORD_TYPES}. */
export type RecordType = (typeof RECORD_TYPES)[number];

/** Which side of a compaction a snapshot (or a missing snapshot) belongs to. */
export const PHASES = ['pre', 'post'] as const;
/** One of {@link PHASES}. */
export type Phase = (typeof PHASES)[number];

/** What started a compaction. */
export const TRIGGERS = ['manual', 'auto'] as const;
/** One of {@link TRIGGERS}. */
export type Trigger = (typeof TRIGGERS)[number];

/**
 * Where a restatement (a post snapshot) came from: `context`, the agent's own context after the
 * compaction; `record`, the agent had read the task record or the ledger in this boundary before
 * it restated (the tool hooks saw it), so a match says the value was restored from the record,
 * not that it survived the summary. Also the values of `continuity.restatement.provenance`.
 */
export const PROVENANCES = ['context', 'record'] as const;
/** One of {@link PROVENANCES}. */
export type Provenance = (typeof PROVENANCES)[number];

/** Environment variable naming the ledger file (the `--ledger` flag wins over it). */
export const LEDGER_ENV = 'CONTINUITY_LEDGER';
/** Environment variable naming the chain key file (the `--chain-key-file` flag wins over it). */
export const CHAIN_KEY_FILE_ENV = 'CONTINUITY_CHAIN_KEY_FILE';

/** Mode of every file the ledger creates: owner read/write only. */
export const FILE_MODE = 0o600;
/** Mode of every directory the ledger creates: owner only. */
export const DIR_MODE = 0o700;

/**
 * Largest record line accepted, in bytes. A snapshot of a few decisions is well under 4 KiB; the
 * bound keeps one record from being a place to smuggle a payload and keeps tail reads short.
 */
export const MAX_RECORD_BYTES = 64 * 1024;
