/**
 * The Agent SDK 0.3.337's newer surfaces, on the real package whatever line the rest of this
 * suite runs: the `Interrupt` hook when the application calls `interrupt()` while a tool runs.
 * Stop does not fire then; the adapter's Interrupt callback is what turns the session idle.
 */
import { describe, expect, it } from 'vitest';
import { PEERS } from '../support/peers.js';
import { bash, SCENARIO_TIMEOUT_MS, streamingInput, useSuite } from './harness.js';
import { inScenario, records } from './scenario.js';

const suite = useSuite({ peer: { ...PEERS.claudeAgentSdkBundled, bin: PEERS.claudeAgentSdk.bin } });

describe.concurrent('Agent SDK 0.3.337: newer surfaces on the real package', () => {
  it(
    'interrupt() while a tool runs: Interrupt fires (source user, reason stop), Stop does not, and the adapter records the session idle after working',
    () =>
      inScenario(suite(), async (s) => {
        expect(s.suite.version).toBe('0.3.337');
        // The application's own callbacks beside the adapter's, to see what the SDK fires.
        const fired: Array<Record<string, unknown>> = [];
        const spy = async (input: unknown) => {
          fired.push(input as Record<string, unknown>);
          return {};
        };
        s.server.push(bash('b-long', 'sleep 20'), 'Done.');
        const turns = streamingInput(['start the task']);
        let interrupted = false;
        const r = await s.world.query(
          s.server,
          turns.input,
          { hooks: { Interrupt: [{ hooks: [spy] }], Stop: [{ hooks: [spy] }] } },
          (m, q) => {
            turns.observe(m);
            // The tool call is on its way once the first turn request was answered.
            if (!interrupted && m.type === 'assistant') {
              interrupted = true;
              setTimeout(() => void q.interrupt(), 500);
            }
          },
        );
        const sessionId = r.sessionId;
        expect(sessionId).not.toBe('');
        expect(fired.map((p) => p.hook_event_name)).toEqual(['Interrupt']);
        const { session_id, transcript_path, cwd, ...shape } = fired[0]!;
        expect(session_id).toBe(sessionId);
        expect(shape).toMatchObject({ hook_event_name: 'Interrupt', source: 'user', reason: 'stop' });
        const activity = records(s, sessionId)
          .filter((x) => x.type === 'activity')
          .map((x) => x.state);
        expect(activity).toEqual(['working', 'idle']);
        expect(s.world.warnings).toEqual([]);
      }),
    SCENARIO_TIMEOUT_MS,
  );
});
