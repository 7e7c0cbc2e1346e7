/**
 * The state a {@link ContinuityProcessor} resolved for a post span it could no longer write on.
 *
 * SDKs before sdk-trace-base 2.3 never call `SpanProcessor.onEnding`, so the processor sees the
 * post span only in `onEnd`, when the span is read-only: the state then travels on a
 * `continuity.check` span, and is kept here (per span object, weakly) so that the extension's
 * `observePost` still returns it to the agent. In-process only; nothing here is exported.
 */
import type { ContinuityState } from '../classify/states.js';

// One map per process, not per module instance: an app may load the processor through `require`
// (a `node --require ./tracing.js` set-up, the CommonJS build) and the extension through `import`.
const KEY = Symbol.for('agent-continuity.ended-state');
const holder = globalThis as { [KEY]?: WeakMap<object, ContinuityState> };
holder[KEY] ??= new WeakMap<object, ContinuityState>();
const states = holder[KEY];

/** Remembers the state resolved for an ended post span. */
export function rememberEndedState(span: object, state: ContinuityState): void {
  states.set(span, state);
}

/** The state remembered for an ended post span, if the processor resolved one. */
export function recallEndedState(span: object): ContinuityState | undefined {
  return states.get(span);
}
