/**
 * The write path in one process: torn tails are quarantined on open, the lock recovers from
 * stale owners, the guard refuses leaks with nothing written, files are 0600 and directories 0700.
 */
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { resolveEnv } from '../../src/adapters/core/config.js';
import { InputError } from '../../src/decision/problems.js';
import { LedgerFileError } from '../../src/ledger/files.js';
import { checkString, guardRecord } from '../../src/ledger/guard.js';
import { readLatestBoundary } from '../../src/ledger/latest.js';
import { Ledger } from '../../src/ledger/ledger.js';
import { LedgerLock, LockTimeoutError } from '../../src/ledger/lock.js';
import { resolveLedgerPath, sidecarPaths } from '../../src/ledger/paths.js';
import type { NewRecord } from '../../src/ledger/records.js';
import { verifyLedger } from '../../src/ledger/verify.js';
import { readRecords, runCli, tempDir } from './helpers.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());
let n = 0;
let ledgerPath = '';
beforeEach(() => {
  ledgerPath = join(tmp.dir, `case-${++n}`, 'ledger.jsonl');
});

function activity(sessionId = 'session-1'): NewRecord {
  return { type: 'activity', sessionId, state: 'working', at: '2026-11-30T12:00:00Z' };
}

describe('torn tail', () => {
  it('is moved to the quarantine file on open, and appending continues from the last whole record', async () => {
    const ledger = Ledger.open(ledgerPath);
    for (let i = 0; i < 3; i++) await ledger.append(activity());
    await ledger.close();
    const whole = readFileSync(ledgerPath);
    const lastLine = whole.subarray(whole.lastIndexOf(0x0a, whole.length - 2) + 1);
    // A fourth record torn mid-write: only part of its bytes reached the file.
    writeFileSync(ledgerPath, Buffer.concat([whole, lastLine.subarray(0, 37)]));
    expect(verifyLedger(ledgerPath)).toMatchObject({ ok: false, seq: 4, why: 'torn' });

    const reopened = Ledger.open(ledgerPath);
    expect(reopened.quarantined).toEqual({ offset: whole.length, length: 37, afterSeq: 3 });
    expect(readFileSync(ledgerPath).equals(whole)).toBe(true);
    const q = JSON.parse(readFileSync(sidecarPaths(ledgerPath).quarantine, 'utf8')) as Record<
      string,
      unknown
    >;
    expect(Buffer.from(q.bytesBase64 as string, 'base64').equals(lastLine.subarray(0, 37))).toBe(true);
    expect(q).toMatchObject({ ledgerOffset: whole.length, length: 37, afterSeq: 3 });

    const next = await reopened.append(activity());
    await reopened.close();
    expect(next.seq).toBe(4);
    expect(verifyLedger(ledgerPath)).toEqual({
      ok: true,
      records: 4,
      lastSeq: 4,
      scheme: 'sha256',
      quarantined: 1,
      head: 'checked',
    });
  });

  it('quarantines zeros left by a power cut after the last record', async () => {
    const ledger = Ledger.open(ledgerPath);
    await ledger.append(activity());
    await ledger.close();
    const size = statSync(ledgerPath).size;
    truncateSync(ledgerPath, size + 512);
    const reopened = Ledger.open(ledgerPath);
    await reopened.close();
    expect(reopened.quarantined).toMatchObject({ offset: size, length: 512, afterSeq: 1 });
    expect(verifyLedger(ledgerPath)).toMatchObject({ ok: true, records: 1 });
  });

  it('never moves a whole record: a ledger ending in a whole record is left as it is', async () => {
    const ledger = Ledger.open(ledgerPath);
    await ledger.append(activity());
    await ledger.close();
    const before = readFileSync(ledgerPath);
    const reopened = Ledger.open(ledgerPath);
    await reopened.close();
    expect(reopened.quarantined).toBeUndefined();
    expect(readFileSync(ledgerPath).equals(before)).toBe(true);
    expect(existsSync(sidecarPaths(ledgerPath).quarantine)).toBe(false);
  });
});

