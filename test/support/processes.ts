/**
 * Child processes for the end-to-end suites: run one without blocking the event loop (the test's
 * scripted servers and receivers live there), bound how many of a real binary run at once (2 shared
 * cores), and give them an environment with nothing of the runner's beyond PATH, LANG and TZ.
 */
import { spawn } from 'node:child_process';

/** What a child process did. */
export interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a child process to its end; killed (SIGKILL) after `timeoutMs` (default 60 s). */
export function run(
  command: string,
  args: string[],
  options: { env: NodeJS.ProcessEnv; cwd: string; input?: string | Buffer; timeoutMs?: number },
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      stdout += c;
    });
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      stderr += c;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
    child.stdin.on('error', () => {}); // a child that exits early must not fail the test on EPIPE
    child.stdin.end(options.input ?? '');
  });
}

/**
 * A limiter: `withSlot(fn)` runs `fn` once fewer than `max` others run. The default is
 * `CONTINUITY_E2E_CONCURRENCY`, else 2.
 */
export function slots(max = Number(process.env.CONTINUITY_E2E_CONCURRENCY) || 2) {
  let running = 0;
  const waiting: Array<() => void> = [];
  return async function withSlot<T>(fn: () => Promise<T>): Promise<T> {
    if (running >= max) await new Promise<void>((r) => waiting.push(r));
    running++;
    try {
      return await fn();
    } finally {
      running--;
      waiting.shift()?.();
    }
  };
}

/** An environment of PATH, LANG and TZ from the runner's (when set) and `extra`: no OTEL_*, CONTINUITY_*, runtime keys. */
export function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const k of ['PATH', 'LANG', 'TZ']) if (process.env[k] !== undefined) env[k] = process.env[k];
  return { ...env, ...extra };
}
