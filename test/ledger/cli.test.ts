/**
 * The recording commands as a user runs them (real child processes): a full snapshot → approve →
 * status flow whose ledger holds none of the raw values used, bad input that exits 2 with nothing
 * appended, keyed digests for sensitive decisions, and the lean reader's import graph.
 */
import { chmodSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanEnv, readRecords, repoRoot, runCli, runHuman, tempDir } from './helpers.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

// Raw values that must never reach the ledger, its index or its quarantine.
const RAW = {
  scope: 'acme-payments-services-ledger-only',
  approval: 'deploy-requires-human-sign-off-from-oncall',
  target: 'release/2026-11-hotfix-branch',
  newTarget: 'release/2026-12-hotfix-branch',
  test: 'npm test -- ledger --grep continuity',
  secretValue: 'yes-the-customer-is-acme-bank',
};

function allLedgerBytes(dir: string): Buffer {
  const parts: Buffer[] = [];
  const walk = (p: string) => {
    for (const name of readdirSync(p)) {
      const full = join(p, name);
      if (statSync(full).isDirectory()) walk(full);
      else parts.push(readFileSync(full));
    }
  };
  walk(dir);
  return Buffer.concat(parts);
}

describe('snapshot → approve → status through the CLI', () => {
  const stateDir = join(tmp.dir, 'flow', 'state');
  const ledger = join(stateDir, 'ledger.jsonl');
  const keyFile = join(tmp.dir, 'flow-digest.key');
  const env = () => cleanEnv({ CONTINUITY_LEDGER: ledger, CONTINUITY_DIGEST_KEY_FILE: keyFile });

  it('records, classifies from the evidence, and stores no raw value anywhere', async () => {
    writeFileSync(keyFile, 'ab'.repeat(32));
    chmodSync(keyFile, 0o600);
    const pre = {
      scope: RAW.scope,
      approval_boundary: { value: { requires_human: [RAW.approval] }, source: 'task-record' },
      target: RAW.target,
      acceptance_test: { value: RAW.test, revision: 2 },
      constraint: { value: RAW.secretValue, sensitive: true },
    };
    const snap = runCli(
      [
        'snapshot',
        '--session',
        'sess-1',
        '--phase',
        'pre',
        '--runtime',
        'claude-code',
        '--trigger',
        'auto',
        '--decisions',
        '-',
      ],
      { env: env(), input: JSON.stringify(pre) },
    );
    expect(snap.stderr).toBe('');
    expect(snap.code).toBe(0);
    const boundaryId = snap.stdout.trim();
    expect(boundaryId).toMatch(/^[0-9a-f-]{36}$/);

    // The agent comes back with another target; the post snapshot defaults to the latest boundary.
    const post = { ...pre, target: RAW.newTarget, constraint: RAW.secretValue };
    delete (post as Record<string, unknown>).approval_boundary;
    const decisionsFile = join(tmp.dir, 'post.json');
    writeFileSync(decisionsFile, JSON.stringify(post));
    const snapPost = runCli(
      ['snapshot', '--session', 'sess-1', '--phase', 'post', '--decisions', decisionsFile],
      { env: env() },
    );
    expect(snapPost).toMatchObject({ code: 0, stdout: `${boundaryId}\n` });

    let status = runCli(['status', '--session', 'sess-1', '--json'], { env: env() });
    expect(status.code).toBe(0);
    let doc = JSON.parse(status.stdout) as { sessions: Array<Record<string, unknown>> };
    expect(doc.sessions[0]).toMatchObject({
      sessionId: 'sess-1',
      boundaryId,
      state: 'conflicting',
      primaryDecision: 'target',
    });
    expect(
      (doc.sessions[0]!.decisions as Record<string, { verdict: string }>).approval_boundary?.verdict,
    ).toBe('dropped');
    // The post side of a sensitive decision inherits the keyed scheme, so it still matches.
    expect((doc.sessions[0]!.decisions as Record<string, { verdict: string }>).constraint?.verdict).toBe(
      'preserved',
    );

    // The human approves the target change (at a terminal, the passphrase typed); the agent
    // restores the approval boundary.
    const approve = await runHuman(
      [
        'approve',
        '--session',
        'sess-1',
        '--decision',
        'target',
        '--from',
        RAW.target,
        '--to',
        RAW.newTarget,
        '--ref',
        'PR-4821',
        '--by',
        'alice',
      ],
      { env: env(), base: join(tmp.dir, 'flow') },
    );
    expect(approve.code, approve.stdout).toBe(0);
    // seq 3 is the approver key's certificate, pinned on the ledger at its first use.
    expect(approve.stdout).toMatch(
      /approval recorded: target \(ref PR-4821\), seq 4, signed by ed25519:[0-9a-f]{32}\r?\n$/,
    );
    writeFileSync(
      decisionsFile,
      JSON.stringify({ ...post, approval_boundary: { value: { requires_human: [RAW.approval] } } }),
    );
    expect(
      runCli(['snapshot', '--session', 'sess-1', '--phase', 'post', '--decisions', decisionsFile], {
        env: env(),
      }).code,
    ).toBe(0);

    status = runCli(['status', '--session', 'sess-1', '--json', '--receipt'], { env: env() });
    doc = JSON.parse(status.stdout) as typeof doc;
    expect(doc.sessions[0]).toMatchObject({
      state: 'approved_change',
      action: 'continue_with_audit',
      primaryDecision: 'target',
    });
    const table = runCli(['status'], { env: env() });
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(
      /sess-1\s+\S+\s+approved_change\s+continue_with_audit\s+target\s+approved_chain/,
    );

    // The receipt is appended once, with the seqs of its evidence; the evidence stays.
    runCli(['status', '--session', 'sess-1', '--receipt'], { env: env() });
    const records = readRecords(ledger);
    expect(records.map((r) => r.type)).toEqual([
      'snapshot',
      'snapshot',
      'approver_key',
      'approval',
      'snapshot',
      'classification',
    ]);
    expect(records[5]).toMatchObject({
      state: 'approved_change',
      evidence: { pre: 1, post: 5, boundary: null, approvals: [4] },
    });
    expect((records[0]!.decisions as Record<string, { digest: string }>).constraint?.digest).toMatch(
      /^hmac-sha256:/,
    );

    expect(runCli(['ledger', 'verify'], { env: env() }).code).toBe(0);

    const bytes = allLedgerBytes(stateDir).toString('utf8');
    for (const [name, value] of Object.entries(RAW)) {
      expect(bytes.includes(value), `raw value ${name} found in the ledger files`).toBe(false);
    }
    expect(bytes.includes(readFileSync(keyFile, 'utf8'))).toBe(false);
    expect(bytes.includes(tmp.dir)).toBe(false);

    expect(statSync(ledger).mode & 0o777).toBe(0o600);
    expect(statSync(stateDir).mode & 0o777).toBe(0o700);
  });
});

