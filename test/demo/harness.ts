/**
 * `npm run demo -- --serve` as a user runs it (after the build `npm run demo` does first):
 * `node dist/demo/main.js --serve --port 0` in a child process, without the caller's OTEL_* and
 * CONTINUITY_* variables, until the page's address is printed.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** A running demo with its page. */
export interface ServingDemo {
  /** The address the demo printed, `http://127.0.0.1:port/ui`. */
  pageUrl: string;
  /** What it wrote to stdout so far. */
  stdout(): string;
  /** What it wrote to stderr so far. */
  stderr(): string;
  /** SIGTERM; resolves to the exit code. */
  stop(): Promise<number | null>;
}

/** Starts the demo; `args` are added to `--serve --port 0` (e.g. `--approver-key FILE`). */
export async function startServingDemo(args: readonly string[] = []): Promise<ServingDemo> {
  const clean = { ...process.env };
  for (const k of Object.keys(clean))
    if (k.startsWith('OTEL_') || k.startsWith('CONTINUITY_')) delete clean[k];
  const child = spawn(process.execPath, ['dist/demo/main.js', '--serve', '--port', '0', ...args], {
    cwd: root,
    env: clean,
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  const pageUrl = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d) => {
      stdout += d;
      const m = /The continuity page: (http:\/\/127\.0\.0\.1:\d+\/ui)\n/.exec(stdout);
      if (m) resolve(m[1]!);
    });
    void exited.then((code) => reject(new Error(`demo exited ${code}: ${stderr}`)));
  });
  return {
    pageUrl,
    stdout: () => stdout,
    stderr: () => stderr,
    stop: () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
}
