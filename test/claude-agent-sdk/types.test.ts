/**
 * The adapter's structural types against the real SDK's: an application written against the
 * installed `@anthropic-ai/claude-agent-sdk` 0.3.328 (its sdk.d.ts, with its own peers' types)
 * passes our hooks, MCP server and merged options where the SDK's `Options`, `HookCallbackMatcher`
 * and `McpServerConfig` are expected, and type-checks with the TypeScript of this repository. A
 * second application, with a hook answer the SDK does not accept, must fail: the check is real.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claudeAgentSdkPeer, ensureNpmPeer } from '../support/peers.js';
import { INSTALL_TIMEOUT_MS, ROOT } from './harness.js';

const GOOD = `
import {
  createSdkMcpServer,
  type HookCallbackMatcher,
  type HookEvent,
  type McpServerConfig,
  type Options,
  query,
  type SDKMessage,
  tool,
} from '@anthropic-ai/claude-agent-sdk';
import { createAgentSdkContinuity } from 'agent-continuity/claude-agent-sdk';

const continuity = createAgentSdkContinuity({ projectDir: '/p', sdk: { createSdkMcpServer, tool } });
const hooks: Partial<Record<HookEvent, HookCallbackMatcher[]>> = continuity.hooks;
const servers: Record<string, McpServerConfig> = continuity.mcpServers;
const base: Options = { cwd: '/p', allowedTools: ['Read'], permissionMode: 'default' };
const options: Options = continuity.options(base);
const spread: Options = { ...base, hooks: { ...continuity.hooks }, mcpServers: continuity.mcpServers };
export async function app(): Promise<void> {
  for await (const m of continuity.watch(query({ prompt: 'x', options }))) {
    const message: SDKMessage = m;
    await continuity.onMessage(message);
  }
  void hooks;
  void servers;
  void spread;
}
`;

const BAD = `
import type { HookCallbackMatcher } from '@anthropic-ai/claude-agent-sdk';
export const m: HookCallbackMatcher = {
  hooks: [async () => ({ hookSpecificOutput: { hookEventName: 'PreToolUse' as const, permissionDecision: 'maybe' as const } })],
};
`;

describe('the adapter types against the real sdk.d.ts', () => {
  let dir = '';
  let sdkDir = '';
  beforeAll(async () => {
    sdkDir = (await ensureNpmPeer(claudeAgentSdkPeer())).dir;
    dir = mkdtempSync(join(tmpdir(), 'asdk-types-'));
  }, INSTALL_TIMEOUT_MS);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  // One compiler run for both files (the SDK's declarations take most of it): errors are per file.
  let result: { status: number | null; out: string } | undefined;
  function typecheck(): { status: number | null; out: string } {
    if (result) return result;
    writeFileSync(join(dir, 'good.ts'), GOOD);
    writeFileSync(join(dir, 'bad.ts'), BAD);
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          // The SDK's own declarations are not ours to check; our use of them is.
          skipLibCheck: true,
          types: ['node'],
          typeRoots: [join(ROOT, 'node_modules', '@types')],
          baseUrl: dir,
          paths: {
            '@anthropic-ai/claude-agent-sdk': [
              join(sdkDir, 'node_modules/@anthropic-ai/claude-agent-sdk/sdk.d.ts'),
            ],
            'agent-continuity/claude-agent-sdk': [join(ROOT, 'dist/adapters/claude-agent-sdk/index.d.ts')],
          },
        },
        files: ['good.ts', 'bad.ts'],
      }),
    );
    const r = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', dir], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 180_000,
    });
    result = { status: r.status, out: `${r.stdout}${r.stderr}` };
    return result;
  }

  it('an application passes the hooks, the MCP server and the merged options where the SDK expects its types', () => {
    const r = typecheck();
    expect(r.out.split('\n').filter((l) => l.startsWith('good.ts'))).toEqual([]);
    expect(r.out).toMatch(/^bad\.ts/m);
  });

  it('a hook answer the SDK does not accept fails the same check', () => {
    const r = typecheck();
    expect(r.status).not.toBe(0);
    const bad = r.out.split('\n').filter((l) => l.startsWith('bad.ts'));
    expect(bad).toHaveLength(1);
    expect(bad[0]).toContain('maybe');
  });
});
