'use strict';
// Preloaded (`node --require`) into a hook process by test/codex-e2e/fail-closed.test.ts: the
// gate's slow path never answers, as with a stuck lock or a ledger on a hung file system. The
// runtime's recording bundle is handed back as functions whose promises never settle, and an
// interval keeps the process alive the way a poll would; only the hook's own watchdog ends it.
const Module = module.constructor;
const load = Module._load;
const never = () => new Promise(() => {});
Module._load = function (request, ...rest) {
  if (/hook-(codex|claude-code)\.cjs$/.test(request)) {
    setInterval(() => {}, 1000);
    // Plain own properties: the bundle copies a required module's keys (esbuild's __toESM).
    return { rederive: () => never, handle: never, confirmFromLog: never, restatementContext: never };
  }
  return load.call(this, request, ...rest);
};