describe('bad input', () => {
  const ledger = join(tmp.dir, 'bad', 'ledger.jsonl');
  const env = () => cleanEnv({ CONTINUITY_LEDGER: ledger });
  const good = JSON.stringify({ scope: 'a', target: 'b', acceptance_test: 'c' });

  const cases: Array<[string, string[], string, RegExp]> = [
    [
      'invalid JSON',
      ['snapshot', '--session', 's', '--phase', 'pre', '--decisions', '-'],
      '{"scope":',
      /\(stdin\): \(root\): invalid JSON/,
    ],
    [
      'an unknown phase',
      ['snapshot', '--session', 's', '--phase', 'mid', '--decisions', '-'],
      good,
      /Allowed choices are pre, post/,
    ],
    ['a missing session', ['snapshot', '--phase', 'pre', '--decisions', '-'], good, /--session/],
    [
      'a session id with spaces',
      ['snapshot', '--session', 'my session', '--phase', 'pre', '--decisions', '-'],
      good,
      /--session/,
    ],
    [
      'a session id that is a path',
      ['snapshot', '--session', '/home/alice', '--phase', 'pre', '--decisions', '-'],
      good,
      /--session/,
    ],
    [
      'a value the normalizer refuses',
      ['snapshot', '--session', 's', '--phase', 'pre', '--decisions', '-'],
      '{"scope":"\\ud800","target":"b","acceptance_test":"c"}',
      /scope: string has a lone UTF-16 surrogate/,
    ],
    [
      'a bad decision name',
      ['snapshot', '--session', 's', '--phase', 'pre', '--decisions', '-'],
      '{"Scope!":"a","target":"b","acceptance_test":"c"}',
      /Scope!/,
    ],
    [
      'too few decisions for a pre snapshot',
      ['snapshot', '--session', 's', '--phase', 'pre', '--decisions', '-'],
      '{"scope":"a"}',
      /expected 3 to 7 decisions, got 1/,
    ],
    [
      'a bad observedAt',
      ['snapshot', '--session', 's', '--phase', 'pre', '--decisions', '-'],
      '{"scope":{"value":"a","observedAt":"yesterday"},"target":"b","acceptance_test":"c"}',
      /scope\.observedAt: expected RFC 3339/,
    ],
    [
      'a post with no boundary to attach to',
      ['snapshot', '--session', 'new', '--phase', 'post', '--decisions', '-'],
      good,
      /--boundary: session has no boundary/,
    ],
    [
      'an approval with both --from and --from-digest',
      [
        'approve',
        '--session',
        's',
        '--decision',
        'scope',
        '--from',
        'a',
        '--from-digest',
        `sha256:${'0'.repeat(64)}`,
        '--to',
        'b',
        '--ref',
        'R',
        '--by',
        'x',
      ],
      '',
      /--from: give exactly one/,
    ],
    [
      'an approval with a malformed digest',
      [
        'approve',
        '--session',
        's',
        '--decision',
        'scope',
        '--from-digest',
        'sha256:xyz',
        '--to',
        'b',
        '--ref',
        'R',
        '--by',
        'x',
      ],
      '',
      /--from-digest: expected a digest/,
    ],
    [
      'an approver that looks like a secret',
      [
        'approve',
        '--session',
        's',
        '--decision',
        'scope',
        '--from',
        'a',
        '--to',
        'b',
        '--ref',
        'R',
        '--by',
        'ghp_abcdefghijklmnopqrstuvwxyz0123456789',
      ],
      '',
      /--by: looks like a GitHub token/,
    ],
  ];

  it('sets up a ledger with one record', () => {
    const r = runCli(['snapshot', '--session', 's', '--phase', 'pre', '--decisions', '-'], {
      env: env(),
      input: good,
    });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });

  for (const [what, args, input, message] of cases) {
    it(`exits 2 with nothing appended for ${what}`, () => {
      const before = readFileSync(ledger);
      const r = runCli(args, { env: env(), input });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(message);
      expect(readFileSync(ledger).equals(before)).toBe(true);
    });
  }

  it('exits 3 with nothing appended when a sensitive decision has no digest key', () => {
    const before = readFileSync(ledger);
    const r = runCli(['snapshot', '--session', 's', '--phase', 'pre', '--decisions', '-'], {
      env: env(),
      input: JSON.stringify({ scope: { value: 'a', sensitive: true }, target: 'b', acceptance_test: 'c' }),
    });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('CONTINUITY_DIGEST_KEY_FILE');
    expect(readFileSync(ledger).equals(before)).toBe(true);
  });

  it('does not create a ledger for input that fails', () => {
    const fresh = join(tmp.dir, 'never', 'ledger.jsonl');
    const r = runCli(['snapshot', '--session', 's', '--phase', 'pre', '--decisions', '-'], {
      env: cleanEnv({ CONTINUITY_LEDGER: fresh }),
      input: '{',
    });
    expect(r.code).toBe(2);
    expect(existsSync(fresh)).toBe(false);
  });

  it('gives every recording command --help', () => {
    for (const cmd of [['snapshot'], ['approve'], ['status'], ['ledger', 'verify']]) {
      const r = runCli([...cmd, '--help']);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain('--ledger');
    }
  });
});

