#!/usr/bin/env node
// The `continuity` command. CommonJS (bin/package.json), so that `continuity hook <runtime>`, the
// write gate among the hooks, loads two CommonJS files (this one and the bundled dist/hook.cjs)
// and never starts the ES module loader; every other command loads the CLI (an ES module).
'use strict';
const argv = process.argv.slice(2);

function cli() {
  import('../dist/cli/main.js').then(
    async ({ runCli }) => {
      process.exitCode = await runCli(argv);
    },
    (e) => {
      process.stderr.write(`continuity: ${e.message}; run npm run build in the checkout\n`);
      process.exitCode = 3;
    },
  );
}

if (argv.length === 2 && argv[0] === 'hook') {
  // Hooks run once per event: exit as soon as the answer is written, so nothing left in the event
  // loop can hold the agent up. An unknown runtime goes to the CLI, which says what it expects.
  require('../dist/hook.cjs')
    .runHook(argv[1])
    .then((code) => (code === undefined ? cli() : process.exit(code)));
} else {
  cli();
}
