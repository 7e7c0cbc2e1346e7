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
import { ATTR_RUNTIME } from '../../src/otel/semconv.js';
import { boundaryIdsOf, humanApproves, sessionRecords, statusOf } from '../support/evidence.js';
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
  SCENARIO_TIMEOUT_MS,
  type Suite,
  shell,
  startGeminiServer,
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

import { startSuite } from './harness.js';

interface StatusEntry {
  sessionId: string;
  boundaryId: string | null;
  trigger?: string;
  state: string | null;
  reason: string | null;
}

/** The one session the world's ledger holds records of. */
function onlySession(w: World): string {
  const ids = [
    ...new Set(
      w
        .ledgerRecords()
        .map((r) => r.sessionId)
        .filter((x) => typeof x === 'string'),
    ),
  ];
  expect(ids).toHaveLength(1);
  return ids[0] as string;
}

/** Boundaries recorded by the gemini adapter for the session. */
function boundaries(w: World, sessionId: string): string[] {
  return boundaryIdsOf(sessionRecords(w.ledgerRecords(), sessionId));
}

/** One boundary, recorded by the gemini adapter, with its pre and `restatements` post snapshots. */
function expectOneBoundary(w: World, sessionId: string, restatements: number): string {
  const records = sessionRecords(w.ledgerRecords(), sessionId);
  const ids = boundaryIdsOf(records);
  expect(ids, 'boundaries opened for one compaction').toHaveLength(1);
  const mine = records.filter((r) => r.boundaryId === ids[0]);
  const kinds = mine.map((r) => (r.phase ? `${r.type}:${r.phase}` : r.type));
  expect(kinds.filter((k) => k === 'snapshot:pre')).toHaveLength(1);
  expect(kinds.filter((k) => k === 'snapshot:post')).toHaveLength(restatements);
  expect(kinds).not.toContain('evidence_missing:pre');
  expect(mine.find((r) => r.type === 'boundary')?.runtime).toBe('gemini');
  expect(ids[0]).toMatch(/^gm-/);
  return ids[0]!;
}

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
        const st = await statusOf<StatusEntry>(w.continuity, sessionId);
        expect([st.state, st.reason, st.trigger, st.boundaryId]).toEqual([
          'conflicting',
          'unapproved_change',
          'auto',
          boundaryId,
        ]);

        // The agent tries to approve its own change through its shell: the gate refuses it.
        const self = await startGeminiServer({
          steps: [
            shell(
              'self-approve',
              `continuity approve --session ${sessionId} --decision scope --from '${JSON.stringify(w.values.scope)}' --to '${JSON.stringify(changed.scope)}' --ref self --by agent`,
            ),
            { text: 'Done.' },
          ],
        });
        try {
          const r = await w.gemini(self, 'Approve it.', { resume: true });
          expect(r.status, r.stderr).toBe(0);
          expect(resultOf(self, 'self-approve')).toContain(
            'Refused by the continuity gate: approvals come from a human',
          );
        } finally {
          await self.close();
        }
        expect(w.ledgerRecords().filter((x) => x.type === 'approval')).toHaveLength(0);
        expect((await statusOf<StatusEntry>(w.continuity, sessionId)).state).toBe('conflicting');

        // The human approves in their own terminal; the next write goes through.
        await humanApproves(w.continuity, sessionId, {
          decision: 'scope',
          from: w.values.scope,
          to: changed.scope,
          ref: 'CHG-1',
        });
        const next = await startGeminiServer({
          steps: [writeFile('w-approved', w.file('approved.txt'), 'approved\n'), { text: 'Done.' }],
        });
        try {
          const r = await w.gemini(next, 'Go on.', { resume: true });
          expect(r.status, r.stderr).toBe(0);
          // No second boundary: resuming rewrites the conversation file with the same summary.
          expect(boundaries(w, sessionId)).toEqual([boundaryId]);
        } finally {
          await next.close();
        }
        expect(existsSync(w.file('approved.txt'))).toBe(true);
        expect((await statusOf<StatusEntry>(w.continuity, sessionId)).state).toBe('approved_change');

        // The spans that name a runtime name Gemini CLI, the compaction spans among them.
        const spans = s().receiver.spans.filter((x) => x.attributes['session.id'] === sessionId);
        const runtimes = new Set(spans.map((x) => x.attributes[ATTR_RUNTIME]).filter((r) => r !== undefined));
        expect(runtimes).toEqual(new Set(['gemini']));
        const compaction = spans.filter((x) => x.name.startsWith('continuity.compaction'));
        expect(compaction.length).toBeGreaterThan(0);
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
        const st = await statusOf<StatusEntry>(w.continuity, sessionId);
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
        const { approval_boundary: _left, ...partial } = w.values;
        const after = await startGeminiServer({
          steps: [
            writeFile('w-first', w.file('first.txt'), 'before restating\n'),
            restate('restate', partial),
            writeFile('w-after', w.file('after.txt'), 'after\n'),
            { text: 'Done.' },
          ],
        });
        try {
          const r = await w.gemini(after, 'Go on.', { resume: true });
          expect(r.status, r.stderr).toBe(0);
          expect(resultOf(after, 'w-first')).toContain('(unverified: post_observation_missing)');
          expect(resultOf(after, 'restate')).toContain('dropped (absent_after_compaction)');
          expect(resultOf(after, 'w-after')).toContain('Blocked by the continuity gate');
        } finally {
          await after.close();
        }
        expect(existsSync(w.file('first.txt'))).toBe(false);
        expect(existsSync(w.file('after.txt'))).toBe(false);
        expect(onlySession(w)).toBe(sessionId);
        expectOneBoundary(w, sessionId, 1);
        const st = await statusOf<StatusEntry>(w.continuity, sessionId);
        expect(st.state).toBe('dropped');
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
