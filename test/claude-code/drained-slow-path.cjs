'use strict';
// Preloaded (`node --require`) into a hook process by test/claude-code/drained-gate.test.ts: the
// gate's slow path returns promises that never settle and leaves nothing else pending (no timer,
// no open handle), so the event loop drains while the gate still waits: a hook that ended then
// would print nothing, which the gate's protocol reads as no objection.
const Module = module.constructor;
const load = Module._load;
const never = () => new Promise(() => {});
Module._load = function (request, ...rest) {
  if (/hook-(codex|claude-code)\.cjs$/.test(request)) {
    // Plain own properties: the bundle copies a required module's keys (esbuild's __toESM).
    return { rederive: () => never, handle: never, confirmFromLog: never, restatementContext: never };
  }
  return load.call(this, request, ...rest);
};
