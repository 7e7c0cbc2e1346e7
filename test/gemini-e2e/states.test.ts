/**
 * Gemini CLI 0.61.0 on its real binary (issue 29): `continuity init gemini`'s hooks in real
 * sessions against our scripted Gemini API server, through a real automatic compression (a prompt
 * over `model.compressionThreshold`) and a real manual one (`-p /compress`).
 *
 * What Gemini does, recorded on this binary (docs/gemini-cli.md): PreCompress fires on every turn,
 * before the threshold check, and its answer is ignored; there is no post-compaction hook; an
 * applied compression rewrites the session's conversation file with the `<state_snapshot>`
 * summary. So a PreCompress capture stays pending, and the next hook of the session confirms it
 * from that file: only then is it a boundary, and the gate holds the writes until the agent
 * restates.
 */
import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  compactionSpans,
  expectDroppedDecisionBlocks,
  expectOneBoundary as expectOneAdapterBoundary,
  expectOnlyAHumanApproves,
  onlySession,
} from '../support/agent-e2e.js';
import { boundaryIdsOf, sessionRecords, statusOf } from '../support/evidence.js';
import { widened } from '../support/task.js';
import {
  type GeminiServer,
  INSTALL_TIMEOUT_MS,
  makeWorld,
  OVER_THRESHOLD,
  readFile,
  requestsOf,
  requestText,
  restate,
  resultOf,
  resumedTurn,
  SCENARIO_TIMEOUT_MS,
  type Suite,
  shell,
  startGeminiServer,
  startSuite,
  type World,
  writeFile,
} from './harness.js';

let suite: Suite | undefined;
beforeAll(async () => {
  suite = await startSuite();
}, INSTALL_TIMEOUT_MS);
afterAll(async () => {
  await suite?.receiver.close();
});
const s = (): Suite => {
  if (!suite) throw new Error('the Gemini CLI suite did not start (see the beforeAll error)');
  return suite;
};

/** Boundaries recorded by the gemini adapter for the session. */
function boundaries(w: World, sessionId: string): string[] {
  return boundaryIdsOf(sessionRecords(w.ledgerRecords(), sessionId));
}

/** One boundary, recorded by the gemini adapter, with its pre and `restatements` post snapshots. */
const expectOneBoundary = (w: World, sessionId: string, restatements: number): string =>
  expectOneAdapterBoundary(w, sessionId, restatements, 'gemini', 'gm-');

/** A first run that gives the session history to compress (no compression: the prompt is small). */
async function firstRun(w: World): Promise<string> {
  const server = await startGeminiServer({
    steps: [shell('start', 'echo before > before.txt'), { text: 'Ok.' }],
  });
  try {
    const r = await w.gemini(server, 'Work on the task.');
    expect(r.status, r.stderr).toBe(0);
    expect(requestsOf(server, 'summary')).toHaveLength(0);
    // No boundary, so the gate let the shell command write.
    expect(existsSync(w.file('before.txt'))).toBe(true);
  } finally {
    await server.close();
  }
  return onlySession(w);
}

/**
 * An automatic compression in a resumed run: a reply whose prompt is over the threshold, then the
 * next turn compresses; then a first write, the restatement of `restated`, a second write.
 */
async function autoCompactThenRestate(
  w: World,
  restated: Record<string, unknown>,
): Promise<{ server: GeminiServer; sessionId: string }> {
  const sessionId = await firstRun(w);
  // Turns that compress nothing leave no boundary: PreCompress alone is not evidence.
  expect(boundaries(w, sessionId)).toHaveLength(0);
  const server = await startGeminiServer({
    steps: [
      readFile('look', w.file('before.txt'), OVER_THRESHOLD),
      writeFile('w-first', w.file('first.txt'), 'before restating\n'),
      restate('restate', restated),
      writeFile('w-after', w.file('after.txt'), 'after restating\n'),
      { text: 'Done.' },
    ],
  });
  try {
    const r = await w.gemini(server, 'Go on.', { resume: true });
    expect(r.status, r.stderr).toBe(0);
    // The compression really happened: the summarizer was asked, and the next turn's history
    // starts from its <state_snapshot>.
    expect(requestsOf(server, 'summary').length).toBeGreaterThan(0);
    const after = server.requests.find((q) => q.kind === 'step' && q.step === 1);
    expect(after && requestText(after)).toContain('<state_snapshot>');
    return { server, sessionId };
  } finally {
    await server.close();
  }
}