describe('lock', () => {
  function deadPid(): number {
    const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
      encoding: 'utf8',
    });
    return Number(r.stdout);
  }

  it('takes over a lock whose owner process is dead', () => {
    const path = join(tmp.dir, `dead-${++n}.lock`);
    writeFileSync(path, JSON.stringify({ pid: deadPid(), host: hostname(), at: Date.now(), token: 'x' }));
    const lock = LedgerLock.acquireSync(path, { timeoutMs: 2000 });
    expect(JSON.parse(readFileSync(path, 'utf8')).pid).toBe(process.pid);
    lock.release();
    expect(existsSync(path)).toBe(false);
  });

  it('waits for a live owner and times out without touching its lock', () => {
    const path = join(tmp.dir, `live-${++n}.lock`);
    const content = JSON.stringify({ pid: process.ppid, host: hostname(), at: Date.now(), token: 'live' });
    writeFileSync(path, content);
    expect(() => LedgerLock.acquireSync(path, { timeoutMs: 150 })).toThrow(LockTimeoutError);
    expect(readFileSync(path, 'utf8')).toBe(content);
  });

  it('takes over a lock older than staleMs even when its owner is alive (hung)', async () => {
    const path = join(tmp.dir, `old-${++n}.lock`);
    writeFileSync(
      path,
      JSON.stringify({ pid: process.ppid, host: hostname(), at: Date.now() - 60_000, token: 'old' }),
    );
    const lock = await LedgerLock.acquire(path, { timeoutMs: 2000, staleMs: 30_000 });
    lock.release();
  });

  it('takes over an empty lock file left 2 s ago by an owner that died before writing it', () => {
    const path = join(tmp.dir, `empty-${++n}.lock`);
    writeFileSync(path, '');
    const old = new Date(Date.now() - 5_000);
    utimesSync(path, old, old);
    LedgerLock.acquireSync(path, { timeoutMs: 2000 }).release();
  });

  it('does not take an empty lock file that was just created (its owner is writing it)', () => {
    const path = join(tmp.dir, `fresh-${++n}.lock`);
    writeFileSync(path, '');
    expect(() => LedgerLock.acquireSync(path, { timeoutMs: 100 })).toThrow(LockTimeoutError);
  });

  it('takes over a lock dated in the future beyond the clock skew, even when its owner is alive', () => {
    const path = join(tmp.dir, `future-${++n}.lock`);
    writeFileSync(
      path,
      JSON.stringify({ pid: process.ppid, host: hostname(), at: Date.now() + 3_600_000, token: 'future' }),
    );
    LedgerLock.acquireSync(path, { timeoutMs: 2000 }).release();
    expect(existsSync(path)).toBe(false);
  });

  it('waits for a live owner whose time is only slightly ahead (clock skew)', () => {
    const path = join(tmp.dir, `skew-${++n}.lock`);
    const content = JSON.stringify({
      pid: process.ppid,
      host: hostname(),
      at: Date.now() + 1_000,
      token: 'skew',
    });
    writeFileSync(path, content);
    expect(() => LedgerLock.acquireSync(path, { timeoutMs: 150 })).toThrow(LockTimeoutError);
    expect(readFileSync(path, 'utf8')).toBe(content);
  });

  it('takes over an empty lock file and a break file whose file times are in the future', () => {
    const path = join(tmp.dir, `future-empty-${++n}.lock`);
    writeFileSync(path, '');
    writeFileSync(`${path}.break`, '');
    const future = new Date(Date.now() + 3_600_000);
    utimesSync(path, future, future);
    utimesSync(`${path}.break`, future, future);
    LedgerLock.acquireSync(path, { timeoutMs: 2000 }).release();
    expect(existsSync(`${path}.break`)).toBe(false);
  });

  it('release leaves a lock alone that another process took after ours was broken', () => {
    const path = join(tmp.dir, `stolen-${++n}.lock`);
    const lock = LedgerLock.acquireSync(path);
    const theirs = JSON.stringify({ pid: process.ppid, host: hostname(), at: Date.now(), token: 'theirs' });
    writeFileSync(path, theirs);
    lock.release();
    expect(readFileSync(path, 'utf8')).toBe(theirs);
  });
});

