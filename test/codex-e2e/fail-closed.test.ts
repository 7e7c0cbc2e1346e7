/**
 * What the real Codex CLI (0.171.0) does when its PreToolUse hook fails, and what makes our gate
 * fail closed there anyway (issue 26, H3 and item 6). Codex has no `onFailure` field: the oracle
 * is the binary. Each scenario rewrites the gate's registration in `$CODEX_HOME/hooks.json` (and
 * its `trusted_hash` in config.toml, or Codex skips the hook), then lets the model write a file
 * through `apply_patch` with no compaction, so nothing but the hook's failure decides.
 *
 * - a hook that hangs past its registered timeout: Codex kills it and runs the tool (fails open);
 * - a hook that exits non-zero with no output (a crash): Codex runs the tool (fails open);
 * - our gate with its slow path hung (./hang-slow-path.cjs: a stuck lock or ledger read) answers
 *   deny from its own watchdog (`CONTINUITY_HOOK_DEADLINE_MS`, below the registration's timeout):
 *   the tool does not run; the same hang with the watchdog set past the timeout runs the tool.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { editTrust } from '../../src/adapters/codex/toml.js';
import { type HookHandler, trustedHash, trustKey } from '../../src/adapters/codex/trust.js';
import { BIN, SCENARIO_TIMEOUT_MS, useSuite } from './harness.js';
import { endScenario, exec, expectBlocked, expectRan, type Scenario, scenario, write } from './scenario.js';

const suite = useSuite();
const HANG = join(import.meta.dirname, 'hang-slow-path.cjs');

/** Replaces the gate's handler (PreToolUse, ours) and trusts it as Codex would. */
function rewireGate(s: Scenario, handler: { command: string; timeout: number }): void {
  const hooksPath = join(s.world.codexHome, 'hooks.json');
  const doc = JSON.parse(readFileSync(hooksPath, 'utf8')) as {
    hooks: Record<string, Array<{ matcher?: string; hooks: HookHandler[] }>>;
  };
  const groups = doc.hooks.PreToolUse!;
  const gi = groups.findIndex((g) => g.hooks.some((h) => /\bhook codex\b/.test(h.command)));
  expect(gi, 'init registered the gate').toBeGreaterThanOrEqual(0);
  const group = groups[gi]!;
  const hi = group.hooks.findIndex((h) => /\bhook codex\b/.test(h.command));
  const next: HookHandler = { ...group.hooks[hi]!, ...handler };
  group.hooks[hi] = next;
  writeFileSync(hooksPath, `${JSON.stringify(doc, null, 2)}\n`);
  const configPath = join(s.world.codexHome, 'config.toml');
  const key = trustKey(hooksPath, 'PreToolUse', gi, hi);
  const text = readFileSync(configPath, 'utf8');
  writeFileSync(
    configPath,
    editTrust(text, new Map([[key, trustedHash('PreToolUse', group.matcher, next)]]), configPath),
  );
}

/** The launcher init wrote (`node …/bin/continuity.js`), from the gate's command. */
function launcher(s: Scenario): string {
  const doc = JSON.parse(readFileSync(join(s.world.codexHome, 'hooks.json'), 'utf8')) as {
    hooks: Record<string, Array<{ hooks: HookHandler[] }>>;
  };
  const cmd = doc.hooks.PreToolUse!.flatMap((g) => g.hooks).find((h) => /\bhook codex\b/.test(h.command))!;
  return cmd.command.replace(/\s+hook codex$/, '');
}

async function writeOnce(s: Scenario, file: string): Promise<void> {
  s.steps.push(write('w-1', file, 'written\n'), 'done');
  await exec(s, 'write the file');
}

describe.concurrent('a PreToolUse hook that fails, on the real Codex binary (no onFailure)', () => {
  it(
    'hung past its timeout, Codex kills it and runs the tool: it fails open',
    async () => {
      const s = await scenario(suite());
      try {
        rewireGate(s, { command: `sleep 20; ${launcher(s)} hook codex`, timeout: 2 });
        await writeOnce(s, 'hung.txt');
        expectRan(s, 'w-1', 'hung.txt');
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'crashed (exit 1, no output), Codex runs the tool: it fails open',
    async () => {
      const s = await scenario(suite());
      try {
        rewireGate(s, { command: `exit 1; ${launcher(s)} hook codex`, timeout: 30 });
        await writeOnce(s, 'crashed.txt');
        expectRan(s, 'w-1', 'crashed.txt');
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    "our gate's slow path hung: its own watchdog answers deny before Codex's timeout, and the tool does not run",
    async () => {
      const s = await scenario(suite());
      try {
        expect(launcher(s)).toContain(BIN);
        rewireGate(s, {
          command: `CONTINUITY_HOOK_DEADLINE_MS=2000 ${launcher(s).replace(/^node /, `node --require ${HANG} `)} hook codex`,
          timeout: 30,
        });
        await writeOnce(s, 'watched.txt');
        expectBlocked(s, 'w-1', 'watched.txt', 'ran out of time while inspecting this tool call');
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'the same hang with the watchdog set past the timeout: Codex kills the hook and the tool runs (the watchdog is what holds)',
    async () => {
      const s = await scenario(suite());
      try {
        rewireGate(s, {
          command: `CONTINUITY_HOOK_DEADLINE_MS=60000 ${launcher(s).replace(/^node /, `node --require ${HANG} `)} hook codex`,
          timeout: 3,
        });
        await writeOnce(s, 'unwatched.txt');
        expectRan(s, 'w-1', 'unwatched.txt');
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );
});