describe.concurrent('Gemini CLI on the real binary', () => {
  it(
    'automatic compression: the write waits for the restatement; a conflicting one stops it; the agent cannot approve it; a human approval releases it',
    async () => {
      const w = await makeWorld(s());
      try {
        const changed = widened(w.values);
        const { server, sessionId } = await autoCompactThenRestate(w, { ...changed });

        expect(resultOf(server, 'w-first')).toContain('(unverified: post_observation_missing)');
        expect(resultOf(server, 'restate')).toContain('conflicting (unapproved_change)');
        expect(resultOf(server, 'w-after')).toContain('(conflicting: unapproved_change)');
        for (const f of ['first.txt', 'after.txt']) expect(existsSync(w.file(f))).toBe(false);
        const boundaryId = expectOneBoundary(w, sessionId, 1);
        const st = await statusOf(w.continuity, sessionId);
        expect([st.state, st.reason, st.trigger, st.boundaryId]).toEqual([
          'conflicting',
          'unapproved_change',
          'auto',
          boundaryId,
        ]);

        // The agent's own approval is refused; the human's, in their terminal, releases the write.
        await expectOnlyAHumanApproves(w, sessionId, changed, resumedTurn);
        // No second boundary: resuming rewrites the conversation file with the same summary.
        expect(boundaries(w, sessionId)).toEqual([boundaryId]);

        // The spans that name a runtime name Gemini CLI, the compaction spans among them.
        compactionSpans(s().receiver, sessionId, 'gemini');
      } finally {
        w.dispose();
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    "hooks that run the project's own installation ($GEMINI_PROJECT_DIR/node_modules/.bin/continuity, which Gemini CLI fills in quoted): compression captured, a preserved restatement lets the write through",
    async () => {
      const w = await makeWorld(s(), true);
      try {
        expect(readFileSync(w.file('.gemini/settings.json'), 'utf8')).toContain(
          '"$GEMINI_PROJECT_DIR/node_modules/.bin/continuity hook gemini"',
        );
        const sessionId = await firstRun(w);
        const server = await startGeminiServer({
          steps: [
            readFile('look', w.file('before.txt'), OVER_THRESHOLD),
            readFile('look-again', w.file('before.txt')),
            restate('restate', { ...w.values }),
            writeFile('w-after', w.file('after.txt'), 'after restating\n'),
            { text: 'Done.' },
          ],
        });
        try {
          const r = await w.gemini(server, 'Go on.', { resume: true });
          expect(r.status, r.stderr).toBe(0);
        } finally {
          await server.close();
        }
        expect(requestsOf(server, 'summary').length).toBeGreaterThan(0);
        expect(resultOf(server, 'restate')).toContain('preserved (digest_match_fresh)');
        expect(existsSync(w.file('after.txt'))).toBe(true);
        expectOneBoundary(w, sessionId, 1);
      } finally {
        w.dispose();
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'automatic compression: the next tool result carries the restatement request; a preserved restatement lets the write through',
    async () => {
      const w = await makeWorld(s());
      try {
        const sessionId = await firstRun(w);
        const server = await startGeminiServer({
          steps: [
            readFile('look', w.file('before.txt'), OVER_THRESHOLD),
            // A tool the gate does not check: its AfterTool hook confirms the compression from the
            // conversation file and adds the restatement request to its result.
            readFile('look-again', w.file('before.txt')),
            restate('restate', { ...w.values }),
            writeFile('w-after', w.file('after.txt'), 'after restating\n'),
            { text: 'Done.' },
          ],
        });
        try {
          const r = await w.gemini(server, 'Go on.', { resume: true });
          expect(r.status, r.stderr).toBe(0);
        } finally {
          await server.close();
        }
        expect(requestsOf(server, 'summary').length).toBeGreaterThan(0);
        expect(resultOf(server, 'look')).not.toContain('observe --session');
        expect(resultOf(server, 'look-again')).toContain(`observe --session ${sessionId} --decision`);
        expect(resultOf(server, 'restate')).toContain('preserved (digest_match_fresh)');
        expect(existsSync(w.file('after.txt'))).toBe(true);
        expectOneBoundary(w, sessionId, 1);
        const st = await statusOf(w.continuity, sessionId);
        expect([st.state, st.trigger]).toEqual(['preserved', 'auto']);
      } finally {
        w.dispose();
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'manual compression (/compress): a dropped decision stops the write',
    async () => {
      const w = await makeWorld(s());
      try {
        const sessionId = await firstRun(w);
        const compress = await startGeminiServer({ steps: [] });
        try {
          const r = await w.gemini(compress, '/compress', { resume: true });
          expect(r.status, r.stderr).toBe(0);
          expect(requestsOf(compress, 'summary').length).toBeGreaterThan(0);
        } finally {
          await compress.close();
        }
        const st = await expectDroppedDecisionBlocks(w, sessionId, resumedTurn);
        expectOneBoundary(w, sessionId, 1);
        // The pending capture's trigger: `manual` when a hook confirms the /compress before the
        // resumed run's first PreCompress (`auto`) replaces the pending capture; both seen on 0.61.0.
        expect(['manual', 'auto']).toContain(st.trigger);
      } finally {
        w.dispose();
      }
    },
    SCENARIO_TIMEOUT_MS,
  );
});