describe("approve and snapshot catch a person's mistakes", () => {
  const ledger = join(tmp.dir, 'mistakes', 'ledger.jsonl');
  const env = () => cleanEnv({ CONTINUITY_LEDGER: ledger });
  const approve = (...args: string[]) =>
    runCli(['approve', '--session', 's1', '--ref', 'PR-9', '--by', 'alice', ...args], { env: env() });
  let boundary = '';

  it('sets up a boundary with a pre snapshot', () => {
    const r = runCli(['snapshot', '--session', 's1', '--phase', 'pre', '--decisions', '-'], {
      env: env(),
      input: JSON.stringify({ scope: 'payments', target: 'main', acceptance_test: 'npm test' }),
    });
    expect(r.code, r.stderr).toBe(0);
    boundary = r.stdout.trim();
  });

  const refusals: Array<[string, string[], RegExp]> = [
    [
      'an unknown session',
      ['--session', 'nobody', '--decision', 'target', '--from', 'main', '--to', 'dev'],
      /approve: --session: no boundary of this session in .*; check --session/,
    ],
    [
      'a decision the pre snapshot does not have',
      ['--decision', 'targte', '--from', 'main', '--to', 'dev'],
      /approve: --decision: not a decision of the pre snapshot of boundary .* \(it has: acceptance_test, scope, target\)/,
    ],
    [
      "a from value that is not the pre snapshot's",
      ['--decision', 'target', '--from', 'mian', '--to', 'dev'],
      /approve: --from: neither the pre snapshot's digest of target \(sha256:[0-9a-f]{64}\) nor the end of an approved chain/,
    ],
    [
      'from = to',
      ['--decision', 'target', '--from', 'main', '--to', 'main'],
      /approve: --to: the same as --from/,
    ],
    [
      'a from digest = to digest',
      [
        '--decision',
        'target',
        '--from-digest',
        `sha256:${'1'.repeat(64)}`,
        '--to-digest',
        `sha256:${'1'.repeat(64)}`,
      ],
      /--to: the same as --from/,
    ],
  ];
  for (const [what, args, message] of refusals) {
    it(`refuses ${what}: exit 2, nothing appended`, () => {
      const before = readFileSync(ledger);
      // A later --session wins in commander, so the unknown-session case overrides s1.
      const r = approve(...args);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(message);
      expect(r.stderr).not.toMatch(/mian/);
      expect(readFileSync(ledger).equals(before)).toBe(true);
    });
  }

  it('accepts a change from the pre value, then from the end of that approved chain', async () => {
    const human = (...args: string[]) =>
      runHuman(['approve', '--session', 's1', '--ref', 'PR-9', '--by', 'alice', ...args], {
        env: env(),
        base: join(tmp.dir, 'mistakes'),
      });
    expect((await human('--decision', 'target', '--from', 'main', '--to', 'release')).code).toBe(0);
    expect((await human('--decision', 'target', '--from', 'release', '--to', 'hotfix')).code).toBe(0);
    // Not from a value the chain never reached.
    expect(approve('--decision', 'target', '--from', 'dev', '--to', 'hotfix').code).toBe(2);
  });

  it('refuses a post snapshot for a boundary the session does not have (a typo): exit 2, nothing appended', () => {
    const before = readFileSync(ledger);
    const r = runCli(
      ['snapshot', '--session', 's1', '--phase', 'post', '--boundary', 'TYPO', '--decisions', '-'],
      {
        env: env(),
        input: JSON.stringify({ scope: 'payments' }),
      },
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      `--boundary: session has no boundary with this id in ${ledger} (its latest is ${boundary})`,
    );
    expect(readFileSync(ledger).equals(before)).toBe(true);
    const status = JSON.parse(runCli(['status', '--json'], { env: env() }).stdout) as {
      sessions: Array<{ boundaryId: string }>;
    };
    expect(status.sessions.map((x) => x.boundaryId)).toEqual([boundary]);
  });

  it('accepts a post snapshot naming the boundary it belongs to', () => {
    const r = runCli(
      ['snapshot', '--session', 's1', '--phase', 'post', '--boundary', boundary, '--decisions', '-'],
      {
        env: env(),
        input: JSON.stringify({ scope: 'payments', target: 'hotfix', acceptance_test: 'npm test' }),
      },
    );
    expect(r).toMatchObject({ code: 0, stdout: `${boundary}\n` });
    const status = JSON.parse(runCli(['status', '--json'], { env: env() }).stdout) as {
      sessions: Array<{ state: string }>;
    };
    expect(status.sessions[0]?.state).toBe('approved_change');
  });
});

