/**
 * A real browser for the page tests: Debian's `chromium` (installed with apt-get by the set-up
 * when missing) driven by `playwright-core` (installed from npm into the peer cache when missing,
 * `PEERS.playwrightCore`; never a dependency of this package), headless, kept off the network (no
 * background networking, component updates, sync, QUIC, first-run pages), a fresh profile
 * directory per launch.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  ensureNpmPeer,
  ensureSystemTools,
  PEERS,
  type SystemTool,
  type SystemToolsOptions,
} from './peers.js';

/** Where Debian's package puts the browser. */
export const CHROMIUM = '/usr/bin/chromium';

/** The system tools the page tests need, and their Debian packages. */
export const BROWSER_TOOLS: readonly SystemTool[] = [{ command: 'chromium', debianPackage: 'chromium' }];

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

// The part of playwright-core's API the page tests use. Its own declarations come with the peer,
// which a fresh clone does not have until the tests install it, so typecheck needs these; the
// tests run them against the real module.

/** playwright-core's `Response`, as far as the tests read it. */
export interface Response {
  status(): number;
}

/** playwright-core's `Page`, as far as the tests use it. */
export interface Page {
  goto(url: string): Promise<Response | null>;
  close(): Promise<void>;
  title(): Promise<string>;
  url(): string;
  textContent(selector: string): Promise<string | null>;
  getAttribute(selector: string, name: string): Promise<string | null>;
  focus(selector: string): Promise<void>;
  click(selector: string): Promise<void>;
  selectOption(selector: string, value: string): Promise<string[]>;
  $$eval<R>(selector: string, fn: (elements: HTMLElement[]) => R): Promise<R>;
  evaluate<R>(fn: () => R | Promise<R>): Promise<R>;
  waitForFunction<A = undefined>(
    fn: (arg: A) => unknown,
    arg?: A,
    options?: { timeout?: number },
  ): Promise<unknown>;
  waitForSelector(
    selector: string,
    options?: { timeout?: number; state?: 'attached' | 'detached' | 'visible' | 'hidden' },
  ): Promise<unknown>;
  waitForURL(url: string | RegExp): Promise<void>;
  screenshot(options: { path: string; fullPage?: boolean }): Promise<unknown>;
  readonly keyboard: { press(key: string): Promise<void>; type(text: string): Promise<void> };
}

/** playwright-core's `BrowserContext`, as far as the tests use it. */
export interface BrowserContext {
  newPage(): Promise<Page>;
  grantPermissions(permissions: string[], options?: { origin?: string }): Promise<void>;
  close(): Promise<void>;
  browser(): { version(): string } | null;
}

interface PlaywrightCore {
  chromium: {
    launchPersistentContext(
      userDataDir: string,
      options: {
        executablePath: string;
        headless: boolean;
        args: string[];
        viewport: { width: number; height: number };
        javaScriptEnabled: boolean;
        reducedMotion: 'reduce';
      },
    ): Promise<BrowserContext>;
  };
}

let driver: Promise<PlaywrightCore> | undefined;

/**
 * Installs Chromium (apt-get, as root or with passwordless sudo) and playwright-core (npm, into
 * the peer cache) when they are missing, and loads the driver. Call from `beforeAll` with a long
 * timeout; throws one line naming the install command when it cannot. `options` as for
 * {@link ensureSystemTools}.
 */
export async function ensureBrowser(options: SystemToolsOptions = {}): Promise<void> {
  await ensureSystemTools(BROWSER_TOOLS, options);
  driver ??= ensureNpmPeer(PEERS.playwrightCore).then(
    async ({ bin }) => (await import(pathToFileURL(bin).href)) as PlaywrightCore,
  );
  await driver;
}

/** A launched browser with one context; `close()` stops it and removes its profile. */
export interface Browser {
  context: BrowserContext;
  version: string;
  close(): Promise<void>;
}

/**
 * Launches Chromium with a fresh `--user-data-dir` (playwright's persistent-context form of it).
 * Needs {@link ensureBrowser} first.
 */
export async function launchChromium(
  options: { javaScriptEnabled?: boolean; viewport?: { width: number; height: number } } = {},
): Promise<Browser> {
  if (!driver) throw new Error('launchChromium: call ensureBrowser() in beforeAll first');
  const { chromium } = await driver;
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
