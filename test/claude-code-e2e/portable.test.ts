/**
 * A project whose committed settings are portable (issue 29, item 4), on the real binary: init run
 * without `--command` in a checkout with agent-continuity in its `node_modules` (and not on PATH)
 * writes `"$CLAUDE_PROJECT_DIR"/node_modules/.bin/continuity` into `.claude/settings.json` and
 * `npx --no-install continuity` into `.mcp.json`; a git clone of it, with
 * the package installed in the clone, runs our hooks even after the agent's shell moved into a
 * subdirectory: the compaction is captured, the restatement the context prints (this clone's
 * installation, which the gate's exemption recognises) preserves it, and the restate tool of the
 * committed `.mcp.json` is offered.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { requestText } from '../support/anthropic-server.js';
import {
  bash,
  deniedIds,
  RESTATE_TOOL,
  ROOT,
  restate,
  restatementCommand,
  resultOf,
  SCENARIO_TIMEOUT_MS,
  useSuite,
  write,
} from './harness.js';
import {
  endScenario,
  expectClean,
  expectOneCapturedBoundary,
  scenario,
  sessionOf,
  status,
} from './scenario.js';

const suite = useSuite();

/** Usage that puts the context over the threshold of `--autocompact 100000`. */
const FULL = { input_tokens: 190_000 };
const AUTOCOMPACT = ['--autocompact', '100000'];
const LAUNCHER = '"$CLAUDE_PROJECT_DIR"/node_modules/.bin/continuity';

describe('a clone of a project with portable settings, on the real binary', () => {
  it(
    'runs our hooks through "$CLAUDE_PROJECT_DIR" from a subdirectory: compaction captured, restated with the clone\'s installation, preserved',
    async () => {
      const s = await scenario(suite(), { clonedWithProjectInstall: true });
      try {
        const project = s.world.project;
        const settings = readFileSync(join(project, '.claude', 'settings.json'), 'utf8');
        expect(settings).toContain(JSON.stringify(`${LAUNCHER} hook claude-code`));
        const mcp = readFileSync(join(project, '.mcp.json'), 'utf8');
        expect(JSON.parse(mcp).mcpServers.continuity).toMatchObject({
          command: 'npx',
          args: ['--no-install', 'continuity', 'mcp', '--runtime', 'claude-code'],
        });
        // Nothing committed names this machine's installation.
        for (const text of [settings, mcp]) expect(text).not.toContain(ROOT.replace(/\/$/, ''));
        expect(s.world.initOutput).toContain("note: the hooks run the project's own installation");

        const sub = join(project, 'src', 'deep');
        mkdirSync(sub, { recursive: true });
        s.server.push(
          // The agent's shell moves into a subdirectory; the hooks after it run from there.
          { tools: [bash('b-cd', 'cd src/deep && pwd')], usage: { input_tokens: 5_000 } },
          { tools: [bash('b-full', 'pwd')], usage: FULL },
          restate('restate', { ...s.values }),
          write('w-after', s.world.file('after.txt'), 'after restating\n'),
          'Done.',
        );
        const r = await s.world.claude(s.server, ['-p', 'start the task', ...AUTOCOMPACT]);
        const sessionId = sessionOf(r);
        expect(resultOf(s.server, 'b-full')?.text).toContain(sub);
        // Claude Code's own working directory moved there before the compaction (its hooks run in it).
        const summary = s.server.requestsOf('summary')[0];
        expect(requestText(summary?.body)).toContain(`Primary working directory: ${sub} (was ${project})`);
        expect(s.server.requestsOf('summary')).toHaveLength(1);
        expectOneCapturedBoundary(s, sessionId, 1);
        // The context printed this clone's installation, and the exemption let it run.
        const printed = s.server.requests.map((q) => restatementCommand(q.body)).find(Boolean);
        expect(printed?.head).toContain(
          `node ${join(project, 'node_modules', '.bin', 'continuity')} observe`,
        );
        expect(resultOf(s.server, 'restate')?.text).toContain('preserved (digest_match_fresh)');
        expect(deniedIds(r)).toEqual([]);
        expect((await status(s, sessionId)).state).toBe('preserved');
        // The committed .mcp.json started our server from the clone: its tool was offered.
        expect(
          s.server.requests.some((q) => (q.body?.tools ?? []).some((t) => t.name === RESTATE_TOOL)),
        ).toBe(true);
        expectClean(s, [], LAUNCHER);
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );
});
