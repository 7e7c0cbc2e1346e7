#!/usr/bin/env node
// The `continuity` command. Kept tiny: it loads only the compiled entry point it needs.
const { runCli } = await import('../dist/cli/main.js');
process.exitCode = await runCli(process.argv.slice(2));
