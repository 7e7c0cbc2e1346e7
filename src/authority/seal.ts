/**
 * The task record's seal: the digests of the task record's decisions as the human last approved
 * them, signed with the approver key (`continuity task seal`, at a terminal).
 *
 * The pre snapshot compares the task record with its seal: a record that no longer matches (an
 * agent's `sed -i` widening the scope, say) is not adopted. The pre snapshot keeps the sealed
 * digests, and the change is recorded as evidence of its own (`task_record_changed`). A project
 * that was never sealed keeps working as before, with the task record as it stands (the migration
 * path; `init` and the hooks say to seal).
 *
 * The seal lives in the state directory (`<state>/seals/<project key>.json`, 0600), outside the
 * project; it is verified against the ledger's trusted approver keys every time it is read, so
 * writing it is worth nothing without the passphrase. Deleting it returns the project to the
 * unsealed mode: seen as a `task_record_unsealed` note on every pre snapshot once a key is pinned.
 */
import { createHash } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { SIGNED_KINDS, verifyStatement } from './signing.js';
import type { TrustedKeys } from './trust.js';

/** A decision as sealed: its digest and revision, never its value. */
export interface SealedDecision {
  digest: string;
  revision: number;
}

/** A seal as stored. */
export interface TaskSeal {
  /** The project it is for (a digest of its absolute path, never the path). */
  project: string;
  decisions: Record<string, SealedDecision>;
  sealedAt: string;
  keyId: string;
  signature: string;
}

/** The key of a project directory: the first 128 bits of the SHA-256 of its absolute path. */
export function projectKey(projectDir: string): string {
  return createHash('sha256').update(projectDir).digest('hex').slice(0, 32);
}

/** Where a project's seal is kept. */
export function sealPathOf(stateRoot: string, projectDir: string): string {
  return join(stateRoot, 'seals', `${projectKey(projectDir)}.json`);
}

/** The statement a seal's signature covers. */
export function sealStatement(s: Omit<TaskSeal, 'signature'>): Record<string, unknown> {
  return {
    kind: SIGNED_KINDS.seal,
    project: s.project,
    decisions: s.decisions,
    sealedAt: s.sealedAt,
    keyId: s.keyId,
  };
}

/** What reading a seal found. */
export type SealRead =
  | { kind: 'absent' }
  | { kind: 'sealed'; seal: TaskSeal }
  | { kind: 'invalid'; message: string };

/** What reading a seal file found, before its signature is judged. */
export type SealFileRead =
  | { kind: 'absent' }
  | { kind: 'value'; value: unknown }
  | { kind: 'invalid'; message: string };

/** Reads a seal file as JSON (a small regular file only, never blocking). Never throws. */
export function readSealFile(file: string): SealFileRead {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'absent' };
    return { kind: 'invalid', message: 'the seal cannot be opened' };
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size > 64 * 1024)
      return { kind: 'invalid', message: 'the seal is not a small regular file' };
    return { kind: 'value', value: JSON.parse(readFileSync(fd, 'utf8')) as unknown };
  } catch {
    return { kind: 'invalid', message: 'the seal is not JSON' };
  } finally {
    closeSync(fd);
  }
}

/** Writes a seal file (0600, its directory 0700), replaced whole. */
export function writeSealFile(file: string, seal: object): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, `${JSON.stringify(seal, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  renameSync(tmp, file);
}

/** Reads and verifies a project's seal (a regular file only, never blocking). Never throws. */
export function readSeal(stateRoot: string, projectDir: string, trust: TrustedKeys): SealRead {
  const read = readSealFile(sealPathOf(stateRoot, projectDir));
  if (read.kind !== 'value') return read;
  const seal = read.value as TaskSeal;
  if (seal?.project !== projectKey(projectDir))
    return { kind: 'invalid', message: 'the seal is for another project' };
  const key = typeof seal.keyId === 'string' ? trust.keys.get(seal.keyId) : undefined;
  if (!key) return { kind: 'invalid', message: 'the seal is not signed by a trusted approver key' };
  if (!verifyStatement(sealStatement(seal), seal.signature, key))
    return { kind: 'invalid', message: 'the seal signature does not verify' };
  return { kind: 'sealed', seal };
}

/** Writes a project's seal (0600, directory 0700), replaced whole. */
export function writeSeal(stateRoot: string, projectDir: string, seal: TaskSeal): void {
  writeSealFile(sealPathOf(stateRoot, projectDir), seal);
}

/** True when the task record's decisions are the sealed ones (digest and revision, same names). */
export function matchesSeal(
  decisions: Readonly<Record<string, { digest: string; revision: number }>>,
  seal: TaskSeal,
): boolean {
  const names = Object.keys(decisions);
  if (names.length !== Object.keys(seal.decisions).length) return false;
  return names.every((n) => {
    const s = Object.hasOwn(seal.decisions, n) ? seal.decisions[n] : undefined;
    return s !== undefined && s.digest === decisions[n]!.digest && s.revision === decisions[n]!.revision;
  });
}
