/**
 * `continuity classify FILE [--json]` (issue 2 §6) as a user runs it: a real child process of
 * `node bin/continuity.js`, real files, exit codes from src/cli/exit-codes.ts.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { EXIT } from '../../src/cli/exit-codes.js';
import { digestValue } from '../../src/digest/digest.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'bin', 'continuity.js');
const SIX = join(ROOT, 'examples', 'six-case', 'cases.json');

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI in a child process; tests run concurrently, so this never blocks the worker. */
function run(args: string[], input?: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, timeout: 30_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      stdout += c;
    });
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      stderr += c;
    });
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
    child.stdin.end(input ?? '');
  });
}

let dir = '';

function file(name: string, content: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

beforeAll(() => {
  // bin/continuity.js runs dist/; build it once for this file. tsc exits non-zero when another
  // helper's work in progress has a type error but still emits, so only a missing output fails.
  try {
    execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'pipe' });
  } catch {
    // checked below
  }
  if (!existsSync(join(ROOT, 'dist', 'cli', 'main.js')))
    throw new Error('build produced no dist/cli/main.js');
  dir = mkdtempSync(join(tmpdir(), 'continuity-classify-'));
});

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const T_PRE = '2026-11-30T10:00:00Z';
const T_POST = '2026-11-30T10:05:00Z';

/** A valid one-case fixture with `override` merged into the case. */
function fixture(override: Record<string, unknown> = {}): unknown {
  return {
    cases: [
      {
        id: 'c1',
        pre: { capturedAt: T_PRE, decisions: { scope: { value: 'acme/payments', observedAt: T_PRE } } },
        post: { capturedAt: T_POST, decisions: { scope: { value: 'acme/payments', observedAt: T_POST } } },
        ...override,
      },
    ],
  };
}

