// @ts-check
// What the per-tool-call benches (tool-call.bench.js for Claude Code, tool-call-codex.bench.js for
// Codex) share: the tests' own TypeScript support modules bundled to one ES module with esbuild (a
// devDependency, so the benches need no TypeScript loader), and a command run to its end.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * Bundles `exports` (export lines over repository-relative .ts modules) into `work/support.mjs`
 * and imports it. @param {string} work @param {string[]} exports @returns {Promise<any>}
 */
export async function bundleSupport(work, exports) {
  const out = join(work, 'support.mjs');
  await build({
    stdin: { contents: `${exports.join('\n')}\n`, resolveDir: ROOT, loader: 'ts' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    outfile: out,
    logLevel: 'warning',
  });
  return import(pathToFileURL(out).href);
}

/**
 * Runs a command to its end; resolves with its exit code and output.
 * @param {string} cmd @param {string[]} args @param {{ env: NodeJS.ProcessEnv, cwd: string }} o
 * @returns {Promise<{ code: number | null, stdout: string, stderr: string }>}
 */
export function run(cmd, args, o) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { ...o, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => {
      stdout += c;
    });
    child.stderr.on('data', (c) => {
      stderr += c;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
