/**
 * `continuity hook <runtime>`: the one entry of every runtime whose hooks are commands (Claude
 * Code; Codex's hooks are commands too). `npm run build` bundles it with esbuild into one
 * CommonJS file, `dist/hook.cjs`, which `bin/continuity.js` (CommonJS as well) requires directly:
 * a hook process, the write gate's fast path above all, then loads two files and no ES module
 * graph (an ES module entry alone costs about 1.17× a bare `node -e 0`, an empty CommonJS file
 * 1.00×). What each runtime's recording hooks need (ledger, digests, exporter) lives in a
 * bundle of its own, required only by those hooks (`scripts/build-hook.mjs` lists them).
 *
 * A runtime adapter adds one line to {@link HOOK_RUNTIMES}; its entry module must stay lean
 * (node built-ins and the core's lean modules: `config`, `gate`, `state`, `events`).
 */

/** The runtimes `continuity hook <runtime>` knows, each loaded only when named. */
export const HOOK_RUNTIMES: Readonly<Record<string, () => Promise<number>>> = Object.freeze({
  'claude-code': async () => (await import('./claude-code/hook.js')).runClaudeCodeHook(),
  codex: async () => (await import('./codex/hook.js')).runCodexHook(),
  'qwen-code': async () => (await import('./qwen-code/hook.js')).runQwenCodeHook(),
  copilot: async () => (await import('./copilot/hook.js')).runCopilotHook(),
  gemini: async () => (await import('./gemini/hook.js')).runGeminiHook(),
});

/**
 * Runs one hook event of `runtime` (stdin in, the runtime's answer out). Returns the exit code, or
 * `undefined` for a runtime it does not know (the caller then lets the full CLI report it).
 */
export async function runHook(runtime: string): Promise<number | undefined> {
  const run = Object.hasOwn(HOOK_RUNTIMES, runtime) ? HOOK_RUNTIMES[runtime] : undefined;
  return run ? run() : undefined;
}
