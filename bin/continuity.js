#!/usr/bin/env node
// The `continuity` command. Kept tiny: it loads only the compiled entry point it needs.
const argv = process.argv.slice(2);
if (argv.length === 2 && argv[0] === 'hook' && argv[1] === 'claude-code') {
  // Claude Code hooks, the write gate among them, run once per event: go straight to the lean
  // adapter module (no commander, zod or OpenTelemetry on the gate's path), and exit as soon as
  // it is done so nothing left in the event loop can hold the agent up.
  const { runClaudeCodeHook } = await import('../dist/adapters/claude-code/hook.js');
  process.exit(await runClaudeCodeHook());
} else if (argv.length === 2 && argv[0] === 'hook' && argv[1] === 'codex') {
  // The same for Codex CLI: its hooks fail open when they time out, so the gate must be quick.
  const { runCodexHook } = await import('../dist/adapters/codex/hook.js');
  process.exit(await runCodexHook());
} else {
  const { runCli } = await import('../dist/cli/main.js');
  process.exitCode = await runCli(argv);
}
