/**
 * Activity hooks run in the background (`async: true`, issue 29): Claude Code starts them in the
 * order of its events but does not wait for them, so a `PostToolUse` (working) hook may finish
 * after the `Stop` (idle) hook that followed it. Each report carries its hook process's start
 * time, and under the session's lock a report older than the recorded one is dropped: the
 * session's activity never turns back. Real processes of the CLI, started in the order the
 * runtime would, finishing in the other order.
 */
import { spawn } from 'node:child_process';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { activityStep, readActivityMark, stateDirOf } from '../../src/adapters/core/state.js';
import {
  BIN,
  hook,
  ledgerRecords,
  makeWorld,
  PAYMENTS_DECISIONS,
  payload,
  type Receiver,
  startReceiver,
  type World,
  writeTaskRecord,
} from './harness.js';

let receiver: Receiver;
let world: World;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
});
afterEach(() => world?.dispose());

function fresh(): World {
  world = makeWorld(receiver.endpoint);
  writeTaskRecord(world, PAYMENTS_DECISIONS);
  return world;
}

/**
 * Starts `continuity hook claude-code` for `event` now and holds its input back: the process is
 * running (its start time taken) but cannot report until `release()` sends the payload.
 */
function startHeld(w: World, sessionId: string, event: string) {
  const child = spawn(process.execPath, [BIN, 'hook', 'claude-code'], {
    env: w.env,
    cwd: w.project,
    stdio: ['pipe', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (c) => {
    stderr += c;
  });
  const done = new Promise<{ code: number | null; stderr: string }>((resolve) =>
    child.on('close', (code) => resolve({ code, stderr })),
  );
  return {
    release: () => {
      child.stdin.end(payload(w, sessionId, event, { tool_name: 'Read', tool_input: {} }));
      return done;
    },
  };
}

const activities = (w: World, sessionId: string) =>
  ledgerRecords(w)
    .filter((r) => r.type === 'activity' && r.sessionId === sessionId)
    .map((r) => r.state);

const recorded = (w: World, sessionId: string) =>
  readActivityMark(stateDirOf(w.state, 'claude-code'), sessionId)?.state;

/** Long enough that two processes started this far apart have distinct start times. */
const APART_MS = 150;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('activity from background hooks', () => {
  describe('activityStep', () => {
    it('drops a report from a hook started before the recorded one', () => {
      expect(activityStep({ state: 'idle', atMs: 2000 }, 'working', 1000)).toBe('stale');
      expect(activityStep({ state: 'idle', atMs: 2000 }, 'idle', 1000)).toBe('stale');
    });
    it('moves the time on for a repeat and records a change', () => {
      expect(activityStep({ state: 'idle', atMs: 1000 }, 'idle', 2000)).toBe('same');
      expect(activityStep({ state: 'idle', atMs: 1000 }, 'working', 2000)).toBe('changed');
      expect(activityStep(undefined, 'working', 1)).toBe('changed');
    });
    it('lets any report follow a state recorded without a time (older versions)', () => {
      expect(activityStep({ state: 'idle' }, 'working', 1)).toBe('changed');
    });
  });

  it('a working report that finishes after the idle that followed it does not turn the session back', async () => {
    const w = fresh();
    const sid = 'sess-async-late';
    expect((await hook(w, sid, 'UserPromptSubmit', { prompt: 'go' })).status).toBe(0);
    expect((await hook(w, sid, 'Stop')).status).toBe(0);
    expect(activities(w, sid)).toEqual(['working', 'idle']);
    // A new turn: PostToolUse (working) starts, then the turn's Stop (idle) runs to its end first.
    expect((await hook(w, sid, 'UserPromptSubmit', { prompt: 'again' })).status).toBe(0);
    const late = startHeld(w, sid, 'PostToolUse');
    await pause(APART_MS);
    expect((await hook(w, sid, 'Stop')).status).toBe(0);
    expect(recorded(w, sid)).toBe('idle');
    const ran = await late.release();
    expect(ran.code).toBe(0);
    expect(recorded(w, sid)).toBe('idle');
    expect(activities(w, sid)).toEqual(['working', 'idle', 'working', 'idle']);
  });

  it('a repeated idle still moves the recorded time on, so an earlier working is stale', async () => {
    const w = fresh();
    const sid = 'sess-async-same';
    expect((await hook(w, sid, 'Stop')).status).toBe(0);
    const late = startHeld(w, sid, 'PostToolUse');
    await pause(APART_MS);
    // Idle again (unchanged): nothing new in the ledger, but the report's time is kept.
    expect((await hook(w, sid, 'Stop')).status).toBe(0);
    expect(activities(w, sid)).toEqual(['idle']);
    expect((await late.release()).code).toBe(0);
    expect(recorded(w, sid)).toBe('idle');
    expect(activities(w, sid)).toEqual(['idle']);
  });

  it('a working report started after the idle is recorded (the guard orders, it does not drop)', async () => {
    const w = fresh();
    const sid = 'sess-async-in-order';
    expect((await hook(w, sid, 'Stop')).status).toBe(0);
    await pause(APART_MS);
    const next = startHeld(w, sid, 'PostToolUse');
    expect((await next.release()).code).toBe(0);
    expect(recorded(w, sid)).toBe('working');
    expect(activities(w, sid)).toEqual(['idle', 'working']);
  });
});
