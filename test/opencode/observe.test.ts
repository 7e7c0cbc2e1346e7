/**
 * `continuity observe` for OpenCode, before anything is recorded: a missing session id says
 * where OpenCode shows it (the restatement request its plugin adds), an unusable one is reported
 * as invalid and never quoted, and neither writes a ledger. The whole restatement, on the real
 * binary, is test/opencode/e2e.test.ts.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ENV } from '../../src/adapters/core/config.js';
import { runObserve } from '../../src/adapters/opencode/observe.js';
import { InputError } from '../../src/decision/problems.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function world() {
  const root = mkdtempSync(join(tmpdir(), 'oc-observe-'));
  dirs.push(root);
  const ledger = join(root, 'ledger.jsonl');
  const env = { [ENV.stateDir]: join(root, 'state'), [ENV.ledger]: ledger, PATH: process.env.PATH };
  return { root, ledger, env };
}

async function refusal(p: Promise<unknown>): Promise<string> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(InputError);
  return (e as Error).message;
}

describe('continuity observe for OpenCode, session id', () => {
  it('names where the id is when none is given or recorded, and writes nothing', async () => {
    const w = world();
    const message = await refusal(
      runObserve({ decisions: { scope: 'x' }, source: '--decision', env: w.env, project: w.root }),
    );
    expect(message).toContain(
      '--session: (option): no session given and none recorded for this project; pass --session ID (the id is in the restatement request)',
    );
    expect(existsSync(w.ledger)).toBe(false);
  });

  it('reports an unusable id as invalid, without quoting it, and writes nothing', async () => {
    const w = world();
    const message = await refusal(
      runObserve({
        decisions: { scope: 'x' },
        source: '--decision',
        env: w.env,
        project: w.root,
        session: 'not an/../id',
      }),
    );
    expect(message).toContain('--session: (option): expected an opaque identifier');
    expect(message).not.toContain('pass --session ID');
    expect(message).not.toContain('not an');
    expect(existsSync(w.ledger)).toBe(false);
  });
});
