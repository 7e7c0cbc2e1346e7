/**
 * Compactions across processes on the real Codex CLI binary (0.171.0):
 * - automatic, before the turn of a `codex exec resume` (the previous process's last response was
 *   over the limit): PreCompact → PostCompact → SessionStart(resume) → SessionStart(compact);
 * - manual, through `codex app-server` (`thread/resume` + `thread/compact/start` on a thread made
 *   by `codex exec`): that process fires PreCompact and PostCompact only, and the next
 *   `codex exec resume` fires SessionStart(resume) only: the SessionStart(compact) context is
 *   never delivered, so SessionStart(resume) must ask for the restatement.
 */
import { describe, expect, it } from 'vitest';
import { AppServer, BIG_USAGE, SCENARIO_TIMEOUT_MS, useSuite } from './harness.js';
import {
  endScenario,
  exec,
  expectBlocked,
  expectBoundaries,
  expectBoundarySpans,
  expectClean,
  expectRan,
  injectedContext,
  outputOf,
  restate,
  scenario,
  status,
  write,
} from './scenario.js';

const suite = useSuite();

describe.concurrent('compaction across processes on the real Codex binary', () => {
  it(
    'automatic, before the turn of `exec resume`: the write waits for the restatement, then goes through',
    async () => {
      const s = await scenario(suite());
      try {
        s.steps.push({ text: 'ok', usage: BIG_USAGE });
        const r1 = await exec(s, 'start the task');
        const sessionId = r1.threadId!;
        expect(s.server.requestsOf('compact')).toHaveLength(0); // the turn ended: nothing to compact yet
        expect((await s.world.continuity(['status', '--session', sessionId])).stdout).toContain(
          'no boundary recorded',
        );

        s.steps.push(
          write('w-first', 'first.txt', 'before restating\n'),
          restate('restate', { ...s.values }),
          write('w-after', 'after.txt', 'after restating\n'),
          'done',
        );
        const r2 = await exec(s, 'go on', sessionId);
        expect(r2.threadId).toBe(sessionId);
        expect(s.server.requestsOf('compact')).toHaveLength(1);
        expectBlocked(s, 'w-first', 'first.txt', '(unverified: post_observation_missing)');
        expect(outputOf(s.server, 'restate')).toContain('preserved (digest_match_fresh)');
        expectRan(s, 'w-after', 'after.txt');
        // SessionStart(resume) and SessionStart(compact) both came: the request is given once.
        const first = s.server.requestsOf('turn').find((q) => injectedContext(q))!;
        expect(
          first.body.input.filter((i: { content?: Array<{ text?: string }> }) =>
            i.content?.some((c) => c.text?.includes('[continuity] This session was just compacted')),
          ),
        ).toHaveLength(1);
        expect((await status(s, sessionId)).state).toBe('preserved');
        const [boundaryId] = expectBoundaries(s, sessionId, 1, 'auto');
        await expectBoundarySpans(s, sessionId, boundaryId!, {
          trigger: 'auto',
          posts: 1,
          tokensBefore: BIG_USAGE.total_tokens,
        });
        expectClean(s);
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'manual through app-server, then `exec resume`: SessionStart(compact) never comes, SessionStart(resume) asks for the restatement',
    async () => {
      const s = await scenario(suite());
      try {
        s.steps.push('ok');
        const r1 = await exec(s, 'start the task');
        const sessionId = r1.threadId!;

        const app = new AppServer(suite().codex, s.world);
        try {
          await app.init();
          await app.request('thread/resume', { threadId: sessionId });
          await app.request('thread/compact/start', { threadId: sessionId });
          await app.waitFor((n) => n.method === 'turn/completed', 120_000);
        } finally {
          await app.close();
        }
        expect(s.server.requestsOf('compact')).toHaveLength(1);
        // The compaction is recorded and blocks writes before any restatement request was given.
        const [boundaryId] = expectBoundaries(s, sessionId, 1, 'manual');
        const st = await status(s, sessionId);
        expect([st.state, st.reason]).toEqual(['unverified', 'post_observation_missing']);

        s.steps.push(
          restate('restate', { ...s.values }),
          write('w-after', 'after.txt', 'after restating\n'),
          'done',
        );
        await exec(s, 'go on', sessionId);
        expect(outputOf(s.server, 'restate')).toContain('preserved (digest_match_fresh)');
        expectRan(s, 'w-after', 'after.txt');
        expect((await status(s, sessionId)).state).toBe('preserved');
        await expectBoundarySpans(s, sessionId, boundaryId!, { trigger: 'manual', posts: 1 });
        expectClean(s);
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );
});
