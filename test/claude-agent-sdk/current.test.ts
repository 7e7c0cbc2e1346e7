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
        let sessionId = '';
        // After the interrupt the SDK ends the iteration by throwing the turn's error result
        // (observed on 0.3.337: "Claude Code returned an error result"); what the hooks did is the point.
        const failure = await s.world
          .query(
            s.server,
            turns.input,
            { hooks: { Interrupt: [{ hooks: [spy] }], Stop: [{ hooks: [spy] }] } },
            (m, q) => {
              turns.observe(m);
              if (typeof m.session_id === 'string') sessionId = m.session_id;
              // The tool call is on its way once the model's reply arrived.
              if (!interrupted && m.type === 'assistant') {
                interrupted = true;
                setTimeout(() => void q.interrupt(), 500);
              }
            },
          )
          .then(
            () => undefined,
            (e: Error) => e,
          );
        expect(interrupted).toBe(true);
        expect(failure?.message ?? '').toMatch(/error result|interrupt/i);
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
