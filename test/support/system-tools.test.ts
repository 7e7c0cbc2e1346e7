/**
 * `ensureSystemTools` (test/support/peers.ts), the set-up step that installs Prometheus,
 * Alertmanager and promtool for the alerting tests: quiet when everything is there, one line
 * naming the command when it may not install. (That it installs: remove the packages and run
 * test/alerting; it is what a fresh machine does under `npm test`.)
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PROMETHEUS_TOOLS } from '../alerting/tools.js';
import { ensureSystemTools } from './peers.js';

const scratch = mkdtempSync(join(tmpdir(), 'continuity-system-tools-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A PATH with `sh` and the given commands (each a script that prints its name) and nothing else. */
function pathWith(name: string, commands: readonly string[]): string {
  const bin = join(scratch, name);
  mkdirSync(bin, { recursive: true });
  symlinkSync('/bin/sh', join(bin, 'sh'));
  for (const c of commands) {
    writeFileSync(join(bin, c), `#!/bin/sh\necho ${c}\n`);
    chmodSync(join(bin, c), 0o755);
  }
  return bin;
}

describe('ensureSystemTools', () => {
  it('returns at once, installing nothing, when every tool is on PATH', async () => {
    const PATH = pathWith(
      'all',
      PROMETHEUS_TOOLS.map((t) => t.command),
    );
    // 'none': it may not install, so resolving proves it found them all.
    await expect(
      ensureSystemTools(PROMETHEUS_TOOLS, { env: { PATH }, privileges: 'none' }),
    ).resolves.toBeUndefined();
  });

  it('fails with one line naming the missing tools and the command, when it may not install them', async () => {
    const PATH = pathWith('some', ['promtool']);
    const error = await ensureSystemTools(PROMETHEUS_TOOLS, { env: { PATH }, privileges: 'none' }).catch(
      (e: Error) => e,
    );
    expect((error as Error).message).toBe(
      'missing prometheus, prometheus-alertmanager, amtool; install: sudo apt-get install -y --no-install-recommends prometheus prometheus-alertmanager',
    );
  });

  it('fails the same way where there is no apt-get, even as root', async () => {
    const PATH = pathWith('no-apt', []);
    await expect(ensureSystemTools(PROMETHEUS_TOOLS, { env: { PATH }, privileges: 'root' })).rejects.toThrow(
      /^missing prometheus, promtool, prometheus-alertmanager, amtool; install: sudo apt-get install -y --no-install-recommends prometheus prometheus-alertmanager$/,
    );
  });
});
