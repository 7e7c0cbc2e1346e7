/**
 * The ledger's public surface. Explicit exports only. The lean read path (`latest.ts`) is also
 * importable on its own: `import { readLatestBoundary } from '<pkg>/dist/ledger/latest.js'` loads
 * no zod, commander or OpenTelemetry.
 */
export { ChainSchemeError, RecordTooLargeError } from './append.js';
export type { ApprovalRecordInput, ApprovalSide, CaptureInput } from './capture.js';
export { buildApproval, captureSnapshot, checkOpaqueId, DigestKeyRequiredError } from './capture.js';
export type { ChainKey } from './chain.js';
export { chainSchemeOf, createChainKey, recordHash } from './chain.js';
export type { ChainKeyOptions } from './chain-key.js';
export { ChainKeyError, loadChainKey } from './chain-key.js';
export type {
  ActivityEvidence,
  BoundaryEvidence,
  BoundaryReport,
  ClassificationReceipt,
  MissingEvidence,
  RecordLocation,
} from './evidence.js';
export { RecordShapeError } from './evidence.js';
export { LedgerFileError } from './files.js';
export type { LeakKind, LeakProblem } from './guard.js';
export { checkString, guardRecord } from './guard.js';
export { hashScheme } from './hash-scheme.js';
export type { LatestOptions, ReadPath } from './latest.js';
export {
  readAllLatestBoundaries,
  readBoundaryIdsOf,
  readLatestActivity,
  readLatestBoundary,
} from './latest.js';
export type { LedgerOptions } from './ledger.js';
export { Ledger, validateRecord } from './ledger.js';
export type { LockOptions } from './lock.js';
export { LockTimeoutError } from './lock.js';
export type { LedgerPathOptions, LedgerSidecars } from './paths.js';
export { resolveLedgerPath, sidecarPaths } from './paths.js';
export { classificationRecord, classifyEvidence, receiptIsCurrent } from './receipt.js';
export type { SpotCheckOptions, SpotProblem } from './spot-check.js';
export { spotCheck } from './spot-check.js';
export type {
  ActivityRecord,
  ApprovalRecord,
  BoundaryRecord,
  ClassificationRecord,
  EvidenceMissingRecord,
  NewRecord,
  SnapshotRecord,
  StoredRecord,
} from './records.js';
export { NewRecordSchema, StoredRecordSchema } from './records.js';
export type { Quarantined } from './tail.js';
export { LedgerCorruptError } from './tail.js';
export type { Phase, RecordType, Trigger } from './types.js';
export { CHAIN_KEY_FILE_ENV, LEDGER_ENV, PHASES, RECORD_TYPES, TRIGGERS } from './types.js';
export type { VerifyOptions, VerifyResult, VerifyWhy } from './verify.js';
export { VERIFY_WHYS, VerifyConfigError, verifyLedger } from './verify.js';
