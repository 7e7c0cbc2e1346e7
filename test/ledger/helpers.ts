/**
 * Helpers for the ledger tests: temporary directories, the CLI as a real child process, and
 * reading a ledger's lines.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ChainKey, canonicalJson, recordHash } from '../../src/ledger/chain.js';
import { atTerminal, withApproverKey } from '../support/human.js';

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const cliPath = join(repoRoot, 'bin', 'continuity.js');
export const writerPath = join(repoRoot, 'test', 'ledger', 'fixtures', 'writer.mjs');

/** A well-formed SHA-256 digest made from `i`. */
export const digestOf = (i: number): string => `sha256:${i.toString(16).padStart(64, '0')}`;

/** 2026-11-30T12:00:`s`Z (seconds past 59 carry over). */
export const utcSecond = (s: number): string => new Date(Date.UTC(2026, 10, 30, 12, 0, s)).toISOString();

/** A fresh temporary directory and a function removing it. */
export function tempDir(prefix = 'ledger-test-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** An environment without the variables that would point the CLI at another ledger or key. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('CONTINUITY_')) delete env[k];
  return { ...env, ...extra };
}

/** Runs `continuity ARGS` and returns its exit code and output. */
export function runCli(
  args: readonly string[],
  options: { env?: NodeJS.ProcessEnv; input?: string } = {},
): { code: number; stdout: string; stderr: string } {
  // In a session of its own (setsid): no controlling terminal, like an agent's tool process, so a
  // command that asks for the approver passphrase refuses instead of prompting whoever runs the tests.
  const r = spawnSync('setsid', ['-w', process.execPath, cliPath, ...args], {
    env: options.env ?? cleanEnv(),
    input: options.input ?? '',
    encoding: 'utf8',
  });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/**
 * Runs `continuity ARGS` as the human at a terminal (./../support/human.ts): on a pseudo-terminal,
 * with an approver key in `XDG_CONFIG_HOME` (made under `base` when the environment has none) and
 * its passphrase typed at the prompt. `stdout` is the terminal's transcript.
 */
export async function runHuman(
  args: readonly string[],
  options: { env: NodeJS.ProcessEnv; base: string; answers?: string[]; noKeyStore?: boolean },
): Promise<{ code: number; stdout: string }> {
  const r = await atTerminal(process.execPath, [cliPath, ...args], {
    env: options.noKeyStore ? options.env : withApproverKey(options.env, options.base),
    cwd: options.base,
    ...(options.answers && { answers: options.answers }),
  });
  return { code: r.status ?? -1, stdout: r.stdout };
}

/** Runs the writer fixture to completion; resolves with the `seq hash` pairs it reported. */
export function runWriter(ledger: string, session: string, count: number): Promise<Map<number, string>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [writerPath, ledger, session, String(count)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`writer ${session} exited ${code}: ${err}`));
      else resolve(parseReports(out));
    });
  });
}

/** Parses `seq hash` lines (complete lines only). */
export function parseReports(out: string): Map<number, string> {
  const m = new Map<number, string>();
  for (const line of out.split('\n')) {
    const [seq, hash] = line.split(' ');
    if (seq && hash) m.set(Number(seq), hash);
  }
  return m;
}

/** The parsed records of a ledger file (whole lines only). */
export function readRecords(path: string): Array<Record<string, unknown>> {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/**
 * A ledger line edited as a careful attacker would: `edit` changes the parsed record, then its
 * hash is recomputed (plain SHA-256, or under `key`) and the line written canonically again.
 */
export function rehashedLine(
  line: string,
  edit: (rec: Record<string, unknown>) => void,
  key?: ChainKey,
): string {
  const rec = JSON.parse(line) as Record<string, unknown>;
  edit(rec);
  rec.hash = recordHash(rec, key);
  return canonicalJson(rec);
}
