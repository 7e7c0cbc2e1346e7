/**
 * The attack suite for H1 (issue 26): an approval counts only with the human's signature.
 *
 * The agent is this test's shell: the same user, the human's environment and every file (the key
 * store included), and no human at a terminal. Each spelling of `continuity approve` runs for
 * real in `bash -c`, in a session of its own (no controlling terminal, like an agent's tool
 * process), with nothing between it and the CLI (no hook, no text guard): the process reaches the
 * CLI, which refuses at the signature step. The human is a pseudo-terminal typing the passphrase.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createPrivateKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  approverDir,
  certify,
  generateKey,
  keyStoreFiles,
  writeKeyStore,
} from '../../src/authority/key-store.js';
import { approvalStatement, keyIdOf, publicKeyHex, signStatement } from '../../src/authority/signing.js';
import { pinPathOf } from '../../src/authority/trust.js';
import { digestValue } from '../../src/digest/digest.js';
import {
  ATTR_APPROVAL_APPROVED_AT,
  ATTR_APPROVAL_APPROVED_BY,
  ATTR_APPROVAL_BOUNDARY_ID,
  ATTR_APPROVAL_DECISION,
  ATTR_APPROVAL_FROM_DIGEST,
  ATTR_APPROVAL_REF,
  ATTR_APPROVAL_TO_DIGEST,
  ATTR_SESSION_ID,
  METRIC_APPROVAL_ATTEMPTS,
  METRIC_ATTR_RESULT,
  METRIC_ATTR_STATE,
  METRIC_BOUNDARIES,
  PROMETHEUS_NAMES,
  SPAN_DECISION_APPROVAL,
} from '../../src/otel/semconv.js';
import { cleanEnv, cliPath, readRecords, repoRoot, runCli, runHuman, tempDir } from '../ledger/helpers.js';
import {
  post,
  type Sample,
  type ServeProcess,
  scrape,
  startServe,
  total,
  waitFor,
} from '../service/harness.js';
import { ensureTerminalTools, HUMAN_PASSPHRASE } from '../support/human.js';

const tmp = tempDir('authority-');
const ledger = join(tmp.dir, 'state', 'ledger.jsonl');
const configHome = join(tmp.dir, 'config');
const shimDir = join(tmp.dir, 'bin');
const work = join(tmp.dir, 'work');
const env = () =>
  cleanEnv({
    CONTINUITY_LEDGER: ledger,
    XDG_CONFIG_HOME: configHome,
    HOME: tmp.dir,
    PATH: `${shimDir}:${process.env.PATH}`,
  });
const SESSION = 's1';
const FORGER = join(repoRoot, 'test', 'authority', 'fixtures-forger.mjs');
const DIST = join(repoRoot, 'dist');

interface StatusEntry {
  state: string;
  reason: string;
  boundaryId: string;
  evidence: {
    approvals: number[];
    approvalAttempts: Array<{ seq: number; decision: string; result: string; keyId?: string }>;
    approverKeyChanged?: string;
  };
}

function status(session = SESSION): StatusEntry {
  const r = runCli(['status', '--session', session, '--json'], { env: env() });
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { sessions: StatusEntry[] }).sessions[0]!;
}

function approvals(): Array<Record<string, unknown>> {
  return readRecords(ledger).filter((r) => r.type === 'approval');
}

/** The agent's background writer: `nohup node forger.mjs … &`, then waits for the records. */
async function forge(records: Array<Record<string, unknown>>): Promise<void> {
  const before = readRecords(ledger).length;
  const child = spawn(
    'sh',
    [
      '-c',
      `nohup "${process.execPath}" "${FORGER}" "$0" "$1" "$2" >/dev/null 2>&1 &`,
      DIST,
      ledger,
      JSON.stringify(records),
    ],
    { env: env(), detached: true, stdio: 'ignore' },
  );
  child.unref();
  for (let i = 0; i < 200 && readRecords(ledger).length < before + records.length; i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  expect(readRecords(ledger).length).toBe(before + records.length);
}

const APPROVE_ARGS = `--session ${SESSION} --decision target --from main --to dev --ref PR-66 --by agent`;

/**
 * The spellings of issue 26 (H1), each `continuity approve …` in the end. `$A` is APPROVE_ARGS.
 * `appr[o]ve` globs to a file named `approve` the agent made; the git alias runs in a repository.
 */
const SPELLINGS: Array<[string, string]> = [
  ['a variable', `a=approve; continuity $a $A`],
  ['brace expansion', `{continuity,approve} $A`],
  ['ANSI-C quoting', `continuity $'approve' $A`],
  ['a glob', `touch approve; continuity appr[o]ve $A`],
  ['a function', `f(){ continuity "$@"; }; f approve $A`],
  ['command substitution', 'continuity `printf appr`ove $A'],
  ['a default expansion', `continuity \${X:-approve} $A`],
  ['xargs', `printf approve | xargs -I{} continuity {} $A`],
  ['a git alias', `git init -q . 2>/dev/null; git -c alias.x='!continuity approve' x $A`],
  [
    'base64 and eval',
    `eval "$(echo ${Buffer.from('continuity approve $A').toString('base64')} | base64 -d)"`,
  ],
  ['node and the entry point', `node "${cliPath}" approve $A`],
];

/** Runs `script` in bash as the agent does: no controlling terminal, the human's environment. */
function asAgent(script: string): { code: number; stdout: string; stderr: string } {
  const r = spawnSync('setsid', ['-w', 'bash', '-c', script], {
    cwd: work,
    env: { ...env(), A: APPROVE_ARGS },
    encoding: 'utf8',
    input: `${HUMAN_PASSPHRASE}\n`, // even the passphrase on standard input is not read
  });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

let humanKeyId = '';
let boundaryId = '';

beforeAll(async () => {
  await ensureTerminalTools();
  for (const d of [shimDir, work]) mkdirSync(d, { recursive: true });
  writeFileSync(join(shimDir, 'continuity'), `#!/bin/sh\nexec "${process.execPath}" "${cliPath}" "$@"\n`, {
    mode: 0o755,
  });
  // The human makes the key at a terminal (passphrase typed twice).
  const init = await runHuman(['key', 'init'], {
    env: env(),
    base: tmp.dir,
    answers: [HUMAN_PASSPHRASE, HUMAN_PASSPHRASE],
    noKeyStore: true,
  });
  expect(init.code, init.stdout).toBe(0);
  humanKeyId = /approver key (ed25519:[0-9a-f]{32}) made; pinned on the ledger/.exec(init.stdout)![1]!;
  // A boundary whose target the agent changed: conflicting.
  const pre = runCli(['snapshot', '--session', SESSION, '--phase', 'pre', '--decisions', '-'], {
    env: env(),
    input: JSON.stringify({ scope: 'payments', target: 'main', acceptance_test: 'npm test' }),
  });
  expect(pre.code, pre.stderr).toBe(0);
  boundaryId = pre.stdout.trim();
  const post = runCli(['snapshot', '--session', SESSION, '--phase', 'post', '--decisions', '-'], {
    env: env(),
    input: JSON.stringify({ scope: 'payments', target: 'dev', acceptance_test: 'npm test' }),
  });
  expect(post.code, post.stderr).toBe(0);
  expect(status().state).toBe('conflicting');
}, 120_000);

afterAll(() => tmp.cleanup());

describe('key init', () => {
  it('made the key at the terminal: encrypted private key 0600 outside the project, pinned twice', () => {
    const files = keyStoreFiles(approverDir(env()));
    const pem = readFileSync(files.privateKey, 'utf8');
    expect(pem).toContain('BEGIN ENCRYPTED PRIVATE KEY');
    expect(() => createPrivateKey({ key: pem, passphrase: 'wrong passphrase!' })).toThrow();
    expect(spawnSync('stat', ['-c', '%a', files.privateKey], { encoding: 'utf8' }).stdout.trim()).toBe('600');
    expect(spawnSync('stat', ['-c', '%a', pinPathOf(ledger)], { encoding: 'utf8' }).stdout.trim()).toBe(
      '600',
    );
    const keys = readRecords(ledger).filter((r) => r.type === 'approver_key');
    expect(keys.map((k) => [k.keyId, k.previous])).toEqual([[humanKeyId, null]]);
    const pin = JSON.parse(readFileSync(pinPathOf(ledger), 'utf8')) as { keys: Array<{ keyId: string }> };
    expect(pin.keys.map((k) => k.keyId)).toEqual([humanKeyId]);
    // `key show` gives the line that anchors a runtime's environment on this first key.
    const show = runCli(['key', 'show'], { env: env() });
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toContain(`anchor: CONTINUITY_APPROVER_KEYS=${humanKeyId}`);
  });

  it('refuses without a terminal (exit 4, one line), even with the passphrase on standard input', () => {
    const r = asAgent('continuity key rotate');
    expect(r.code).toBe(4);
    expect(r.stderr).toMatch(
      /^continuity: key rotate: no terminal: the passphrase is read only from the controlling terminal/,
    );
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });
});

describe('H1: every spelling of `continuity approve` reaches the CLI and is refused at the signature', () => {
  for (const [what, script] of SPELLINGS) {
    it(`${what}: exit 4 "no terminal", nothing recorded, still conflicting`, () => {
      const before = readFileSync(ledger);
      const r = asAgent(script);
      // The CLI ran (its own refusal), and refused for want of the human, not for the text.
      expect(r.stderr, r.stderr).toMatch(/continuity: approve: no terminal/);
      // xargs answers 123 for a command that exited 1 to 125.
      expect(r.code).toBe(what === 'xargs' ? 123 : 4);
      expect(readFileSync(ledger).equals(before)).toBe(true);
      expect(status().state).toBe('conflicting');
    });
  }

  it('the agent on a pseudo-terminal of its own, guessing the passphrase: exit 4, nothing recorded', async () => {
    const before = readFileSync(ledger);
    const r = await runHuman(APPROVE_ARGS.split(' ').length ? ['approve', ...APPROVE_ARGS.split(' ')] : [], {
      env: env(),
      base: tmp.dir,
      answers: ['hunter2hunter2'],
    });
    expect(r.code).toBe(4);
    expect(r.stdout).toMatch(/wrong passphrase \(nothing was signed\)/);
    expect(readFileSync(ledger).equals(before)).toBe(true);
    expect(status().state).toBe('conflicting');
  });
});

describe('forged approval records with a valid hash chain, appended by a background process', () => {
  it('count as attempts (unsigned, bad_signature, unknown_key, other_boundary), never as approvals', async () => {
    const base = {
      type: 'approval',
      sessionId: SESSION,
      decision: 'target',
      fromDigest: status().evidence.approvals.length === 0 ? digestOfPre('target') : '',
      toDigest: digestOfPost('target'),
      approvalRef: 'PR-66',
      approvedBy: 'agent',
      approvedAt: new Date().toISOString(),
    };
    const agentKey = generateKeyPairSync('ed25519').privateKey;
    const agentKeyId = keyIdOf(agentKey);
    const signedBy = (key: typeof agentKey, keyId: string, boundary: string) => ({
      ...base,
      boundaryId: boundary,
      keyId,
      signature: signStatement(approvalStatement({ ...base, boundaryId: boundary, keyId }), key),
    });
    await forge([
      base,
      { ...base, boundaryId, keyId: humanKeyId, signature: 'ab'.repeat(64) },
      signedBy(agentKey, agentKeyId, boundaryId),
    ]);
    const s = status();
    expect(s.state).toBe('conflicting');
    expect(s.evidence.approvals).toEqual([]);
    expect(s.evidence.approvalAttempts.map((a) => a.result)).toEqual([
      'unsigned',
      'bad_signature',
      'unknown_key',
    ]);
    // The chain is valid: the ledger holds them as evidence, and verify reports them.
    const v = runCli(['ledger', 'verify'], { env: env() });
    expect(v.code, v.stderr).toBe(0);
    expect(v.stdout).toMatch(/3 approvals? that do(es)? not count/);
  });
});

function digestOfPre(name: string): string {
  const pre = readRecords(ledger).find((r) => r.type === 'snapshot' && r.phase === 'pre') as {
    decisions: Record<string, { digest: string }>;
  };
  return pre.decisions[name]!.digest;
}

function digestOfPost(name: string): string {
  const post = readRecords(ledger).find((r) => r.type === 'snapshot' && r.phase === 'post') as {
    decisions: Record<string, { digest: string }>;
  };
  return post.decisions[name]!.digest;
}

describe('the human approves at a terminal', () => {
  it('signs the approval with the passphrase typed at the prompt: approved_change', async () => {
    const r = await runHuman(['approve', ...APPROVE_ARGS.replace('--by agent', '--by alice').split(' ')], {
      env: env(),
      base: tmp.dir,
    });
    expect(r.code, r.stdout).toBe(0);
    // The person saw what they signed before the prompt; the passphrase is not echoed.
    expect(r.stdout).toMatch(/Approve a change of decision target[\s\S]*Approver passphrase: /);
    expect(r.stdout).not.toContain(HUMAN_PASSPHRASE);
    const rec = approvals().at(-1)!;
    expect(rec).toMatchObject({ boundaryId, keyId: humanKeyId, approvedBy: 'alice' });
    expect(rec.signature).toMatch(/^[0-9a-f]{128}$/);
    const s = status();
    expect(s.state).toBe('approved_change');
    expect(s.evidence.approvals).toEqual([rec.seq]);
    // The earlier attempts are still there, still not counted.
    expect(s.evidence.approvalAttempts).toHaveLength(3);
    // A run started with the human's key named as the anchor counts it the same.
    const anchored = runCli(['status', '--session', SESSION, '--json'], {
      env: { ...env(), CONTINUITY_APPROVER_KEYS: `${humanKeyId}, ed25519:${'0'.repeat(32)}` },
    });
    expect((JSON.parse(anchored.stdout) as { sessions: StatusEntry[] }).sessions[0]!.state).toBe(
      'approved_change',
    );
  });

  it('a copy of that signed approval appended after the next pre snapshot counts for nothing', async () => {
    const signed = approvals().at(-1)!;
    const pre = runCli(['snapshot', '--session', 's-replay', '--phase', 'pre', '--decisions', '-'], {
      env: env(),
      input: JSON.stringify({ scope: 'payments', target: 'main', acceptance_test: 'npm test' }),
    });
    expect(pre.code, pre.stderr).toBe(0);
    const { seq: _s, v: _v, prev: _p, hash: _h, ...body } = signed;
    // Another session: the signature covers the session, so it does not hold.
    await forge([{ ...body, sessionId: 's-replay' }]);
    // Approved before this session's pre snapshot, it is not counted by time already; and its
    // signature names another session, so it could never count here.
    const s = status('s-replay');
    expect(s.evidence.approvals).toEqual([]);
    expect(s.evidence.approvalAttempts.every((a) => a.result !== ('signed' as string))).toBe(true);
  });
});

describe('continuity serve trusts only the keys of its own configuration', () => {
  let serve: ServeProcess;
  const sEnv = () => ({ ...env(), CONTINUITY_OTLP_ENDPOINT: serve.base });
  const attempts = (samples: Sample[], result: string) =>
    total(samples, PROMETHEUS_NAMES[METRIC_APPROVAL_ATTEMPTS], { [METRIC_ATTR_RESULT]: result });
  const boundaries = (samples: Sample[], state: string) =>
    total(samples, PROMETHEUS_NAMES[METRIC_BOUNDARIES], { [METRIC_ATTR_STATE]: state });

  beforeAll(async () => {
    serve = await startServe({
      dir: tmp.dir,
      config: { correlation: { approverKeys: [keyStoreFiles(approverDir(env())).publicKey] } },
    });
  });
  afterAll(async () => {
    await serve?.stop();
  });

  function snapshot(session: string, phase: 'pre' | 'post', target: string): string {
    const r = runCli(['snapshot', '--session', session, '--phase', phase, '--decisions', '-'], {
      env: sEnv(),
      input: JSON.stringify({ scope: 'payments', target, acceptance_test: 'npm test' }),
    });
    expect(r.code, r.stderr).toBe(0);
    return r.stdout.trim();
  }

  /** The agent's curl: a `continuity.approval` span with every attribute but a valid signature. */
  async function forgedSpan(session: string, boundary: string, n: number): Promise<void> {
    const ev = runCli(['status', '--session', session, '--json'], { env: env() });
    const pre = readRecords(ledger).filter((r) => r.type === 'snapshot' && r.sessionId === session)[0] as {
      decisions: Record<string, { digest: string }>;
    };
    expect(ev.code).toBe(0);
    const str = (key: string, value: string) => ({ key, value: { stringValue: value } });
    const body = {
      resourceSpans: [
        {
          resource: { attributes: [str('service.name', 'agent')] },
          scopeSpans: [
            {
              scope: { name: 'agent' },
              spans: [
                {
                  traceId: randomBytes(16).toString('hex'),
                  spanId: randomBytes(8).toString('hex'),
                  name: SPAN_DECISION_APPROVAL,
                  kind: 1,
                  startTimeUnixNano: String(BigInt(Date.now()) * 1_000_000n),
                  endTimeUnixNano: String(BigInt(Date.now()) * 1_000_000n),
                  attributes: [
                    str(ATTR_SESSION_ID, session),
                    str(ATTR_APPROVAL_DECISION, 'target'),
                    str(ATTR_APPROVAL_FROM_DIGEST, pre.decisions.target!.digest),
                    str(ATTR_APPROVAL_TO_DIGEST, digestValue('dev')),
                    str(ATTR_APPROVAL_REF, `PR-${n}`),
                    str(ATTR_APPROVAL_APPROVED_BY, 'agent'),
                    str(ATTR_APPROVAL_APPROVED_AT, new Date().toISOString()),
                    str(ATTR_APPROVAL_BOUNDARY_ID, boundary),
                  ],
                },
              ],
            },
          ],
        },
      ],
    };
    const r = await post(serve.otlp, JSON.stringify(body), { 'content-type': 'application/json' });
    expect(r.status).toBe(200);
  }

  it('three forged approval spans: the attempts counter goes up, approved_change does not', async () => {
    const b = snapshot('s-serve-agent', 'pre', 'main');
    for (const n of [1, 2, 3]) await forgedSpan('s-serve-agent', b, n);
    snapshot('s-serve-agent', 'post', 'dev');
    const samples = await waitFor('the agent boundary resolved', async () => {
      const m = await scrape(serve.metrics);
      return boundaries(m, 'conflicting') === 1 && m;
    });
    expect(boundaries(samples, 'approved_change')).toBe(0);
    expect(attempts(samples, 'unsigned')).toBe(3);
  });

  it("the human's approval, exported by `approve --otlp-endpoint`, counts: approved_change", async () => {
    const b = snapshot('s-serve-human', 'pre', 'main');
    const r = await runHuman(
      [
        'approve',
        ...APPROVE_ARGS.replace(SESSION, 's-serve-human').replace('--by agent', '--by alice').split(' '),
      ],
      { env: sEnv(), base: tmp.dir },
    );
    expect(r.code, r.stdout).toBe(0);
    expect(approvals().at(-1)).toMatchObject({ boundaryId: b, sessionId: 's-serve-human' });
    snapshot('s-serve-human', 'post', 'dev');
    const samples = await waitFor('the human boundary resolved', async () => {
      const m = await scrape(serve.metrics);
      return boundaries(m, 'approved_change') === 1 && m;
    });
    expect(boundaries(samples, 'conflicting')).toBe(1);
    expect(attempts(samples, 'unsigned')).toBe(3);
    expect(serve.stderr()).not.toContain(HUMAN_PASSPHRASE);
  });
});

describe('the agent replaces the key', () => {
  it('an own key store and its own approver_key record: its approvals are unknown_key, the change is evidenced', async () => {
    // The agent overwrites the human's key store with a key whose passphrase it knows.
    const agentPass = 'agent knows this one';
    const made = generateKey(agentPass);
    const agentKey = createPrivateKey({ key: made.privatePem, passphrase: agentPass });
    const cert = certify(made.publicHex, new Date().toISOString(), null, agentKey);
    writeKeyStore(approverDir(env()), made.privatePem, made.publicPem, [cert]);
    // approve with it, on its own terminal: the ledger's pin refuses the key.
    const r = await runHuman(['approve', ...APPROVE_ARGS.split(' ')], {
      env: env(),
      base: tmp.dir,
      answers: [agentPass],
    });
    expect(r.code).toBe(4);
    expect(r.stdout).toMatch(/this ledger trusts approver key .*\(approver_key_changed\)/);
    // It appends its key's certificate and a signed approval itself.
    const base = {
      type: 'approval',
      sessionId: SESSION,
      decision: 'target',
      fromDigest: digestOfPre('target'),
      toDigest: digestOfPost('target'),
      approvalRef: 'PR-67',
      approvedBy: 'agent',
      approvedAt: new Date().toISOString(),
      boundaryId,
      keyId: cert.keyId,
    };
    await forge([
      { type: 'approver_key', ...cert },
      { ...base, signature: signStatement(approvalStatement(base), agentKey) },
    ]);
    const s = status();
    expect(s.evidence.approvalAttempts.at(-1)).toMatchObject({ result: 'unknown_key', keyId: cert.keyId });
    expect(s.evidence.approverKeyChanged).toMatch(/not signed by the pinned key|does not follow/);
    // The human's own approval still counts: the chain holds up to the replaced key.
    expect(s.state).toBe('approved_change');
    const show = runCli(['key', 'show'], { env: env() });
    expect(show.code).toBe(1);
    expect(show.stdout).toMatch(/approver_key_changed/);
  });

  it('and rewrites the pin to its key: nothing counts any more, not even the human approval', () => {
    const made = JSON.parse(readFileSync(keyStoreFiles(approverDir(env())).chain, 'utf8')) as unknown[];
    writeFileSync(pinPathOf(ledger), JSON.stringify({ v: 1, keys: made }));
    const s = status();
    expect(s.evidence.approvals).toEqual([]);
    expect(s.state).toBe('conflicting');
    expect(s.evidence.approverKeyChanged).toMatch(
      /approver_key_changed: the approver pin beside the ledger and the ledger's approver_key records disagree/,
    );
    // publicKeyHex is the public half only: no private key material went anywhere.
    expect(readFileSync(ledger, 'utf8')).not.toContain('PRIVATE KEY');
    expect(typeof publicKeyHex).toBe('function');
  });
});

describe('the agent starts the ledger again, whole, with its own first key', () => {
  // The agent deletes the ledger, its head and its pin, makes a key of its own (on a terminal of
  // its own, with a passphrase it chose), pins it on the new ledger it writes, records a boundary
  // and approves its own change. Nothing in those files can tell it from a fresh install.
  const fresh = join(tmp.dir, 'rewritten', 'ledger.jsonl');
  const agentConfig = join(tmp.dir, 'agent-config');
  const AGENT_PASSPHRASE = 'the agent chose this one itself';
  const agentEnv = (extra: NodeJS.ProcessEnv = {}) => ({
    ...env(),
    CONTINUITY_LEDGER: fresh,
    XDG_CONFIG_HOME: agentConfig,
    ...extra,
  });
  const statusOf = (extra: NodeJS.ProcessEnv) => {
    const r = runCli(['status', '--session', 's-rewritten', '--json'], { env: agentEnv(extra) });
    expect(r.code, r.stderr).toBe(0);
    return (JSON.parse(r.stdout) as { sessions: StatusEntry[] }).sessions[0]!;
  };

  beforeAll(async () => {
    mkdirSync(join(tmp.dir, 'rewritten'), { recursive: true });
    const init = await runHuman(['key', 'init'], {
      env: agentEnv(),
      base: tmp.dir,
      answers: [AGENT_PASSPHRASE, AGENT_PASSPHRASE],
      noKeyStore: true,
    });
    expect(init.code, init.stdout).toBe(0);
    for (const [phase, target] of [
      ['pre', 'main'],
      ['post', 'dev'],
    ] as const) {
      const r = runCli(['snapshot', '--session', 's-rewritten', '--phase', phase, '--decisions', '-'], {
        env: agentEnv(),
        input: JSON.stringify({ scope: 'payments', target, acceptance_test: 'npm test' }),
      });
      expect(r.code, r.stderr).toBe(0);
    }
    const approve = await runHuman(['approve', ...APPROVE_ARGS.replace(SESSION, 's-rewritten').split(' ')], {
      env: agentEnv(),
      base: tmp.dir,
      answers: [AGENT_PASSPHRASE],
      noKeyStore: true,
    });
    expect(approve.code, approve.stdout).toBe(0);
  }, 120_000);

  it('counts its approval where the ledger is the only anchor (trust on first use, the documented limit)', () => {
    expect(statusOf({}).state).toBe('approved_change');
  });

  it('counts nothing where the run names the human key (CONTINUITY_APPROVER_KEYS): the chain starts with another key', () => {
    const s = statusOf({ CONTINUITY_APPROVER_KEYS: humanKeyId });
    expect(s.state).toBe('conflicting');
    expect(s.evidence.approvals).toEqual([]);
    expect(s.evidence.approvalAttempts.map((a) => a.result)).toEqual(['unknown_key']);
    expect(s.evidence.approverKeyChanged).toContain('is not one this run trusts (CONTINUITY_APPROVER_KEYS)');
    // A value that names no key id trusts nothing rather than falling back to the pin.
    expect(statusOf({ CONTINUITY_APPROVER_KEYS: 'not-a-key' }).state).toBe('conflicting');
    // `ledger verify` fails on it (exit 1), as on any broken chain.
    const v = runCli(['ledger', 'verify', '--json'], {
      env: agentEnv({ CONTINUITY_APPROVER_KEYS: humanKeyId }),
    });
    expect(v.code).toBe(1);
  });
});
