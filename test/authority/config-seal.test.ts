/**
 * The attack suite for H2's configuration (issue 26): the agent writes `.continuity/config.json`
 * from its shell (`python3 -c "open('.contin'+'uity/config.json','w')…"`, a spelling no path guard
 * reads) to turn the gate off or relax its policy. Every setting that relaxes the gate is ignored
 * without the human's seal (the strict default holds, the gate's reason says `config_changed`, and
 * the next pre capture records it); the sealed configuration is obeyed; a sealed configuration the
 * agent edits afterwards is not. Through the real Claude Code hook entry, `continuity observe` and
 * `continuity config seal` at a pseudo-terminal.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configDigest } from '../../src/authority/config-seal.js';
import {
  compact,
  gate,
  ledgerRecords,
  makeWorld,
  PAYMENTS_DECISIONS,
  PAYMENTS_VALUES,
  type Receiver,
  runCli,
  startReceiver,
  type World,
  writeTaskRecord,
} from '../claude-code/harness.js';
import { atTerminal, ensureTerminalTools, humanSealsConfig, withApproverKey } from '../support/human.js';
import { BIN } from '../support/world.js';

let receiver: Receiver;
beforeAll(async () => {
  await ensureTerminalTools();
  receiver = await startReceiver();
}, 120_000);
afterAll(async () => {
  await receiver.close();
});

/** The agent's shell writes the configuration through a name no path guard can read. */
function agentWritesConfig(world: World, config: unknown): void {
  const text = JSON.stringify(config).replace(/\\/g, '\\\\').replace(/'/g, "\\'");
  const r = spawnSync(
    'setsid',
    ['-w', 'python3', '-c', `open('.contin'+'uity/config.json','w').write('${text}')`],
    { cwd: world.project, env: world.shellEnv, encoding: 'utf8' },
  );
  expect(r.status, r.stderr).toBe(0);
  expect(JSON.parse(readFileSync(join(world.project, '.continuity', 'config.json'), 'utf8'))).toEqual(config);
}

/** The human seals the configuration as it stands, at a terminal, with the passphrase. */
async function humanSeals(world: World): Promise<string> {
  const said = await humanSealsConfig(world);
  expect(said).toMatch(
    /configuration sealed: \.continuity\/config\.json, \d+ relaxing settings?, signed by ed25519:[0-9a-f]{32}/,
  );
  return said;
}

async function observe(world: World, sessionId: string, decisions: Record<string, unknown>) {
  const r = await runCli(['observe', '--session', sessionId, '--decisions', '-', '--json'], {
    input: JSON.stringify(decisions),
    env: world.shellEnv,
    cwd: world.project,
  });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as { state: string; reason: string };
}

/** A session whose latest boundary is `conflicting` (the scope restated otherwise). */
async function conflicting(world: World, sessionId: string): Promise<void> {
  await compact(world, sessionId, 'auto');
  const r = await observe(world, sessionId, {
    ...PAYMENTS_VALUES,
    scope: { repository: 'acme/payments', paths: ['services'] },
  });
  expect(r.state).toBe('conflicting');
}

function freshWorld(): World {
  const world = makeWorld(receiver.endpoint);
  writeTaskRecord(world, PAYMENTS_DECISIONS);
  return world;
}

const WRITE = { file_path: 'src/a.ts', content: 'x' };

describe('a configuration that relaxes the gate, written by the agent', () => {
  // Each relaxation, the tool call it would let through, and what the strict default answers.
  const cases: Array<{
    name: string;
    config: unknown;
    tool: string;
    input: Record<string, unknown>;
    strict: 'deny' | 'ask';
    healthy?: boolean;
  }> = [
    {
      name: 'the gate off (tools: ["None"])',
      config: { gate: { tools: ['None'] } },
      tool: 'Write',
      input: WRITE,
      strict: 'deny',
    },
    {
      name: 'Bash left out of gate.tools',
      config: { gate: { tools: ['Edit', 'Write'] } },
      tool: 'Bash',
      input: { command: 'git push --force' },
      strict: 'deny',
    },
    {
      name: 'an empty tool list',
      config: { gate: { tools: [] } },
      tool: 'Edit',
      input: { file_path: 'src/a.ts', old_string: 'a', new_string: 'b' },
      strict: 'deny',
    },
    {
      name: 'policy conflicting: allow',
      config: { gate: { policy: { conflicting: 'allow' } } },
      tool: 'Write',
      input: WRITE,
      strict: 'deny',
    },
    {
      name: 'policy conflicting: ask',
      config: { gate: { policy: { conflicting: 'ask' } } },
      tool: 'Write',
      input: WRITE,
      strict: 'deny',
    },
    {
      name: 'a state/reason key routed to allow',
      config: { gate: { policy: { 'conflicting/unapproved_change': 'allow' } } },
      tool: 'Write',
      input: WRITE,
      strict: 'deny',
    },
    {
      name: 'policy through a comma string',
      config: { gate: { policy: 'conflicting=allow' } },
      tool: 'Write',
      input: WRITE,
      strict: 'deny',
    },
    {
      name: 'unknown tools allowed',
      config: { gate: { unknownTools: 'allow' } },
      tool: 'mcp__files__write',
      input: { path: 'a' },
      strict: 'ask',
    },
    {
      name: 'the guard of the continuity files off',
      config: { gate: { protectContinuityFiles: false } },
      tool: 'Write',
      input: { file_path: '.continuity/task.json', content: '{}' },
      strict: 'ask',
      healthy: true,
    },
  ];

  for (const c of cases) {
    it(`${c.name}: ignored without the human's seal (config_changed), the strict answer stands`, async () => {
      const world = freshWorld();
      try {
        // A held session; for the guard, one with no compaction (the guard alone objects).
        if (!c.healthy) await conflicting(world, 'relax-1');
        agentWritesConfig(world, c.config);
        const g = await gate(world, 'relax-1', c.tool, c.input);
        expect(g.decision, g.reason).toBe(c.strict);
        expect(g.reason).toContain('config_changed');
        expect(g.reason).toContain('continuity config seal');
        // The next compaction records the unsealed relaxation as evidence of its own.
        await compact(world, 'relax-1', 'auto');
        const reasons = ledgerRecords(world)
          .filter((r) => r.sessionId === 'relax-1' && r.type === 'evidence_missing')
          .map((r) => r.reason);
        expect(reasons).toContain('config_changed');
      } finally {
        world.dispose();
      }
    });
  }

  it('the state/reason relaxation is ignored for that reason', async () => {
    const world = freshWorld();
    try {
      await compact(world, 'relax-reason', 'auto');
      agentWritesConfig(world, { gate: { policy: { 'unverified/post_observation_missing': 'allow' } } });
      const g = await gate(world, 'relax-reason', 'Write', WRITE);
      expect(g.decision).toBe('deny');
      expect(g.reason).toContain('gate.policy.unverified/post_observation_missing');
    } finally {
      world.dispose();
    }
  });

  it('a setting that tightens the gate needs no seal: preserved routed to ask is obeyed', async () => {
    const world = freshWorld();
    try {
      await compact(world, 'tighten', 'auto');
      expect((await observe(world, 'tighten', PAYMENTS_VALUES)).state).toBe('preserved');
      expect((await gate(world, 'tighten', 'Write', WRITE)).decision).toBe('allow');
      agentWritesConfig(world, { gate: { policy: { preserved: 'ask' }, unknownTools: 'deny' } });
      const g = await gate(world, 'tighten', 'Write', WRITE);
      expect(g.decision).toBe('ask');
      expect(g.reason).not.toContain('config_changed');
      await compact(world, 'tighten', 'auto');
      expect(
        ledgerRecords(world).filter((r) => r.sessionId === 'tighten' && r.reason === 'config_changed'),
      ).toEqual([]);
    } finally {
      world.dispose();
    }
  });
});

describe('continuity config seal', () => {
  it('refuses the agent (no terminal: exit 4, nothing written) and a file that is not a JSON object (exit 2, the file named)', async () => {
    const world = freshWorld();
    try {
      writeFileSync(join(world.project, '.continuity', 'config.json'), '{"gate":{"tools":["None"]}}\n');
      const env = withApproverKey(world.shellEnv, dirname(world.project));
      const agent = spawnSync('setsid', ['-w', process.execPath, BIN, 'config', 'seal'], {
        cwd: world.project,
        env,
        encoding: 'utf8',
        input: 'correct horse battery staple\n',
      });
      expect(agent.stderr).toMatch(/continuity: config seal: no terminal/);
      expect(agent.status).toBe(4);
      expect(existsSync(join(world.state, 'seals'))).toBe(false);
      writeFileSync(join(world.project, '.continuity', 'config.json'), '["not", "an", "object"]\n');
      const bad = await atTerminal(process.execPath, [BIN, 'config', 'seal'], { env, cwd: world.project });
      expect(bad.status).toBe(2);
      expect(bad.stdout).toContain('.continuity/config.json');
      expect(existsSync(join(world.state, 'seals'))).toBe(false);
    } finally {
      world.dispose();
    }
  });
});

describe('continuity status and the configuration', () => {
  it('shows an unsealed relaxation at once, before any compaction records it, and a sealed one as sealed', async () => {
    const world = freshWorld();
    try {
      const status = async (json: boolean) => {
        const r = await runCli(['status', ...(json ? ['--json'] : [])], {
          env: world.shellEnv,
          cwd: world.project,
        });
        expect(r.status, r.stderr).toBe(0);
        return r.stdout;
      };
      // Nothing relaxed: no word of the configuration.
      expect(await status(false)).not.toContain('configuration:');
      agentWritesConfig(world, { gate: { tools: ['None'], policy: { conflicting: 'allow' } } });
      const line = await status(false);
      expect(line).toMatch(
        /^configuration: The configuration \.continuity\/config\.json relaxes the gate \(gate\.tools/m,
      );
      expect(line).toContain('(config_changed): the strict defaults apply');
      expect(line).toContain('continuity config seal');
      const unsealed = JSON.parse(await status(true)).config;
      expect(unsealed).toMatchObject({
        file: '.continuity/config.json',
        sealed: false,
        reason: 'config_changed',
      });
      expect(unsealed.relaxations.map((r: { setting: string }) => r.setting)).toEqual([
        'gate.tools',
        'gate.policy.conflicting',
      ]);
      // No compaction happened: the ledger holds no word of it yet; status said it anyway.
      const recorded = existsSync(world.ledger) ? ledgerRecords(world) : [];
      expect(recorded.filter((r) => r.reason === 'config_changed')).toEqual([]);

      await humanSeals(world);
      expect(await status(false)).not.toContain('configuration:');
      const sealed = JSON.parse(await status(true)).config;
      expect(sealed).toMatchObject({ sealed: true });
      expect(sealed.reason).toBeUndefined();
    } finally {
      world.dispose();
    }
  });
});

describe('a configuration the human sealed', () => {
  it('is obeyed (conflicting routed to ask; Bash left ungated); edited by the agent afterwards, it is not', async () => {
    const world = freshWorld();
    try {
      writeFileSync(
        join(world.project, '.continuity', 'config.json'),
        `${JSON.stringify({ gate: { tools: ['Edit', 'Write'], policy: { conflicting: 'ask' } } }, null, 2)}\n`,
      );
      const said = await humanSeals(world);
      expect(said).toContain('configuration sealed: .continuity/config.json, 2 relaxing settings');
      // What the human saw before typing the passphrase: what the file relaxes.
      expect(said).toContain('gate.policy.conflicting: ask where the default is deny');
      await conflicting(world, 'sealed-1');
      const g = await gate(world, 'sealed-1', 'Write', WRITE);
      expect(g.decision).toBe('ask');
      expect(g.reason).not.toContain('config_changed');
      expect((await gate(world, 'sealed-1', 'Bash', { command: 'make' })).decision).toBe('allow');
      // No evidence of an unsealed change at the next compaction.
      await compact(world, 'sealed-1', 'auto');
      expect(
        ledgerRecords(world).filter((r) => r.sessionId === 'sealed-1' && r.reason === 'config_changed'),
      ).toEqual([]);
      expect((await observe(world, 'sealed-1', { ...PAYMENTS_VALUES, scope: { paths: ['x'] } })).state).toBe(
        'conflicting',
      );

      // The agent edits the sealed file: conflicting allowed. Nothing it relaxes is obeyed any more.
      agentWritesConfig(world, { gate: { tools: ['Edit', 'Write'], policy: { conflicting: 'allow' } } });
      const after = await gate(world, 'sealed-1', 'Write', WRITE);
      expect(after.decision).toBe('deny');
      expect(after.reason).toContain('config_changed');
      expect(after.reason).toContain('changed since its seal');
      expect((await gate(world, 'sealed-1', 'Bash', { command: 'make' })).decision).toBe('deny');
    } finally {
      world.dispose();
    }
  });

  it('a seal the agent edits to its own file digest does not verify', async () => {
    const world = freshWorld();
    try {
      writeFileSync(
        join(world.project, '.continuity', 'config.json'),
        '{"gate":{"policy":{"conflicting":"ask"}}}\n',
      );
      await humanSeals(world);
      agentWritesConfig(world, { gate: { policy: { conflicting: 'allow' } } });
      // The agent recomputes the digest of its file and writes it into the seal; the signature no longer covers it.
      const sealDir = join(world.state, 'seals');
      const file = join(sealDir, readdirSync(sealDir).find((f) => f.endsWith('.config.json'))!);
      const seal = JSON.parse(readFileSync(file, 'utf8')) as { configDigest: string };
      const mine = configDigest(
        JSON.parse(readFileSync(join(world.project, '.continuity', 'config.json'), 'utf8')),
      );
      expect(mine).not.toBe(seal.configDigest);
      writeFileSync(file, JSON.stringify({ ...seal, configDigest: mine }));
      await conflicting(world, 'forged');
      const g = await gate(world, 'forged', 'Write', WRITE);
      expect(g.decision).toBe('deny');
      expect(g.reason).toContain('signature does not verify');
    } finally {
      world.dispose();
    }
  });
});
