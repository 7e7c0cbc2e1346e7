/**
 * The state a {@link ContinuityProcessor} resolved for a post span it could no longer write on.
 *
 * SDKs before sdk-trace-base 2.3 never call `SpanProcessor.onEnding`, so the processor sees the
 * post span only in `onEnd`, when the span is read-only: the state then travels on a
 * `continuity.check` span, and is kept here (per span object, weakly) so that the extension's
 * `observePost` still returns it to the agent. In-process only; nothing here is exported.
 */
import type { ContinuityState } from '../classify/states.js';

const states = new WeakMap<object, ContinuityState>();

/** Remembers the state resolved for an ended post span. */
export function rememberEndedState(span: object, state: ContinuityState): void {
  states.set(span, state);
}

/** The state remembered for an ended post span, if the processor resolved one. */
export function recallEndedState(span: object): ContinuityState | undefined {
  return states.get(span);
}
