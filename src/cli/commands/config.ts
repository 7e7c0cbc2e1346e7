/**
 * `continuity config seal [--project DIR]`: the human seals the project's configuration file: its
 * digest, signed with the approver key (the passphrase typed at the terminal). A setting of the
 * file that relaxes the write gate (a gated tool left out, a state routed to a milder verdict,
 * unknown tools allowed, the guard of the continuity files off) is obeyed only while the file is
 * the sealed one; the hooks otherwise keep the strict default for it and record `config_changed`
 * (docs/security.md). Run it again after changing the configuration yourself.
 */
import { join, relative, resolve } from 'node:path';
import type { Command } from 'commander';
import { DEFAULT_GATED_TOOLS } from '../../adapters/claude-code/config.js';
import { DEFAULT_CONFIG_FILE, loadConfig, MAX_CONFIG_BYTES, resolveEnv } from '../../adapters/core/config.js';
import { isRecord, readJsonState } from '../../adapters/core/state.js';
import { configDigest, configSealStatement, writeConfigSeal } from '../../authority/config-seal.js';
import { projectKey } from '../../authority/seal.js';
import { signStatement } from '../../authority/signing.js';
import { InputError } from '../../decision/problems.js';
import { formatRfc3339Utc } from '../../decision/time.js';
import { atTerminal, recordNewCertificates, unlockForLedger } from './human.js';
import { addLedgerOptions, chainKeyOf, type LedgerFlags, ledgerPathOf } from './ledger-options.js';

interface SealFlags extends LedgerFlags {
  project?: string;
}

/** Registers `continuity config`. */
export function registerConfig(program: Command): void {
  const config = program.command('config').description("the project's configuration, as the human keeps it");
  addLedgerOptions(
    config
      .command('seal')
      .description(
        'seal .continuity/config.json with the approver key (passphrase typed at this terminal), so the hooks obey the settings in it that relax the write gate',
      )
      .option('--project <dir>', 'the project directory (default: the current directory)'),
  ).action(async (opts: SealFlags) => {
    const projectDir = resolve(opts.project ?? '.');
    const env = resolveEnv(process.env);
    const file = env.configFile ?? join(projectDir, DEFAULT_CONFIG_FILE);
    const label = relative(projectDir, file) || file;
    // What is sealed is the file as parsed (an absent file is `{}`); what it relaxes is named
    // against Claude Code's gated tools, the longest list.
    const read = readJsonState(file, MAX_CONFIG_BYTES, true);
    if (read.kind === 'unreadable' || (read.kind === 'value' && !isRecord(read.value)))
      throw new InputError('config seal', [
        { path: label, message: 'expected a JSON object in a regular file; fix the file first' },
      ]);
    const document = read.kind === 'value' ? (read.value as Record<string, unknown>) : {};
    const { config: forRuntime } = loadConfig(projectDir, env, {
      runtime: 'cli',
      gatedTools: DEFAULT_GATED_TOOLS,
    });
    const digest = configDigest(document);
    const now = formatRfc3339Utc(Date.now());
    const relaxed = forRuntime.unsealed?.relaxations ?? [];
    const path = ledgerPathOf(opts);
    const sealed = await atTerminal('config seal', async (term) => {
      const key = await unlockForLedger(
        term,
        'config seal',
        path,
        process.env,
        [
          `Seal the configuration ${label} (${digest}): from now on the hooks obey it as it is now`,
          ...(relaxed.length > 0
            ? ['It relaxes the write gate:', ...relaxed.map((r) => `  ${r.setting}: ${r.effect}`)]
            : ['It does not relax the write gate.']),
        ].join('\n'),
      );
      const body = { project: projectKey(projectDir), configDigest: digest, sealedAt: now, keyId: key.keyId };
      return { key, seal: { ...body, signature: signStatement(configSealStatement(body), key.privateKey) } };
    });
    await recordNewCertificates(sealed.key, path, { chainKey: chainKeyOf(opts) });
    writeConfigSeal(env.stateRoot, projectDir, sealed.seal);
    process.stdout.write(
      `configuration sealed: ${label}, ${relaxed.length} relaxing setting${relaxed.length === 1 ? '' : 's'}, signed by ${sealed.key.keyId}\n`,
    );
  });
}
