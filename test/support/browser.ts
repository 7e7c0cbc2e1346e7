/**
 * A real browser for the page tests: Debian's `chromium` (installed by the set-up when missing)
 * driven by `playwright-core`, headless, kept off the network (no background networking,
 * component updates, sync, QUIC, first-run pages), a fresh profile directory per launch.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';
import { ensureSystemTools } from './peers.js';

/** Where Debian's package puts the browser. */
export const CHROMIUM = '/usr/bin/chromium';

/** The flags every launch uses. */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
  '--disable-gpu',
] as const;

/** Installs Chromium (apt-get, as root) when it is missing. Call from `beforeAll` with a long timeout. */
export async function ensureChromium(): Promise<void> {
  await ensureSystemTools([{ command: 'chromium', debianPackage: 'chromium' }]);
}

/** A launched browser with one context; `close()` stops it and removes its profile. */
export interface Browser {
  context: BrowserContext;
  version: string;
  close(): Promise<void>;
}

/** Launches Chromium with a fresh `--user-data-dir` (playwright's persistent-context form of it). */
export async function launchChromium(
  options: { javaScriptEnabled?: boolean; viewport?: { width: number; height: number } } = {},
): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), 'chromium-profile-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [...CHROMIUM_ARGS],
    viewport: options.viewport ?? { width: 1280, height: 900 },
    javaScriptEnabled: options.javaScriptEnabled ?? true,
    reducedMotion: 'reduce',
  });
  return {
    context,
    version: context.browser()?.version() ?? 'unknown',
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