describe('usage errors', () => {
  const cases: Array<[string[], string, string | undefined]> = [
    [['snapshot', '--sesion', 'x', '--phase', 'pre', '--decisions', '-'], '--sesion', '--session'],
    [['approve', '--session', 's', '--decison', 'scope'], '--decison', '--decision'],
    [['status', '--jsno'], '--jsno', '--json'],
    [['ledger', 'verify', '--chain-key-fle', 'k'], '--chain-key-fle', '--chain-key-file'],
    [['classify', 'f.json', '--jsn'], '--jsn', '--json'],
    [['observe', '--sesion', 's'], '--sesion', '--session'],
    [['init', 'claude-code', '--projct', '.'], '--projct', '--project'],
    [['serve', '--confg', 'x.yaml'], '--confg', '--config'],
    [['status', '--frobnicate'], '--frobnicate', undefined],
  ];
  for (const [args, bad, hint] of cases) {
    it(`reports ${bad} as unknown in ${args[0]}${hint ? `, suggesting ${hint}` : ''}, without the help`, () => {
      const r = runCli(args);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      const lines = r.stderr.trimEnd().split('\n');
      expect(lines[0]).toBe(`continuity: unknown option '${bad}'`);
      expect(lines.slice(1)).toEqual(hint ? [`(Did you mean ${hint}?)`] : []);
    });
  }

  it('reports a mistyped command with the closest one', () => {
    const r = runCli(['sttaus']);
    expect(r).toMatchObject({ code: 2, stdout: '' });
    expect(r.stderr).toBe("continuity: unknown command 'sttaus'\n(Did you mean status?)\n");
  });

  it('still reports a missing mandatory option, in one line', () => {
    const r = runCli(['snapshot', '--phase', 'pre', '--decisions', '-']);
    expect(r).toMatchObject({ code: 2, stdout: '' });
    expect(r.stderr).toBe("continuity: required option '--session <id>' not specified\n");
  });
});

