/**
 * `npm install git+<url>`, as the README says: a fresh app installs the package from a git
 * repository (a `git+file://` URL of a commit holding this working tree), npm builds it with its
 * devDependencies (`prepare`), and the app uses it from an ES module, from CommonJS and under
 * `node --require`. Before `prepare` existed, such an install had no dist/ and every import failed
 * with ERR_MODULE_NOT_FOUND.
 *
 * Then, on Node 20, 22 and 24 (22 and 24 from npm, `ensureNpmPeer`; npm and the `prepare` build
 * run on that Node), an app with NodeSDK installs from git and runs the README's set-up (the
 * `traceExporter` it had, now `continuityProcessors({ exporter })`) as an ES module and the
 * README's CommonJS `tracing.js` under `node --require` with a CommonJS and an ES module app:
 * every span reaches the app's exporter, a receiver on 127.0.0.1.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ATTR_CONTINUITY_STATE,
  ATTR_SESSION_ID,
  SPAN_COMPACTION_POST,
  SPAN_COMPACTION_PRE,
} from '../../src/otel/semconv.js';
import {
  type App,
  appSource,
  CJS_SESSION,
  COMPAT_SESSION,
  cjsAppSource,
  createApp,
  npm,
  REPO,
  type Run,
  readmeBlock,
  run,
  runApp,
  setupBlock,
} from '../compat/apps.js';
import { type OtlpReceiver, startOtlpReceiver } from '../support/otlp-receiver.js';
import { ensureNpmPeer, PEERS } from '../support/peers.js';

/** A git install runs npm install with every devDependency (from npm's cache) and the build. */
const INSTALL_TIMEOUT = 15 * 60_000;

let scratch: string;
let app: App;
let installRun: Run;
let installed: string;

/** Commits this working tree (tracked and new files, as git would see them) into a fresh repository. */
function snapshotRepository(into: string): void {
  const files = spawnSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: REPO,
    encoding: 'utf8',
  });
  if (files.status !== 0) throw new Error(`git ls-files failed: ${files.stderr}`);
  for (const file of files.stdout.split('\0').filter(Boolean)) {
    if (!existsSync(join(REPO, file))) continue; // deleted in the working tree
    mkdirSync(dirname(join(into, file)), { recursive: true });
    cpSync(join(REPO, file), join(into, file));
  }
  const git = (...args: string[]) => {
    const r = spawnSync('git', ['-c', 'user.name=test', '-c', 'user.email=test@example.invalid', ...args], {
      cwd: into,
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(`git ${args[0]} failed: ${r.stderr}`);
  };
  git('init', '-q');
  git('add', '-A');
  git('commit', '-q', '-m', 'snapshot');
}

/** `npm install git+file://<repo>` in `app`, npm (and the clone's prepare build) on the app's Node. */
function gitInstall(into: App, repo: string): Promise<Run> {
  // npm passes its configuration to the install it runs in the clone through npm_config_*.
  return run(
    'npm',
    ['--no-audit', '--no-fund', '--no-update-notifier', 'install', '--prefer-offline', `git+file://${repo}`],
    { cwd: into.dir, env: into.env({ npm_config_prefer_offline: 'true' }), timeoutMs: INSTALL_TIMEOUT },
  );
}

/** The Nodes an app installs from git on, each with an OpenTelemetry line the compat suite proves. */
const GIT_NODES = [
  { node: 20, line: PEERS.otel2Pinned },
  { node: 22, line: PEERS.otel3Newest },
  { node: 24, line: PEERS.otel2Newest },
] as const;

/** The NodeSDK apps of {@link GIT_NODES}, by Node major, with their git install. */
const sdkApps = new Map<number, { app: App; install: Run }>();

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'continuity-git-install-'));
  const repo = join(scratch, 'agent-continuity');
  snapshotRepository(repo);
  const nodes: Record<number, string> = {
    20: process.execPath,
    22: (await ensureNpmPeer(PEERS.node22)).bin,
    24: (await ensureNpmPeer(PEERS.node24)).bin,
  };
  app = await createApp(join(scratch, 'app'), PEERS.otelApiOnly, process.execPath);
  const withSdk = await Promise.all(
    GIT_NODES.map(({ node, line }) => createApp(join(scratch, `sdk-node${node}`), line, nodes[node]!)),
  );
  // In parallel: npm mostly waits on the disk and on the clones' builds.
  const runs = await Promise.all([app, ...withSdk].map((a) => gitInstall(a, repo)));
  installRun = runs[0]!;
  for (const [i, { node }] of GIT_NODES.entries())
    sdkApps.set(node, { app: withSdk[i]!, install: runs[i + 1]! });
  installed = join(app.dir, 'node_modules', 'agent-continuity');
}, INSTALL_TIMEOUT);

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
}, 5 * 60_000);

