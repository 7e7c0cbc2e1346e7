/**
 * `continuity mcp`: the restatement as an MCP server on stdin/stdout, started by the agent runtime
 * from the configuration `continuity init` writes (Claude Code's `.mcp.json`, Codex's
 * `[mcp_servers.continuity]`). The agent restates through the `restate` tool, which needs no
 * shell, so it works with the runtime's Bash sandbox on. See src/adapters/core/mcp.ts.
 */
import type { Command } from 'commander';
import { InputError } from '../../decision/problems.js';
import { OBSERVE_RUNTIMES, type ObserveRuntime, type RUNTIME_NAMES } from './observe.js';

/** The runtimes `continuity mcp` serves (those whose configuration starts MCP servers). */
const MCP_RUNTIMES: readonly ObserveRuntime[] = ['claude-code', 'codex'];

/** Registers `continuity mcp`. */
export function registerMcp(program: Command): void {
  program
    .command('mcp')
    .description(
      'serve the restate tool over MCP (stdio) for the agent runtime that starts it; what continuity init registers',
    )
    .option('--runtime <runtime>', `the agent runtime: ${MCP_RUNTIMES.join(', ')}`, 'claude-code')
    .action(async (opts: { runtime: string }) => {
      if (!MCP_RUNTIMES.includes(opts.runtime as ObserveRuntime)) {
        throw new InputError('--runtime', [
          {
            path: '(option)',
            message: `unknown runtime "${opts.runtime}"; expected ${MCP_RUNTIMES.join(', ')}`,
          },
        ]);
      }
      const runtime = opts.runtime as (typeof RUNTIME_NAMES)[number];
      const [{ serveMcpStdio }, { renderRestatement }, restate] = await Promise.all([
        import('../../adapters/core/mcp.js'),
        import('../../adapters/core/restatement.js'),
        OBSERVE_RUNTIMES[runtime].load(),
      ]);
      await serveMcpStdio(process.stdin, process.stdout, {
        version: program.version() ?? '0.0.0',
        render: renderRestatement,
        warn: (line) => process.stderr.write(`continuity: ${line}\n`),
        restate: ({ decisions, session, source }) =>
          restate({ decisions, source, ...(session !== undefined ? { session } : {}) }),
      });
    });
}
