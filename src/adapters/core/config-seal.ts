/**
 * The configuration's seal on the hook path: whether a relaxing configuration is obeyed.
 *
 * `loadConfig` (./config.ts) finds, by pure comparison, the settings of the configuration file
 * that relax the gate (./config-relax.ts) and keeps the strict default for each until this module
 * has verified the human's seal (../../authority/config-seal.ts). It is loaded only then: by the
 * gate when the strict defaults object to a tool call (a relaxation can only matter then), and by
 * the pre capture, which records an unsealed relaxation as `config_changed`. It verifies with
 * node:crypto, so it is a bundle of its own (`dist/hook-config-seal.cjs`), never on the gate's
 * fast path.
 */
import { type ConfigSealCheck, checkConfigSeal } from '../../authority/config-seal.js';
import { NO_KEYS, type TrustedKeys, trustedKeysOf } from '../../authority/trust.js';
import { readApproverKeyRecords } from '../../ledger/latest.js';
import type { AdapterConfig, UnsealedConfig } from './config.js';
import type { GateAnswer } from './events.js';

/** The evidence reason of a configuration that relaxes the gate without a valid seal. */
export const CONFIG_CHANGED = 'config_changed' as const;

/** Checks the configuration file of `config` against the human's seal. Never throws. */
export function checkConfig(config: AdapterConfig, unsealed: UnsealedConfig): ConfigSealCheck {
  const ledgerPath = config.env.ledgerPath;
  let trust: TrustedKeys = NO_KEYS;
  try {
    trust = trustedKeysOf(ledgerPath, readApproverKeyRecords(ledgerPath), config.env.approverRoots);
  } catch {
    // An unreadable ledger trusts no key: the seal then does not verify, and the strict defaults hold.
  }
  return checkConfigSeal(config.env.stateRoot, config.projectDir, unsealed.document, trust);
}

/** The words for a relaxation that is not obeyed: which settings, why, and what the human does. */
export function configChangedWords(unsealed: UnsealedConfig, check: ConfigSealCheck): string {
  if (check.kind === 'sealed') return '';
  const what = unsealed.relaxations.map((r) => `${r.setting} (${r.effect})`).join(', ');
  return `The configuration ${unsealed.label} relaxes the gate (${what}), and ${check.message} (${CONFIG_CHANGED}): the strict defaults apply. If a human made this change, they run \`continuity config seal\` in their own terminal.`;
}

/**
 * The gate's answer under the configuration's seal. `strict` is the answer with the strict
 * defaults (an objection); `decide` decides again with a given configuration. With a valid seal
 * the file's settings are obeyed and the answer is decided again; without one the strict answer
 * stands and its reason says why. Never throws.
 */
export async function gateUnderSeal(
  strict: GateAnswer,
  config: AdapterConfig,
  decide: (config: AdapterConfig) => Promise<GateAnswer>,
): Promise<GateAnswer> {
  const unsealed = config.unsealed;
  if (!unsealed || strict.verdict === 'allow') return strict;
  const check = checkConfig(config, unsealed);
  if (check.kind === 'sealed') {
    const { unsealed: _sealed, ...rest } = config;
    return decide({ ...rest, gate: unsealed.gate });
  }
  return { ...strict, reason: `${strict.reason} ${configChangedWords(unsealed, check)}` };
}

/**
 * The configuration with its file's relaxations obeyed when the seal verifies, else as loaded
 * (the strict defaults), with what the check found. For commands that show the configuration.
 */
export function sealedConfig(config: AdapterConfig): { config: AdapterConfig; check?: ConfigSealCheck } {
  const unsealed = config.unsealed;
  if (!unsealed) return { config };
  const check = checkConfig(config, unsealed);
  if (check.kind !== 'sealed') return { config, check };
  const { unsealed: _sealed, ...rest } = config;
  return { config: { ...rest, gate: unsealed.gate }, check };
}