describe('leak guard', () => {
  const refused: Array<[string, string, string]> = [
    ['an absolute path', '/home/alice/.claude/projects/x/transcript.jsonl', 'absolute_path'],
    ['a home path', '~/notes', 'absolute_path'],
    ['a Windows path', 'C:\\Users\\alice', 'absolute_path'],
    ['a file URL', 'file:///etc/passwd', 'absolute_path'],
    ['a home segment inside an id', 'repo:/home/alice/x', 'absolute_path'],
    ['an OpenAI-style key', 'sk-proj-abcdefghijklmnop1234', 'secret'],
    ['an Anthropic-style key', 'sk-ant-api03-abcdefghijklmnop', 'secret'],
    ['a GitHub token', 'ghp_abcdefghijklmnopqrstuvwxyz0123456789', 'secret'],
    ['an AWS key id', 'AKIAIOSFODNN7EXAMPLE', 'secret'],
    ['a PEM header', '-----BEGIN', 'secret'],
    ['a JWT', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig', 'secret'],
    ['a credential assignment', 'password=hunter2', 'secret'],
    ['a long random token', 'q8Zr2LmX0vT7kPa9Wc4Ne6Bf1Hy3Dj5S', 'high_entropy'],
    ['a random token behind an OpenCode prefix', 'ses_q8Zr2LmX0vT7kPa9Wc4Ne6Bf1Hy3Dj5S', 'high_entropy'],
    ['free text', 'keep the scope to the payments service', 'free_text'],
    ['a newline', 'a\nb', 'free_text'],
    // As long as a digest, but not one: the digest shortcut must not wave it through.
    ['a key the length of a digest', `sk-${'a1B2'.repeat(17)}`, 'secret'],
    ['a Slack token', 'xoxb-1234567890-abcdefghij', 'secret'],
    ['an assignment in capitals', 'API_KEY=abc', 'secret'],
  ];
  for (const [what, value, kind] of refused) {
    it(`refuses ${what}`, () => {
      expect(checkString(value)?.kind).toBe(kind);
    });
  }

  const accepted = [
    '0bcbe82e-6ad6-4661-8bf6-0069a7166904',
    '379E24D8-98BC-431D-B271-6EBFB7D82B37',
    '01HZX3K9QW8N4V6T2M5R7P0ABC',
    'AcmeCorpPaymentsService2026Q4Release',
    'PR-12345-ApprovalForScopeChange2',
    'https://github.com/acme/payments/pull/12',
    'task-abcdefghijklmnopqrstuvwx',
    `sha256:${'ab'.repeat(32)}`,
    `hmac-sha256:${'0123456789abcdef'}:${'cd'.repeat(32)}`,
    '2026-11-30T12:00:00.123456789Z',
    '2026-11-30T12:00:00Z',
    'claude-code',
    // OpenCode 1.18.33 session ids, as the real binary made them (the token rule refused these).
    'ses_dcf22b973ffeLkJ8fodgWDwkVZ',
    'ses_2131fd5c4ffeYtRsTR9Bhf7V8Q',
  ];
  for (const value of accepted) {
    it(`accepts ${value}`, () => {
      expect(checkString(value)).toBeUndefined();
    });
  }

  it('names the field path of every refused string, never the string itself', () => {
    const problems = guardRecord({
      sessionId: 'ok',
      decisions: { scope: { source: '/etc/x' } },
      list: ['sk-abcdefghijklmnopqrst'],
    });
    expect(problems.map((p) => p.path)).toEqual(['decisions.scope.source', 'list[0]']);
    expect(guardRecord({ a: [{ b: ['x', { 'bad key': 1 }] }] }).map((p) => p.path)).toEqual([
      'a[0].b[1].bad key',
    ]);
    expect(JSON.stringify(problems)).not.toContain('/etc/x');
  });

  it('makes append refuse a leaking record with nothing written', async () => {
    const ledger = Ledger.open(ledgerPath);
    await ledger.append(activity());
    const before = readFileSync(ledgerPath);
    const leaks: unknown[] = [
      activity('/home/alice/session'),
      activity('ghp_abcdefghijklmnopqrstuvwxyz0123456789'),
      activity('the user asked me to deploy'),
      { ...activity(), prompt: 'free text' },
      {
        type: 'snapshot',
        phase: 'pre',
        sessionId: 's',
        boundaryId: 'b',
        capturedAt: '2026-11-30T12:00:00Z',
        normalizerVersion: 1,
        decisions: { scope: { digest: 'main', revision: 1, observedAt: '2026-11-30T12:00:00Z' } },
      },
      {
        type: 'approval',
        sessionId: 's',
        decision: 'scope',
        fromDigest: `sha256:${'0'.repeat(64)}`,
        toDigest: `sha256:${'1'.repeat(64)}`,
        approvalRef: 'PR-1',
        approvedBy: 'sk-abcdefghijklmnopqrstu',
        approvedAt: '2026-11-30T12:00:00Z',
      },
    ];
    for (const rec of leaks) {
      await expect(ledger.append(rec as NewRecord)).rejects.toThrow(InputError);
    }
    await ledger.close();
    expect(readFileSync(ledgerPath).equals(before)).toBe(true);
  });
});

describe('files and paths', () => {
  it('creates the ledger 0600, its directory, index directory and index files 0700/0600', async () => {
    const ledger = Ledger.open(ledgerPath);
    await ledger.append(activity());
    await ledger.append({
      type: 'boundary',
      sessionId: 'session-1',
      boundaryId: 'b-1',
      compactedAt: '2026-11-30T12:00:00Z',
    });
    await ledger.close();
    const side = sidecarPaths(ledgerPath);
    const mode = (p: string) => statSync(p).mode & 0o777;
    expect(mode(ledgerPath)).toBe(0o600);
    expect(mode(join(ledgerPath, '..'))).toBe(0o700);
    expect(mode(side.indexDir)).toBe(0o700);
    const { readdirSync } = await import('node:fs');
    const files = readdirSync(side.indexDir);
    expect(files.length).toBeGreaterThanOrEqual(3);
    for (const f of files) expect(mode(join(side.indexDir, f))).toBe(0o600);
    expect(existsSync(side.lock)).toBe(false);
  });

  it('narrows a ledger file that other users can read to 0600 when it opens it', async () => {
    const ledger = Ledger.open(ledgerPath);
    await ledger.close();
    const { chmodSync } = await import('node:fs');
    chmodSync(ledgerPath, 0o644);
    await Ledger.open(ledgerPath).close();
    expect(statSync(ledgerPath).mode & 0o777).toBe(0o600);
  });

  it('resolves the ledger path: flag > CONTINUITY_LEDGER > XDG_STATE_HOME > ~/.local/state', () => {
    const env = { HOME: '/home/u', XDG_STATE_HOME: '/xdg', CONTINUITY_LEDGER: '/env/l.jsonl' };
    expect(resolveLedgerPath({ flag: '/flag/l.jsonl', env })).toBe('/flag/l.jsonl');
    expect(resolveLedgerPath({ env })).toBe('/env/l.jsonl');
    expect(resolveLedgerPath({ env: { HOME: '/home/u', XDG_STATE_HOME: '/xdg' } })).toBe(
      '/xdg/agent-continuity/ledger.jsonl',
    );
    expect(resolveLedgerPath({ env: { HOME: '/home/u', XDG_STATE_HOME: 'relative' } })).toBe(
      '/home/u/.local/state/agent-continuity/ledger.jsonl',
    );
    expect(resolveLedgerPath({ env: { HOME: '/home/u' } })).toBe(
      '/home/u/.local/state/agent-continuity/ledger.jsonl',
    );
  });

  it('ignores a relative HOME as it ignores a relative XDG_STATE_HOME: the ledger is never under the working directory', () => {
    const p = resolveLedgerPath({ env: { HOME: 'relative-home', XDG_STATE_HOME: 'relative-state' } });
    expect(isAbsolute(p)).toBe(true);
    expect(p.startsWith(process.cwd())).toBe(false);
    expect(p.endsWith('/.local/state/agent-continuity/ledger.jsonl')).toBe(true);
  });

  it("gives the hooks' state directory and ledger by the same rule (a relative HOME is ignored there too)", () => {
    for (const env of [
      { HOME: 'relative-home' },
      { HOME: 'relative-home', XDG_STATE_HOME: 'relative-state' },
      { HOME: '/home/someone' },
      { HOME: '/home/someone', XDG_STATE_HOME: '/var/state' },
    ]) {
      const hooks = resolveEnv(env);
      expect(hooks.ledgerPath, JSON.stringify(env)).toBe(resolveLedgerPath({ env }));
      expect(hooks.stateRoot, JSON.stringify(env)).toBe(dirname(resolveLedgerPath({ env })));
      expect(hooks.stateRoot.startsWith(process.cwd()), JSON.stringify(env)).toBe(false);
    }
  });

  describe('symbolic links are refused, never followed', () => {
    const target = () => join(tmp.dir, `target-${n}.txt`);
    const refuses = (fn: () => unknown, file: string) => {
      let err: unknown;
      try {
        fn();
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(LedgerFileError);
      expect((err as LedgerFileError).file).toBe(file);
      expect((err as Error).message).toContain('symbolic link');
    };

    it('at the ledger path: opening, reading and verifying refuse it, the target is untouched', async () => {
      mkdirSync(dirname(ledgerPath), { recursive: true });
      // A torn-looking target: following the link would truncate it.
      writeFileSync(target(), 'precious bytes without a newline');
      symlinkSync(target(), ledgerPath);
      refuses(() => Ledger.open(ledgerPath), ledgerPath);
      refuses(() => readLatestBoundary(ledgerPath, 's'), ledgerPath);
      refuses(() => verifyLedger(ledgerPath), ledgerPath);
      expect(readFileSync(target(), 'utf8')).toBe('precious bytes without a newline');
      expect(existsSync(sidecarPaths(ledgerPath).quarantine)).toBe(false);
    });

    it("at the ledger's directory", () => {
      const real = join(tmp.dir, `real-dir-${n}`);
      mkdirSync(real);
      mkdirSync(dirname(dirname(ledgerPath)), { recursive: true });
      symlinkSync(real, dirname(ledgerPath));
      refuses(() => Ledger.open(ledgerPath), dirname(ledgerPath));
      expect(readdirSync(real)).toEqual([]);
    });

    it('at the lock, the head and the index directory', async () => {
      const ledger = Ledger.open(ledgerPath);
      await ledger.append(activity());
      await ledger.close();
      const side = sidecarPaths(ledgerPath);
      writeFileSync(target(), 'x');
      symlinkSync(target(), side.lock);
      const l = Ledger.open.bind(null, ledgerPath);
      refuses(l, side.lock);
      rmSync(side.lock);
      rmSync(side.head);
      symlinkSync(target(), side.head);
      refuses(l, side.head);
      rmSync(side.head);
      renameSync(side.indexDir, `${side.indexDir}.real`);
      symlinkSync(`${side.indexDir}.real`, side.indexDir);
      refuses(l, side.indexDir);
      expect(readFileSync(target(), 'utf8')).toBe('x');
    });

    it('at the quarantine file: the torn tail stays in place', async () => {
      const ledger = Ledger.open(ledgerPath);
      await ledger.append(activity());
      await ledger.close();
      writeFileSync(ledgerPath, `${readFileSync(ledgerPath, 'utf8')}{"torn`);
      writeFileSync(target(), '');
      symlinkSync(target(), sidecarPaths(ledgerPath).quarantine);
      refuses(() => Ledger.open(ledgerPath), sidecarPaths(ledgerPath).quarantine);
      expect(readFileSync(target(), 'utf8')).toBe('');
      expect(readFileSync(ledgerPath, 'utf8').endsWith('{"torn')).toBe(true);
    });

    it('through the CLI: exit 3, naming the link', () => {
      mkdirSync(dirname(ledgerPath), { recursive: true });
      writeFileSync(target(), '');
      symlinkSync(target(), ledgerPath);
      for (const args of [
        ['status'],
        ['ledger', 'verify'],
        ['snapshot', '--session', 's', '--phase', 'pre', '--decisions', '-'],
      ]) {
        const r = runCli([...args, '--ledger', ledgerPath], {
          input: JSON.stringify({ scope: 'a', target: 'b', acceptance_test: 'c' }),
        });
        expect(r.code, args.join(' ')).toBe(3);
        expect(r.stdout).toBe('');
        expect(r.stderr).toContain(`${ledgerPath}: cannot`);
        expect(r.stderr).toContain('symbolic link');
      }
      expect(readFileSync(target(), 'utf8')).toBe('');
    });
  });

  it('appends all records of a batch in order with consecutive seqs', async () => {
    const ledger = Ledger.open(ledgerPath);
    const stored = await ledger.appendBatch([activity('a'), activity('b'), activity('c')]);
    await ledger.close();
    expect(stored.map((s) => [s.seq, 'sessionId' in s ? s.sessionId : null])).toEqual([
      [1, 'a'],
      [2, 'b'],
      [3, 'c'],
    ]);
    expect(readRecords(ledgerPath).map((r) => r.prev)).toEqual([null, stored[0]!.hash, stored[1]!.hash]);
  });
});
