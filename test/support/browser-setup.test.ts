/**
 * The page tests' set-up (test/support/browser.ts): Chromium from Debian and playwright-core from
 * npm, each failing with one line naming the command when it cannot be installed. (That they
 * install: the first run on a machine without them; playwright-core@1.65.1 went into an empty
 * peer cache this way.)
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ensureBrowser } from './browser.js';
import { ensureNpmPeer, PEERS } from './peers.js';

const scratch = mkdtempSync(join(tmpdir(), 'continuity-browser-setup-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('the browser set-up', () => {
  it('fails with one line naming the apt-get command when Chromium is missing and it may not install', async () => {
    const bin = join(scratch, 'bin');
    mkdirSync(bin);
    symlinkSync('/bin/sh', join(bin, 'sh'));
    await expect(ensureBrowser({ env: { PATH: bin }, privileges: 'none' })).rejects.toThrow(
      /^missing chromium; install: sudo apt-get install -y --no-install-recommends chromium$/,
    );
  });

  it('fails with one line naming the npm command when playwright-core cannot be installed, leaving nothing behind', async () => {
    const saved = { cache: process.env.CONTINUITY_PEER_CACHE, offline: process.env.npm_config_offline };
    const cache = join(scratch, 'peers');
    // An empty cache and npm offline: the install cannot succeed, and asks no registry.
    process.env.CONTINUITY_PEER_CACHE = cache;
    process.env.npm_config_offline = 'true';
    try {
      const peer = {
        ...PEERS.playwrightCore,
        id: 'playwright-core@0.0.0-absent',
        packages: ['playwright-core@0.0.0-absent'],
      };
      const error = (await ensureNpmPeer(peer).catch((e: Error) => e)) as Error;
      expect(error).toBeInstanceOf(Error);
      expect(error.message).not.toContain('\n');
      const dir = join(cache, peer.id);
      expect(error.message).toMatch(/^could not install playwright-core@0\.0\.0-absent \(/);
      expect(error.message).toContain(
        `; install it by hand: npm install --prefix ${dir} --ignore-scripts playwright-core@0.0.0-absent && touch ${dir}/.complete`,
      );
      expect(readdirSync(cache)).toEqual([]);
    } finally {
      if (saved.cache === undefined) delete process.env.CONTINUITY_PEER_CACHE;
      else process.env.CONTINUITY_PEER_CACHE = saved.cache;
      if (saved.offline === undefined) delete process.env.npm_config_offline;
      else process.env.npm_config_offline = saved.offline;
    }
  });
});
