/**
 * Replays a recording of the real OpenCode (test/support/opencode-recorder-plugin.ts) through the
 * adapter's pure translation, one memory per session and process, as the plugin would: the core
 * events it yields, in order.
 */
import type { BoundaryEvent } from '../../src/adapters/core/events.js';
import {
  emptyMemory,
  type OpencodeInput,
  type SessionMemory,
  sessionOf,
  translate,
} from '../../src/adapters/opencode/events.js';
import type { Recorded } from './harness.js';

/** A core event and the session (as recorded) and process it came from. */
export interface Replayed {
  session: string;
  pid: number;
  event: BoundaryEvent;
}

/** The core events the translation makes of `lines`. */
export function replay(lines: readonly Recorded[]): Replayed[] {
  const memories = new Map<string, SessionMemory>();
  const out: Replayed[] = [];
  for (const l of lines) {
    const at = new Date(l.t).toISOString();
    let input: OpencodeInput | undefined;
    let session: string | undefined;
    if (l.hook === 'event' && l.event) {
      input = { kind: 'event', event: l.event, at, atMs: l.t };
      session = sessionOf(l.event);
    } else if (
      l.hook === 'experimental.session.compacting' ||
      l.hook === 'experimental.compaction.autocontinue'
    ) {
      input = {
        kind: l.hook === 'experimental.session.compacting' ? 'compacting' : 'autocontinue',
        at,
        atMs: l.t,
      };
      session = typeof l.input?.sessionID === 'string' ? l.input.sessionID : undefined;
    }
    if (!input || !session) continue;
    const key = `${l.pid}:${session}`;
    const r = translate(memories.get(key) ?? emptyMemory(), input);
    memories.set(key, r.memory);
    if (r.event) out.push({ session, pid: l.pid, event: r.event });
  }
  return out;
}

/** A core event as a short word for assertions: `pre`, `compacted:<signal>`, `measured`. */
export function word(e: BoundaryEvent): string {
  return e.type === 'compacted' ? `compacted:${e.signal}` : e.type;
}
