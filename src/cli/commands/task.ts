/**
 * `continuity task seal [--project DIR]`: the human seals the task record: its decisions'
 * digests, signed with the approver key (the passphrase typed at the terminal). From then on the
 * pre snapshot compares against the seal, and a task record changed since is recorded as
 * `task_record_changed`, never adopted (docs/security.md). Run it again after changing the task
 * record yourself.
 */
import { relative, resolve } from 'node:path';
import type { Command } from 'commander';
import { loadConfig, resolveEnv } from '../../adapters/core/config.js';
import { digestTaskRecord } from '../../adapters/core/task-record.js';
import { projectKey, type SealedDecision, sealStatement, writeSeal } from '../../authority/seal.js';
import { signStatement } from '../../authority/signing.js';
import { InputError } from '../../decision/problems.js';
import { formatRfc3339Utc } from '../../decision/time.js';
import { loadDigestKey } from '../../digest/key-file.js';
import { atTerminal, recordNewCertificates, unlockForLedger } from './human.js';
import { addLedgerOptions, chainKeyOf, type LedgerFlags, ledgerPathOf } from './ledger-options.js';

interface SealFlags extends LedgerFlags {
  project?: string;
}

/** Registers `continuity task`. */
export function registerTask(program: Command): void {
  const task = program.command('task').description('the task record, as the human keeps it');
  addLedgerOptions(
    task
      .command('seal')
      .description(
        "seal the task record's decisions with the approver key (passphrase typed at this terminal)",
      )
      .option('--project <dir>', 'the project directory (default: the current directory)'),
  ).action(async (opts: SealFlags) => {
    const projectDir = resolve(opts.project ?? '.');
    const env = resolveEnv(process.env);
    const { config } = loadConfig(projectDir, env, { runtime: 'cli', gatedTools: [] });
    const label = relative(projectDir, config.taskRecordPath) || config.taskRecordPath;
    const now = formatRfc3339Utc(Date.now());
    const r = digestTaskRecord(config.taskRecordPath, label, now, () => loadDigestKey({ env: env.vars }));
    if (!r.ok) throw new InputError('task seal', [{ path: label, message: r.problem.message }]);
    const decisions: Record<string, SealedDecision> = {};
    for (const [name, d] of Object.entries(r.digests.decisions))
      decisions[name] = { digest: d.digest, revision: d.revision };
    const path = ledgerPathOf(opts);
    const sealed = await atTerminal('task seal', async (term) => {
      const key = await unlockForLedger(
        term,
        'task seal',
        path,
        process.env,
        [
          `Seal the task record ${label}: from now on a pre snapshot compares against these digests`,
          ...Object.entries(decisions).map(([n, d]) => `  ${n}  ${d.digest} (revision ${d.revision})`),
        ].join('\n'),
      );
      const body = { project: projectKey(projectDir), decisions, sealedAt: now, keyId: key.keyId };
      return { key, seal: { ...body, signature: signStatement(sealStatement(body), key.privateKey) } };
    });
    await recordNewCertificates(sealed.key, path, { chainKey: chainKeyOf(opts) });
    writeSeal(env.stateRoot, projectDir, sealed.seal);
    process.stdout.write(
      `task record sealed: ${Object.keys(decisions).length} decisions, signed by ${sealed.key.keyId}\n`,
    );
  });
}
