#!/usr/bin/env node
// `npm run test:latest`: runs the real-binary suites against the newest release of each agent
// runtime, resolved from the npm registry now, and prints a table of versions and results, so a
// release that breaks an adapter is seen the day it ships. The pinned versions (what `npm test`
// runs) stay in test/support/peers.ts; with CONTINUITY_PEERS_LATEST=1 its `ensureNpmPeer`
// installs each runtime's newest release beside them in the peer cache.
//
// Exit code: 0 when every suite passed, 1 otherwise (the table says which).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Each runtime: its npm package (the first of its peer entry), its pinned version, its suites, and
 * the environment that points the suites at it (when the package is not the runtime itself).
 */
const RUNTIMES = [
  {
    runtime: 'Claude Code',
    pkg: '@anthropic-ai/claude-code',
    peer: 'claudeCode',
    suites: ['test/claude-code-e2e'],
  },
  // The Claude Code the newest Agent SDK bundles, often newer than any claude-code release: the
  // Claude Code suites on it (CONTINUITY_CLAUDE_CODE=sdk, see claudeCodePeer in peers.ts).
  {
    runtime: 'Claude Code (in the Agent SDK)',
    pkg: '@anthropic-ai/claude-agent-sdk',
    peer: 'claudeAgentSdk',
    suites: ['test/claude-code-e2e'],
    env: { CONTINUITY_CLAUDE_CODE: 'sdk' },
  },
  {
    runtime: 'Claude Agent SDK',
    pkg: '@anthropic-ai/claude-agent-sdk',
    peer: 'claudeAgentSdk',
    suites: ['test/claude-agent-sdk'],
  },
  { runtime: 'Codex CLI', pkg: '@openai/codex', peer: 'codex', suites: ['test/codex-e2e'] },
  { runtime: 'OpenCode', pkg: 'opencode-ai', peer: 'opencode', suites: ['test/opencode'] },
  { runtime: 'Qwen Code', pkg: '@qwen-code/qwen-code', peer: 'qwenCode', suites: ['test/qwen-code-e2e'] },
  { runtime: 'GitHub Copilot CLI', pkg: '@github/copilot', peer: 'copilot', suites: ['test/copilot-e2e'] },
  { runtime: 'Gemini CLI', pkg: '@google/gemini-cli', peer: 'geminiCli', suites: ['test/gemini-e2e'] },
];

/** The pinned version of `pkg`, read from test/support/peers.ts (one source of truth). */
function pinned(pkg) {
  const text = readFileSync(join(root, 'test', 'support', 'peers.ts'), 'utf8');
  const m = new RegExp(`'${pkg.replace(/[/.]/g, '\\$&')}@([^']+)'`).exec(text);
  return m ? m[1] : '?';
}

function newest(pkg) {
  const r = spawnSync('npm', ['view', pkg, 'version', '--no-update-notifier'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

const only = process.argv.slice(2);
const rows = [];
let failed = false;
for (const r of RUNTIMES.filter(
  (x) => only.length === 0 || only.some((o) => x.runtime.toLowerCase().includes(o.toLowerCase())),
)) {
  const latest = newest(r.pkg);
  if (!latest) {
    rows.push([r.runtime, pinned(r.pkg), '(npm view failed)', '-', '-']);
    failed = true;
    continue;
  }
  const dir = mkdtempSync(join(tmpdir(), 'test-latest-'));
  const out = join(dir, 'result.json');
  process.stderr.write(`test:latest: ${r.runtime} ${latest} (${r.suites.join(' ')})\n`);
  const run = spawnSync(
    'npx',
    ['vitest', 'run', ...r.suites, '--reporter=dot', '--reporter=json', `--outputFile.json=${out}`],
    {
      cwd: root,
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, ...r.env, CONTINUITY_PEERS_LATEST: '1' },
    },
  );
  let passed = 0;
  let failedCount = 0;
  try {
    const json = JSON.parse(readFileSync(out, 'utf8'));
    passed = json.numPassedTests;
    failedCount = json.numFailedTests;
  } catch {
    failedCount = -1;
  }
  rmSync(dir, { recursive: true, force: true });
  const ok = run.status === 0 && failedCount === 0 && passed > 0;
  failed ||= !ok;
  rows.push([
    r.runtime,
    pinned(r.pkg),
    latest,
    String(passed),
    failedCount < 0 ? 'no result' : String(failedCount),
  ]);
}

const head = ['runtime', 'pinned', 'newest', 'passed', 'failed'];
const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
const line = (cells) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
console.log(line(head));
console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
for (const row of rows) console.log(line(row));
process.exitCode = failed ? 1 : 0;
