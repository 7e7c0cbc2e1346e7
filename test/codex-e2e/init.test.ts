/**
 * `continuity init codex` against the real binary's own view of hooks (codex 0.171.0
 * `app-server` `hooks/list`): the hooks init writes are trusted without a human step (the hash
 * init computes offline is the one Codex computes), a hook of the user's keeps its trust status,
 * and `--remove` takes out exactly ours while a user's hook that moves up keeps its trust.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AppServer, LAUNCHER, makeWorld, SCENARIO_TIMEOUT_MS, useSuite, type World } from './harness.js';

const suite = useSuite();

interface ListedHook {
  key: string;
  command: string;
  trustStatus: string;
  currentHash: string;
}

async function hooksList(world: World): Promise<ListedHook[]> {
  const app = new AppServer(suite().codex, world);
  try {
    await app.init();
    const r = (await app.request('hooks/list', { cwds: [world.project] })) as {
      data: Array<{ hooks: ListedHook[] }>;
    };
    return r.data.flatMap((d) => d.hooks);
  } finally {
    await app.close();
  }
}

describe('continuity init codex, as the real binary sees it', () => {
  it(
    "trusts exactly our hooks; --remove takes out ours and keeps the user's, trust and all",
    async () => {
      const world = await makeWorld(
        suite(),
        { baseUrl: 'http://127.0.0.1:9/v1' },
        {
          scope: { value: 'x' },
          target: { value: 'y' },
          constraint: { value: 'z' },
        },
      );
      try {
        const ours = (h: ListedHook) => h.command.endsWith('hook codex');
        let listed = await hooksList(world);
        expect(listed.filter(ours)).toHaveLength(8);
        expect(listed.filter(ours).every((h) => h.trustStatus === 'trusted')).toBe(true);

        // The user adds a Stop hook after ours and trusts it with the hash Codex shows.
        const hooksPath = join(world.codexHome, 'hooks.json');
        const doc = JSON.parse(readFileSync(hooksPath, 'utf8'));
        doc.hooks.Stop.push({ hooks: [{ type: 'command', command: 'echo users-own' }] });
        writeFileSync(hooksPath, JSON.stringify(doc, null, 2));
        listed = await hooksList(world);
        const mine = listed.find((h) => h.command === 'echo users-own')!;
        expect([mine.key.endsWith(':stop:1:0'), mine.trustStatus]).toEqual([true, 'untrusted']);
        const config = join(world.codexHome, 'config.toml');
        writeFileSync(
          config,
          `${readFileSync(config, 'utf8')}\n[hooks.state.${JSON.stringify(mine.key)}]\ntrusted_hash = ${JSON.stringify(mine.currentHash)}\n`,
        );

        // Init again: nothing to do.
        const again = await world.continuity(['init', 'codex', '--command', LAUNCHER], undefined, world.env);
        expect(again.stdout).toContain('hooks.json: unchanged');
        expect(again.stdout).toContain('already trusted');

        const removed = await world.continuity(['init', 'codex', '--remove'], undefined, world.env);
        expect(removed.status, removed.stderr).toBe(0);
        listed = await hooksList(world);
        expect(listed.filter(ours)).toEqual([]);
        const moved = listed.find((h) => h.command === 'echo users-own')!;
        expect([moved.key.endsWith(':stop:0:0'), moved.trustStatus]).toEqual([true, 'trusted']);
        expect(readFileSync(config, 'utf8')).not.toContain('hook codex');
        expect(readFileSync(config, 'utf8')).toContain('# written by test/codex-e2e/harness.ts');
      } finally {
        world.dispose();
      }
    },
    SCENARIO_TIMEOUT_MS,
  );
});
