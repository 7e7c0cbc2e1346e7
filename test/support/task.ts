/**
 * The task every end-to-end scenario works on, with decision values unique to the scenario (so
 * the leak scans can look for each), and readers of what the adapters wrote: the ledger's records
 * and every byte under a state directory.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A decision of the task record. */
export interface TaskDecision {
  value: unknown;
  sensitive?: boolean;
}

/** A unique string: `label-<12 hex>`. */
export function marker(label: string): string {
  return `${label}-${randomBytes(6).toString('hex')}`;
}

/** The decision values of a task, each string unique to the scenario. */
export interface TaskValues {
  scope: { repository: string; paths: string[] };
  approval_boundary: { requires_human: string[] };
  acceptance_test: { command: string; must_pass: boolean };
}

/** Fresh values; `approval_boundary` is sensitive (digested with the keyed HMAC). */
export function taskValues(): TaskValues {
  return {
    scope: { repository: marker('acme/payments'), paths: [marker('services/ledger')] },
    approval_boundary: { requires_human: ['deploy', marker('schema_migration')] },
    acceptance_test: { command: `npm test -- ${marker('ledger')}`, must_pass: true },
  };
}

/** The same task with the scope widened (a change a human has to approve). */
export function widened(v: TaskValues): TaskValues {
  return { ...v, scope: { ...v.scope, paths: [...v.scope.paths, marker('services/billing')] } };
}

/** The task record's decisions for `values`. */
export function taskRecord(v: TaskValues): Record<string, TaskDecision> {
  return {
    scope: { value: v.scope },
    approval_boundary: { value: v.approval_boundary, sensitive: true },
    acceptance_test: { value: v.acceptance_test },
  };
}

/** Every string of the values (the leak scans look for each). */
export function rawStrings(...values: unknown[]): string[] {
  const out = new Set<string>();
  const walk = (v: unknown) => {
    if (typeof v === 'string' && v.length >= 8) out.add(v);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  values.forEach(walk);
  return [...out];
}

/** The ledger's records, in order (none when it does not exist yet). */
export function readLedger(path: string): Array<Record<string, unknown>> {
  return existsSync(path)
    ? readFileSync(path, 'utf8')
        .split('\n')
        .filter((l) => l.length > 0)
        .map((l) => JSON.parse(l) as Record<string, unknown>)
    : [];
}

/** Every byte of every file under `dir`. */
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

/** A fresh 32-byte key, hex, in a 0600 file (a digest or chain key). */
export function writeKey(path: string): void {
  writeFileSync(path, randomBytes(32).toString('hex'), { mode: 0o600 });
}
