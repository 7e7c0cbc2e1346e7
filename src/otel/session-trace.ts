/**
 * One trace per session for every continuity span. Every process that emits continuity spans —
 * the SDK extension, the Claude Code hooks and the recording commands (`src/export`), the
 * processor's and the service's check spans — derives the same trace id from the session id, so
 * the Collector's load-balancing exporter with its default `routing_key: traceID` sends every
 * continuity span of a session to one `continuity serve` instance, whatever else is in the batch
 * and whichever process sent it. The agent's own spans keep their traces; each continuity span
 * links to the agent span that was active where it was recorded, so a trace view still shows it
 * in context.
 *
 * trace id = first 16 bytes of SHA-256(`agent-continuity/session-trace@1` NUL session id), hex.
 * In the SDK a span cannot choose its trace id, so continuity spans start under a remote parent
 * with that trace id and the session's root span id (the next 8 bytes of the same hash), a span
 * no one emits. Check spans are children of their boundary's pre span when it is in the session's
 * trace.
 */
import { createHash } from 'node:crypto';

const LABEL = 'agent-continuity/session-trace@1\u0000';

function digest(sessionId: string): string {
  return createHash('sha256')
    .update(LABEL + sessionId, 'utf8')
    .digest('hex');
}

/** The trace id (32 lower-case hex) of every continuity span of `sessionId`. */
export function sessionTraceId(sessionId: string): string {
  return digest(sessionId).slice(0, 32);
}

/** The span id (16 hex) of the session's root: the parent no span carries, for SDK-made spans. */
export function sessionRootSpanId(sessionId: string): string {
  return digest(sessionId).slice(32, 48);
}