describe('status', () => {
  it('prints that a session has no boundary, exit 0', () => {
    const ledger = join(tmp.dir, 'status', 'ledger.jsonl');
    const r = runCli(['status', '--session', 'nobody', '--ledger', ledger]);
    expect(r).toMatchObject({ code: 0, stdout: `no boundary recorded for session nobody in ${ledger}\n` });
    expect(JSON.parse(runCli(['status', '--json', '--ledger', ledger]).stdout)).toEqual({
      ledger,
      sessions: [],
    });
  });
});

describe('lean read path', () => {
  it('imports no zod, commander or OpenTelemetry from dist/ledger/latest.js (node built-ins and canonicalize only)', () => {
    const seen = new Set<string>();
    const bare = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(
        /^\s*(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|^\s*import\s*['"]([^'"]+)['"]/gm,
      )) {
        const spec = (m[1] ?? m[2])!;
        if (spec.startsWith('.')) visit(join(dirname(file), spec));
        else bare.add(spec);
      }
    };
    visit(join(repoRoot, 'dist', 'ledger', 'latest.js'));
    expect([...seen].map((f) => relative(repoRoot, f)).sort()).toContain('dist/ledger/session-index.js');
    // canonicalize (one function) serializes what the approver key signed; nothing heavier.
    for (const spec of bare) expect(spec, `latest.js loads ${spec}`).toMatch(/^(?:node:|canonicalize$)/);
  });
});
