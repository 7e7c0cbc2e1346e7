/**
 * One trace per compaction boundary. A boundary's continuity spans — its pre span, its post spans
 * (re-observations included), the approvals recorded against it and the `continuity.check` span
 * that resolves it — share one trace, so the Collector's load-balancing exporter with its default
 * `routing_key: traceID` brings every span the boundary needs to one `continuity serve`
 * instance, and a trace lasts as long as its boundary's evidence (pre capture to post window),
 * never a session's lifetime.
 *
 * Processes that build their spans by hand (the hooks, the recording commands: `src/export`)
 * place them without talking to each other: the trace id and the pre span's id are derived from
 * the session and boundary ids, the boundary's first pre span is the trace's root, and every
 * other span of the boundary is its child. The SDK extension cannot choose a trace id for a span
 * that has no parent, so it places its spans by what it remembers in-process (see
 * `extension.ts`); these ids are only its fallback when a sampler refuses a root.
 *
 * trace id = the first 16 bytes of SHA-256(`agent-continuity/boundary-trace@1` NUL session id
 * NUL boundary id), hex. The pre span's id is the one the hooks have always derived
 * (`agent-continuity/claude-code/<session>/<boundary>/pre`, first 8 bytes), so a post span sent
 * after an upgrade still names its pre span.
 */
import { nodeCrypto } from '../authority/builtins.js';

const TRACE_LABEL = 'agent-continuity/boundary-trace@1\u0000';

/**
 * The namespace the boundary's span ids are derived in. It names the adapter where the derivation
 * was first written; it is kept because the ids are a wire contract: a span re-sent by another
 * process or version (a spooled retry, `continuity observe` re-sending approvals) must be the same span.
 */
const SPAN_NAMESPACE = 'agent-continuity/claude-code';

function sha256Hex(label: string, bytes: number): string {
  return nodeCrypto()
    .createHash('sha256')
    .update(label, 'utf8')
    .digest('hex')
    .slice(0, bytes * 2);
}

/** The trace id (32 lower-case hex) of every continuity span of boundary `boundaryId` of `sessionId`. */
export function boundaryTraceId(sessionId: string, boundaryId: string): string {
  return sha256Hex(`${TRACE_LABEL}${sessionId}\u0000${boundaryId}`, 16);
}

/**
 * A span id (16 hex) of the boundary: `part` `pre` is the boundary's first pre span, the root of
 * its trace; any other part (`post-<seq>`, `approval-<seq>`) names another span of the boundary.
 */
export function boundarySpanId(sessionId: string, boundaryId: string, part: string): string {
  return sha256Hex(`${SPAN_NAMESPACE}/${sessionId}/${boundaryId}/${part}`, 8);
}

/**
 * Ids of a session's span that belongs to no boundary (an approval recorded before the session's
 * first snapshot): a trace of its own, rooted at this span, derived from the session and `part` so
 * a re-send repeats the same span.
 */
export function sessionSpanIds(sessionId: string, part: string): { traceId: string; spanId: string } {
  const base = `${SPAN_NAMESPACE}/${sessionId}/-/${part}`;
  return { traceId: sha256Hex(`${base}/trace`, 16), spanId: sha256Hex(`${base}/span`, 8) };
}
