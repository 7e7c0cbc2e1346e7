/**
 * The configuration's seal: the digest of `.continuity/config.json` as the human last approved
 * it, signed with the approver key (`continuity config seal`, at a terminal), like the task
 * record's seal (./seal.ts).
 *
 * A configuration setting that relaxes the write gate (../adapters/core/config-relax.ts) is
 * obeyed only while the file's digest is the sealed one; otherwise the gate keeps the strict
 * default for it and the change is recorded as `config_changed`. The digest is the SHA-256 of the
 * file's canonical JSON (RFC 8785), so reformatting the file keeps the seal and any change of a
 * value does not. The seal lives beside the task record's (`<state>/seals/<project key>.config.json`,
 * 0600), outside the project, and is verified against the ledger's trusted approver keys every
 * time it is read.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import canonicalize from 'canonicalize';
import { projectKey, readSealFile, writeSealFile } from './seal.js';
import { SIGNED_KINDS, verifyStatement } from './signing.js';
import type { TrustedKeys } from './trust.js';

/** A configuration seal as stored. */
export interface ConfigSeal {
  /** The project it is for (a digest of its absolute path, never the path). */
  project: string;
  /** `sha256:<hex>` of the configuration file's canonical JSON. */
  configDigest: string;
  sealedAt: string;
  keyId: string;
  signature: string;
}

/** The digest a configuration seal covers: SHA-256 of the document's canonical JSON. */
export function configDigest(document: unknown): string {
  return `sha256:${createHash('sha256')
    .update(canonicalize(document) ?? 'null')
    .digest('hex')}`;
}

/** Where a project's configuration seal is kept. */
export function configSealPathOf(stateRoot: string, projectDir: string): string {
  return join(stateRoot, 'seals', `${projectKey(projectDir)}.config.json`);
}

/** The statement a configuration seal's signature covers. */
export function configSealStatement(s: Omit<ConfigSeal, 'signature'>): Record<string, unknown> {
  return {
    kind: SIGNED_KINDS.configSeal,
    project: s.project,
    configDigest: s.configDigest,
    sealedAt: s.sealedAt,
    keyId: s.keyId,
  };
}

/** What checking a configuration against its seal found. */
export type ConfigSealCheck =
  | { kind: 'sealed'; seal: ConfigSeal }
  /** No seal, a seal that does not verify, or a file changed since its seal: a literal code and words. */
  | {
      kind: 'not_sealed';
      code: 'config_unsealed' | 'config_seal_invalid' | 'config_changed';
      message: string;
    };

/**
 * Checks `document` (the configuration file as parsed) against the project's seal: `sealed` only
 * when a seal signed by a trusted key names this project and this document's digest. Never throws.
 */
export function checkConfigSeal(
  stateRoot: string,
  projectDir: string,
  document: unknown,
  trust: TrustedKeys,
): ConfigSealCheck {
  const read = readSealFile(configSealPathOf(stateRoot, projectDir));
  if (read.kind === 'absent')
    return { kind: 'not_sealed', code: 'config_unsealed', message: 'the configuration is not sealed' };
  if (read.kind === 'invalid')
    return { kind: 'not_sealed', code: 'config_seal_invalid', message: read.message };
  const seal = read.value as ConfigSeal;
  const invalid = (message: string): ConfigSealCheck => ({
    kind: 'not_sealed',
    code: 'config_seal_invalid',
    message,
  });
  if (seal?.project !== projectKey(projectDir))
    return invalid('the configuration seal is for another project');
  const key = typeof seal.keyId === 'string' ? trust.keys.get(seal.keyId) : undefined;
  if (!key) return invalid('the configuration seal is not signed by a trusted approver key');
  if (!verifyStatement(configSealStatement(seal), seal.signature, key))
    return invalid('the configuration seal signature does not verify');
  if (seal.configDigest !== configDigest(document))
    return {
      kind: 'not_sealed',
      code: 'config_changed',
      message: 'the configuration changed since its seal',
    };
  return { kind: 'sealed', seal };
}

/** Writes a project's configuration seal (0600, directory 0700), replaced whole. */
export function writeConfigSeal(stateRoot: string, projectDir: string, seal: ConfigSeal): void {
  writeSealFile(configSealPathOf(stateRoot, projectDir), seal);
}