describe("the README's install block", () => {
  it('installs from the repository the manifest names, the way this file installs from git+file://', () => {
    const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
    const block = /## Install\n[\s\S]*?```sh\n([\s\S]*?)\n```/.exec(readme)?.[1] ?? '';
    const manifest = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
      repository: { url: string };
    };
    expect(block.split('\n')[0]).toMatch(
      new RegExp(`^npm install ${manifest.repository.url.replace(/[.+]/g, '\\$&')} `),
    );
  });
});

describe('npm install git+file://…', () => {
  it('installs the built package: dist/ with the ES module and CommonJS builds, no devDependency', async () => {
    expect(installRun.status, installRun.stderr).toBe(0);
    for (const f of [
      'dist/index.js',
      'dist/index.d.ts',
      'dist/cjs/index.js',
      'dist/cjs/index.d.ts',
      'dist/hook.cjs',
    ]) {
      expect(existsSync(join(installed, f)), f).toBe(true);
    }
    expect(JSON.parse(readFileSync(join(installed, 'dist', 'cjs', 'package.json'), 'utf8'))).toEqual({
      type: 'commonjs',
    });
    // The clone's build tools stayed in the clone.
    for (const dev of ['typescript', 'esbuild', 'vitest', '@opentelemetry/sdk-node']) {
      expect(existsSync(join(app.dir, 'node_modules', dev)), dev).toBe(false);
    }
    const ls = await npm(app, ['ls', '--all', '--parseable']);
    expect(ls.status, ls.stderr).toBe(0);
  });

  it('loads from an ES module and from CommonJS, every entry point that needs no optional peer', async () => {
    const entries = [
      'agent-continuity',
      'agent-continuity/core',
      'agent-continuity/semconv',
      'agent-continuity/claude-code',
      'agent-continuity/codex',
      'agent-continuity/claude-agent-sdk',
      'agent-continuity/opencode',
    ];
    const esm = await run(
      app.node,
      [
        '--input-type=module',
        '-e',
        `for (const e of ${JSON.stringify(entries)}) { const m = await import(e); console.log(e, Object.keys(m).length > 0); }`,
      ],
      { cwd: app.dir, env: app.env() },
    );
    expect(esm.stderr).toBe('');
    expect(esm.stdout.trim().split('\n')).toEqual(entries.map((e) => `${e} true`));
    const cjs = await run(
      app.node,
      [
        '-e',
        `for (const e of ${JSON.stringify(entries)}) { const m = require(e); console.log(e, Object.keys(m).length > 0); }`,
      ],
      { cwd: app.dir, env: app.env() },
    );
    expect(cjs.stderr).toBe('');
    expect(cjs.stdout.trim().split('\n')).toEqual(entries.map((e) => `${e} true`));
  });

  it('works under node --require: a CommonJS set-up file, then the app captures and observes a boundary', async () => {
    writeFileSync(
      join(app.dir, 'tracing.cjs'),
      [
        "const { ContinuityProcessor, continuityProcessors, createContinuity } = require('agent-continuity');",
        'globalThis.continuityTypes = [typeof ContinuityProcessor, typeof continuityProcessors, typeof createContinuity];',
        '',
      ].join('\n'),
    );
    writeFileSync(
      join(app.dir, 'app.mjs'),
      [
        "import { createContinuity } from 'agent-continuity';",
        "const continuity = createContinuity({ runtime: 'my-agent' });",
        "const d = { scope: { value: 'a' }, target: { value: 'b' }, acceptance_test: { value: 'c' } };",
        "const pre = await continuity.capturePre('s-1', d, { trigger: 'auto' });",
        "const post = await continuity.observePost('s-1', d);",
        'console.log(JSON.stringify({ types: globalThis.continuityTypes, pre: pre.ok, post: post.ok }));',
        '',
      ].join('\n'),
    );
    const r = await run(app.node, ['--require', './tracing.cjs', 'app.mjs'], {
      cwd: app.dir,
      env: app.env(),
    });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({
      types: ['function', 'function', 'function'],
      pre: true,
      post: true,
    });
  });

  it('refuses a decision given as a plain value with a process warning that names the decision, not the value', async () => {
    const r = await run(
      app.node,
      [
        '--input-type=module',
        '-e',
        [
          "import { createContinuity } from 'agent-continuity';",
          'const c = createContinuity();',
          "const r = await c.capturePre('s-2', { scope: { value: 'a' }, target: 'release/secret-branch', acceptance_test: { value: 'c' } });",
          'console.log(r.ok, r.evidenceMissing);',
        ].join('\n'),
      ],
      { cwd: app.dir, env: app.env() },
    );
    expect(r.stdout.trim()).toBe('false invalid_decision');
    expect(r.stderr).toContain('[CONTINUITY_PLAIN_VALUE]');
    expect(r.stderr).toContain('decision "target": expected { value: … } or { digest: … }, got a string');
    expect(r.stderr).not.toContain('secret-branch');
  });
});

