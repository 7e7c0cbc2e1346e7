/**
 * Test support: finds the Prometheus tools (prometheus, promtool, prometheus-alertmanager, amtool)
 * and runs them. A missing tool fails the test with the command that installs it; it never skips.
 */
import { spawnSync } from 'node:child_process';

/** The tools scripts/setup-system.sh installs. */
export type PrometheusTool = 'prometheus' | 'promtool' | 'amtool' | 'prometheus-alertmanager';

const SETUP_HINT =
  'Install it with scripts/setup-system.sh (as root on Debian/Ubuntu, e.g. `sudo scripts/setup-system.sh`; ' +
  'elsewhere get Prometheus and Alertmanager from https://prometheus.io/download/ and put them on PATH).';

/** Throws a clear error when `tool` is not on PATH. */
export function requireTool(tool: PrometheusTool): void {
  const r = spawnSync(tool, ['--version'], { encoding: 'utf8' });
  if (r.error !== undefined) {
    throw new Error(`${tool} is not on PATH (${(r.error as NodeJS.ErrnoException).code}). ${SETUP_HINT}`);
  }
}

/** The result of one tool run. */
export interface ToolRun {
  status: number | null;
  stdout: string;
  stderr: string;
  /** stdout and stderr together, for assertion messages. */
  output: string;
}

/** Runs a tool to completion (they finish in well under a second). */
export function runTool(tool: PrometheusTool, args: string[], cwd?: string): ToolRun {
  requireTool(tool);
  const r = spawnSync(tool, args, { encoding: 'utf8', cwd, timeout: 30_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, output: `${r.stdout}\n${r.stderr}` };
}
