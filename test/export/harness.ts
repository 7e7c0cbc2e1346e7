/**
 * Test support for the recording commands' span export: a private ledger directory and a clean
 * environment (nothing of the runner's OTEL_* or CONTINUITY_*), the shared OTLP/HTTP receiver on
 * 127.0.0.1 (test/support/otlp-receiver.ts: bodies, headers, decoded spans), and a port nobody
 * listens on.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export {
  BIN,
  type Receiver,
  ROOT,
  type Run,
  runCli,
  startReceiver,
} from '../claude-code/harness.js';
export { deadEndpoint, spansOf } from '../support/otlp-receiver.js';

/** A temporary directory with a ledger path in it, and an environment that points only there. */
export interface Place {
  dir: string;
  ledger: string;
  /** The recording commands' spool: `<ledger>.spool`. */
  spool: string;
  /** The runner's environment without OTEL_* and CONTINUITY_*, plus CONTINUITY_LEDGER and `extra`. */
  env(extra?: Record<string, string>): NodeJS.ProcessEnv;
  dispose(): void;
}

/** Creates a {@link Place}. */
export function makePlace(prefix = 'export-cli-'): Place {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const ledger = join(dir, 'state', 'ledger.jsonl');
  return {
    dir,
    ledger,
    spool: `${ledger}.spool`,
    env: (extra = {}) => {
      const env: NodeJS.ProcessEnv = {};
      for (const [k, v] of Object.entries(process.env)) {
        if (!k.startsWith('OTEL_') && !k.startsWith('CONTINUITY_')) env[k] = v;
      }
      return { ...env, HOME: join(dir, 'home'), CONTINUITY_LEDGER: ledger, ...extra };
    },
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** The spooled requests (`*.json` / `*.pb`) of a spool directory, oldest first; none when it does not exist. */
export function spooled(dir: string): string[] {
  try {
    return readdirSync(dir)
      .filter((n) => /\.(?:json|pb)$/.test(n))
      .sort();
  } catch {
    return [];
  }
}

/** Every byte of every file under `dir` (ledger, index, spool). */
export function bytesUnder(dir: string): Buffer {
  const out: Buffer[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(readFileSync(p));
    }
  };
  walk(dir);
  return Buffer.concat(out);
}