/** The post span of `sessionId` the receiver got, with the pre span it links to. */
function boundarySpans(receiver: OtlpReceiver, sessionId: string) {
  const of = (name: string) =>
    receiver.spans.find((s) => s.name === name && s.attributes[ATTR_SESSION_ID] === sessionId);
  return { pre: of(SPAN_COMPACTION_PRE), post: of(SPAN_COMPACTION_POST) };
}

describe.each(GIT_NODES)('npm install git+file://… in a NodeSDK app on Node $node', ({ node }) => {
  let sdkApp: App;
  let install: Run;
  beforeAll(() => {
    ({ app: sdkApp, install } = sdkApps.get(node)!);
  });

  it(
    "runs the README's set-up (traceExporter's exporter in continuityProcessors) as an ES module: the spans reach the exporter",
    async () => {
      expect(install.status, install.stderr).toBe(0);
      const version = await run(sdkApp.node, ['--version'], { cwd: sdkApp.dir, env: sdkApp.env() });
      expect(version.stdout).toMatch(new RegExp(`^v${node}\\.`));
      const receiver = await startOtlpReceiver();
      try {
        const { output } = await runApp(sdkApp, 'app-git.mjs', appSource(setupBlock('setup', 'as-written')), {
          OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        });
        expect(output.state).toBe('preserved');
        expect(output.diag).toEqual({ warn: [], error: [] });
        const { pre, post } = boundarySpans(receiver, COMPAT_SESSION);
        expect(post?.attributes[ATTR_CONTINUITY_STATE]).toBe('preserved');
        expect(post?.links).toEqual([{ traceId: pre!.traceId, spanId: pre!.spanId }]);
        expect(post?.service).toBe('my-agent');
      } finally {
        await receiver.close();
      }
    },
    5 * 60_000,
  );

  it(
    "runs the README's CommonJS tracing.js under node --require, with a CommonJS and an ES module app",
    async () => {
      expect(install.status, install.stderr).toBe(0);
      writeFileSync(join(sdkApp.dir, 'tracing.cjs'), readmeBlock('tracing-cjs'));
      for (const [file, sessionId, esm] of [
        ['app-git.cjs', CJS_SESSION, false],
        ['app-git-esm.mjs', `${CJS_SESSION}-esm`, true],
      ] as const) {
        const receiver = await startOtlpReceiver();
        try {
          const { output } = await runApp(
            sdkApp,
            file,
            cjsAppSource(sessionId, esm),
            { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint },
            ['--require', './tracing.cjs'],
          );
          expect(output.state, file).toBe('preserved');
          expect(output.diag, file).toEqual({ warn: [], error: [] });
          const { pre, post } = boundarySpans(receiver, sessionId);
          expect(post?.attributes[ATTR_CONTINUITY_STATE], file).toBe('preserved');
          expect(post?.links, file).toEqual([{ traceId: pre!.traceId, spanId: pre!.spanId }]);
        } finally {
          await receiver.close();
        }
      }
    },
    5 * 60_000,
  );
});