// Each test starts its own processes and writes its own files, so they can run side by side.
describe.concurrent('continuity classify', () => {
  describe('the six cases', () => {
    it('prints the --json document of issue 2 §6 with the expected counts', async ({ expect }) => {
      const r = await run(['classify', SIX, '--json']);
      expect(r.stderr).toBe('');
      expect(r.status).toBe(EXIT.ok);
      const doc = JSON.parse(r.stdout) as {
        cases: Array<Record<string, unknown> & { decisions: Record<string, Record<string, unknown>> }>;
        counts: Record<string, number>;
        eventOnlyCounts: Record<string, number>;
      };
      expect(Object.keys(doc)).toEqual(['cases', 'counts', 'eventOnlyCounts']);
      expect(doc.counts).toEqual({
        preserved: 2,
        approved_change: 1,
        unverified: 1,
        dropped: 1,
        conflicting: 1,
      });
      expect(doc.eventOnlyCounts).toEqual({ healthy: 6, unhealthy: 0 });
      expect(doc.cases).toHaveLength(6);
      for (const c of doc.cases) {
        expect(Object.keys(c)).toEqual([
          'id',
          'state',
          'action',
          'reason',
          'primaryDecision',
          'decisions',
          'eventOnly',
        ]);
        expect(c.eventOnly).toBe('healthy');
        for (const d of Object.values(c.decisions)) {
          expect(Object.keys(d).filter((k) => k !== 'approvalRefs')).toEqual(['verdict', 'reason']);
        }
      }
      expect(doc.cases.map((c) => [c.id, c.state, c.action, c.reason, c.primaryDecision])).toEqual([
        ['case-1-preserved', 'preserved', 'continue', 'digest_match_fresh', 'approval_boundary'],
        ['case-2-preserved', 'preserved', 'continue', 'digest_match_fresh', 'approval_boundary'],
        [
          'case-3-approved-test-change',
          'approved_change',
          'continue_with_audit',
          'approved_chain',
          'acceptance_test',
        ],
        [
          'case-4-dropped-approval-boundary',
          'dropped',
          'pause_and_restore',
          'absent_after_compaction',
          'approval_boundary',
        ],
        ['case-5-conflicting-scope', 'conflicting', 'stop_and_ask_human', 'unapproved_change', 'scope'],
        ['case-6-stale-test-digest', 'unverified', 'reobserve', 'stale_observation', 'acceptance_test'],
      ]);
      expect(doc.cases[2]!.decisions.acceptance_test).toEqual({
        verdict: 'approved_change',
        reason: 'approved_chain',
        approvalRefs: ['approval-4821'],
      });
    });

    it('prints a table with each case, its event-only verdict, state and action, then the counts', async ({
      expect,
    }) => {
      const r = await run(['classify', SIX]);
      expect(r.status).toBe(EXIT.ok);
      const lines = r.stdout.trimEnd().split('\n');
      expect(lines[0]).toMatch(/^case\s+event-only rule\s+continuity state\s+decision\s+reason\s+action$/);
      expect(lines[4]).toMatch(
        /^case-3-approved-test-change\s+healthy\s+approved_change\s+acceptance_test\s+approved_chain\s+continue_with_audit$/,
      );
      expect(lines[7]).toMatch(
        /^case-6-stale-test-digest\s+healthy\s+unverified\s+acceptance_test\s+stale_observation\s+reobserve$/,
      );
      expect(r.stdout).toContain(
        'classifier: preserved 2 · approved_change 1 · unverified 1 · dropped 1 · conflicting 1',
      );
      expect(r.stdout).toContain('event-only: healthy 6 · unhealthy 0');
    });

    it('never prints a raw decision value', async ({ expect }) => {
      const r = await run(['classify', SIX, '--json']);
      expect(r.stdout).not.toContain('acme/payments');
      expect(r.stdout).not.toContain('npm test');
    });

    it('reads the fixture from stdin with -', async ({ expect }) => {
      const r = await run(['classify', '-', '--json'], readFileSync(SIX, 'utf8'));
      expect(r.status).toBe(EXIT.ok);
      expect((JSON.parse(r.stdout) as { counts: Record<string, number> }).counts.preserved).toBe(2);
    });
  });

  describe('valid files exit 0 whatever the states', () => {
    it('exits 0 for a boundary without a post snapshot, reported as unverified and unhealthy', async ({
      expect,
    }) => {
      const r = await run(['classify', file('no-post.json', fixture({ post: null })), '--json']);
      expect(r.status).toBe(EXIT.ok);
      const doc = JSON.parse(r.stdout) as { cases: Array<Record<string, unknown>>; eventOnlyCounts: object };
      expect(doc.cases[0]).toEqual({
        id: 'c1',
        state: 'unverified',
        action: 'reobserve',
        reason: 'post_observation_missing',
        primaryDecision: null,
        decisions: {},
        eventOnly: 'unhealthy',
      });
      expect(doc.eventOnlyCounts).toEqual({ healthy: 0, unhealthy: 1 });
    });

    it('accepts digests instead of values, and an explicit events override', async ({ expect }) => {
      const digest = digestValue('acme/payments');
      const r = await run([
        'classify',
        file(
          'digests.json',
          fixture({
            post: { capturedAt: T_POST, decisions: { scope: { digest, revision: 1, observedAt: T_POST } } },
            events: { pre: true, post: false },
          }),
        ),
        '--json',
      ]);
      expect(r.status).toBe(EXIT.ok);
      const doc = JSON.parse(r.stdout) as { cases: Array<{ state: string; eventOnly: string }> };
      expect(doc.cases[0]).toMatchObject({ state: 'preserved', eventOnly: 'unhealthy' });
    });

    it('applies compactedAt from the fixture', async ({ expect }) => {
      const r = await run(['classify', file('compacted.json', fixture({ compactedAt: T_POST })), '--json']);
      const doc = JSON.parse(r.stdout) as { cases: Array<{ state: string; reason: string }> };
      expect(doc.cases[0]).toMatchObject({ state: 'unverified', reason: 'stale_observation' });
    });

    it('accepts an empty list of cases', async ({ expect }) => {
      const r = await run(['classify', file('empty.json', { cases: [] }), '--json']);
      expect(r.status).toBe(EXIT.ok);
      expect(JSON.parse(r.stdout)).toEqual({
        cases: [],
        counts: { preserved: 0, approved_change: 0, unverified: 0, dropped: 0, conflicting: 0 },
        eventOnlyCounts: { healthy: 0, unhealthy: 0 },
      });
    });
  });

  describe('invalid input exits 2, names the file and the field, and prints nothing on stdout', () => {
    const HMAC = `hmac-sha256:${'0f'.repeat(8)}:${'ab'.repeat(32)}`;
    const cases: Array<[string, unknown, string]> = [
      ['bad JSON', '{"cases": [', '(root): invalid JSON'],
      ['a JSON array at the root', [], '(root):'],
      ['cases not an array', { cases: { id: 'c1' } }, 'cases:'],
      [
        'a wrong type (revision as a string)',
        fixture({
          pre: { capturedAt: T_PRE, decisions: { scope: { value: 1, revision: '1', observedAt: T_PRE } } },
        }),
        'cases[0].pre.decisions.scope.revision: expected a revision (integer >= 1)',
      ],
      ['a wrong type (post as a number)', fixture({ post: 5 }), 'cases[0].post:'],
      [
        'a bad decision name',
        fixture({
          pre: { capturedAt: T_PRE, decisions: { AcceptanceTest: { value: 1, observedAt: T_PRE } } },
        }),
        'cases[0].pre.decisions.AcceptanceTest: invalid key: expected a decision name',
      ],
      [
        'a decision name with a hyphen',
        fixture({
          post: { capturedAt: T_POST, decisions: { 'approval-boundary': { value: 1, observedAt: T_POST } } },
        }),
        'cases[0].post.decisions["approval-boundary"]: invalid key',
      ],
      [
        'an impossible date (2026-02-30)',
        fixture({ pre: { capturedAt: '2026-02-30T00:00:00Z', decisions: {} } }),
        'cases[0].pre.capturedAt: expected RFC 3339 UTC time',
      ],
      [
        'a non-UTC offset',
        fixture({
          post: {
            capturedAt: T_POST,
            decisions: { scope: { value: 1, observedAt: '2026-11-30T12:05:00+02:00' } },
          },
        }),
        'cases[0].post.decisions.scope.observedAt: expected RFC 3339 UTC time',
      ],
      [
        'a bad compactedAt',
        fixture({ compactedAt: 'yesterday' }),
        'cases[0].compactedAt: expected RFC 3339 UTC time',
      ],
      [
        'value and digest both set',
        fixture({
          post: { capturedAt: T_POST, decisions: { scope: { value: 1, digest: HMAC, observedAt: T_POST } } },
        }),
        'cases[0].post.decisions.scope: expected exactly one of "value" or "digest"',
      ],
      ['an unknown field in a case', fixture({ note: 'x' }), 'cases[0].note: unknown field; remove it'],
      [
        'an unknown field in an observation',
        fixture({
          pre: { capturedAt: T_PRE, decisions: { scope: { value: 1, observedAt: T_PRE, raw: 'x' } } },
        }),
        'cases[0].pre.decisions.scope.raw: unknown field; remove it',
      ],
      [
        'a malformed digest',
        fixture({
          post: { capturedAt: T_POST, decisions: { scope: { digest: 'sha256:1234', observedAt: T_POST } } },
        }),
        'cases[0].post.decisions.scope.digest: expected a digest',
      ],
      [
        'an approval without approvedBy',
        fixture({
          approvals: [{ decision: 'scope', from: 1, to: 2, approvalRef: 'a-1', approvedAt: T_PRE }],
        }),
        'cases[0].approvals[0].approvedBy:',
      ],
      [
        'a value the normalizer refuses',
        '{"cases":[{"id":"c1","pre":{"capturedAt":"2026-11-30T10:00:00Z","decisions":{"scope":{"value":"\\ud800","observedAt":"2026-11-30T10:00:00Z"}}},"post":null}]}',
        'cases[0].pre.decisions.scope.value: string has a lone UTF-16 surrogate',
      ],
    ];

    it.for(cases)('%s', async ([why, content, expected], { expect }) => {
      const path = file(`bad-${why.replace(/\W+/g, '-')}.json`, content);
      const r = await run(['classify', path, '--json']);
      expect(r.stdout).toBe('');
      expect(r.status).toBe(EXIT.badInput);
      expect(r.stderr).toContain(`${path}: ${expected}`);
    });

    it('exits 2 for the table output too', async ({ expect }) => {
      const r = await run(['classify', file('bad-table.json', '{')]);
      expect(r.status).toBe(EXIT.badInput);
      expect(r.stdout).toBe('');
    });

    it('exits 2 when the file does not exist, naming it', async ({ expect }) => {
      const missing = join(dir, 'missing.json');
      const r = await run(['classify', missing]);
      expect(r).toEqual({
        status: EXIT.badInput,
        stdout: '',
        stderr: `continuity: ${missing}: (file): cannot read: no such file or directory (ENOENT)\n`,
      });
    });

    it('exits 2 when the path is a directory', async ({ expect }) => {
      const sub = join(dir, 'a-directory');
      mkdirSync(sub, { recursive: true });
      const r = await run(['classify', sub]);
      expect(r.status).toBe(EXIT.badInput);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain(`${sub}: (file): cannot read: is a directory (EISDIR)`);
    });

    it('names stdin as the source for -', async ({ expect }) => {
      const r = await run(['classify', '-'], 'not json');
      expect(r.status).toBe(EXIT.badInput);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain('(stdin): (root): invalid JSON');
    });

    it('exits 2 for a missing file argument or an unknown option, with nothing on stdout', async ({
      expect,
    }) => {
      const noFile = await run(['classify']);
      expect(noFile.status).toBe(EXIT.badInput);
      expect(noFile.stdout).toBe('');
      expect(noFile.stderr).toMatch(/missing required argument 'file'/);
      const unknown = await run(['classify', SIX, '--yaml']);
      expect(unknown.status).toBe(EXIT.badInput);
      expect(unknown.stdout).toBe('');
      expect(unknown.stderr).toMatch(/unknown option '--yaml'/);
    });
  });

  describe('--help', () => {
    it('describes the subcommand, its argument, --json and where the format is documented', async ({
      expect,
    }) => {
      const r = await run(['classify', '--help']);
      expect(r.status).toBe(EXIT.ok);
      expect(r.stdout).toMatch(/^Usage: continuity classify \[options\] <file>/);
      expect(r.stdout).toContain('--json');
      expect(r.stdout).toContain('docs/fixture-format.md');
      expect(r.stdout).toMatch(/-, for stdin|or - for stdin/);
    });

    it('lists classify in the top-level help', async ({ expect }) => {
      const r = await run(['--help']);
      expect(r.status).toBe(EXIT.ok);
      expect(r.stdout).toMatch(/classify \[options\] <file>/);
    });
  });
});
