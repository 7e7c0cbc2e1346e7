import { spawnSync } from 'node:child_process';
import { accessSync, constants, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const SCRIPT = fileURLToPath(new URL('../../scripts/setup-system.sh', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'continuity-setup-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The absolute path of a system command, for a PATH that holds only chosen commands. */
function which(cmd: string): string {
  const r = spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' });
  return r.stdout.trim();
}

describe('scripts/setup-system.sh', () => {
  it('is executable and valid bash', () => {
    accessSync(SCRIPT, constants.X_OK);
    const r = spawnSync('bash', ['-n', SCRIPT], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
  });

  it('does nothing, quietly, when every tool is already installed', () => {
    // After the script ran once (CI runs it before npm test), a second run is a no-op.
    const r = spawnSync('bash', [SCRIPT], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe('');
  });

  it('fails with the missing tools and what to do when it cannot install them', () => {
    // A PATH with bash and coreutils only: no Prometheus tools and no apt-get.
    const bin = join(scratch, 'bin');
    mkdirSync(bin, { recursive: true });
    for (const cmd of ['bash', 'tr', 'id']) symlinkSync(which(cmd), join(bin, cmd));
    const r = spawnSync(join(bin, 'bash'), [SCRIPT], { encoding: 'utf8', env: { PATH: bin } });
    expect(r.status).toBe(3);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(
      'setup-system.sh: missing: prometheus promtool prometheus-alertmanager amtool',
    );
    expect(r.stderr).toContain('https://prometheus.io/download/');
  });
});
