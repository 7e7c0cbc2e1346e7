/**
 * Test support: the Prometheus tools (prometheus, promtool, prometheus-alertmanager, amtool),
 * installed by the tests themselves when they are missing (Debian packages, through
 * `ensureSystemTools` of test/support/peers.ts, as root or with passwordless sudo), and run.
 * What cannot be installed fails with one line naming the command; a test never skips.
 */
import { spawnSync } from 'node:child_process';
import { ensureSystemTools, type SystemTool } from '../support/peers.js';

/** The tools the alerting tests run. */
export type PrometheusTool = 'prometheus' | 'promtool' | 'amtool' | 'prometheus-alertmanager';

/** Each tool and the Debian package that has it. */
export const PROMETHEUS_TOOLS: readonly (SystemTool & { command: PrometheusTool })[] = [
  { command: 'prometheus', debianPackage: 'prometheus' },
  { command: 'promtool', debianPackage: 'prometheus' },
  { command: 'prometheus-alertmanager', debianPackage: 'prometheus-alertmanager' },
  { command: 'amtool', debianPackage: 'prometheus-alertmanager' },
];

/** apt-get on a fresh machine: the package lists, then about 60 MB. */
export const INSTALL_TIMEOUT_MS = 20 * 60_000;

/** Installs what is missing (call from `beforeAll` with {@link INSTALL_TIMEOUT_MS}). */
export function ensurePrometheusTools(): Promise<void> {
  return ensureSystemTools(PROMETHEUS_TOOLS);
}

/** Throws a clear error when `tool` is not on PATH (after {@link ensurePrometheusTools} it is). */
export function requireTool(tool: PrometheusTool): void {
  const r = spawnSync(tool, ['--version'], { encoding: 'utf8' });
  if (r.error !== undefined) {
    const pkg = PROMETHEUS_TOOLS.find((t) => t.command === tool)!.debianPackage;
    throw new Error(
      `${tool} is not on PATH (${(r.error as NodeJS.ErrnoException).code}); install: sudo apt-get install -y --no-install-recommends ${pkg}`,
    );
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
