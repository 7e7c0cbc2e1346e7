/**
 * Errors a person can act on, and that leak nothing: a JSON syntax error names the file, line and
 * column and never quotes the input; an I/O error names its file, with the exit code of
 * docs/cli.md.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findJsonSyntaxError, lineAndColumn, parseJsonText } from '../../src/cli/io.js';
import { InputError } from '../../src/decision/problems.js';
import { cleanEnv, cliPath, runCli, tempDir } from './helpers.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

const SECRET = 'Qz7vWk2jXq9Yzz';

describe('JSON syntax errors', () => {
  it('agree with JSON.parse on what is valid, over many broken variants of a document', () => {
    const doc = JSON.stringify(
      { scope: 'a', list: [1, -2.5e3, true, null, { x: 'é\n"' }], nested: { a: [[]], b: {} } },
      null,
      1,
    );
    const variants = new Set<string>([doc]);
    for (let i = 0; i < doc.length; i++) {
      variants.add(doc.slice(0, i) + doc.slice(i + 1)); // one character removed
      for (const c of ['x', ',', '"', '}', ']', '0', '-', '\\'])
        variants.add(doc.slice(0, i) + c + doc.slice(i));
    }
    for (const extra of [
      '',
      ' ',
      '1',
      '01',
      '-',
      '1.',
      '.5',
      '1e',
      '"\\x"',
      '"\u0001"',
      'tru',
      'nul',
      '[,]',
      '{,}',
      '{"a"}',
      '{"a":}',
      '[1,]',
      '{"a":1,}',
      '{} {}',
    ]) {
      variants.add(extra);
    }
    let invalid = 0;
    for (const v of variants) {
      let valid = true;
      try {
        JSON.parse(v);
      } catch {
        valid = false;
      }
      const found = findJsonSyntaxError(v);
      expect(found === undefined, JSON.stringify(v)).toBe(valid);
      if (!valid) invalid++;
    }
    expect(invalid).toBeGreaterThan(500);
  });

  it('points at the first character that cannot be there', () => {
    expect(findJsonSyntaxError('{"a":1,}')).toMatchObject({
      offset: 7,
      expected: 'a property name in double quotes',
    });
    expect(findJsonSyntaxError('[1 2]')).toMatchObject({ offset: 3, expected: "',' or ']'" });
    expect(findJsonSyntaxError('{"scope": secret}')).toMatchObject({ offset: 10 });
    expect(findJsonSyntaxError('{"a":')).toMatchObject({ offset: 5 });
    expect(lineAndColumn('{\n  "a": x\n}', 9)).toEqual({ line: 2, column: 8 });
  });

  it('never quotes the input in the error, and names the source, line and column', () => {
    const text = `{\n  "scope": "a",\n  "target": ${SECRET}\n}`;
    let err: unknown;
    try {
      parseJsonText(text, 'task.json');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InputError);
    const message = (err as Error).message;
    expect(message).toBe(
      'task.json: (root): invalid JSON at line 3, column 13: expected a value (an object, array, string in double quotes, number, true, false or null)',
    );
    expect(message).not.toContain(SECRET.slice(0, 4));
  });

  it('through the CLI: exit 2, the file, line and column, no part of the value', () => {
    const ledger = join(tmp.dir, 'json', 'ledger.jsonl');
    const file = join(tmp.dir, 'broken.json');
    writeFileSync(file, `{"scope": ${SECRET}, "target": "b", "acceptance_test": "c"}`);
    for (const args of [
      ['snapshot', '--session', 's', '--phase', 'pre', '--decisions', file, '--ledger', ledger],
      ['observe', '--session', 's', '--decisions', file, '--ledger', ledger],
      ['classify', file],
    ]) {
      const r = runCli(args);
      expect(r.code, args[0]).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain(`${file}: (root): invalid JSON at line 1, column 11`);
      for (let i = 0; i + 3 <= SECRET.length; i++) expect(r.stderr).not.toContain(SECRET.slice(i, i + 3));
    }
    const viaStdin = runCli(
      ['snapshot', '--session', 's', '--phase', 'pre', '--decisions', '-', '--ledger', ledger],
      {
        input: `{"scope": "${SECRET}`,
      },
    );
    expect(viaStdin.code).toBe(2);
    expect(viaStdin.stderr).toContain('(stdin): (root): invalid JSON at line 1, column 11');
    expect(viaStdin.stderr).not.toContain('Qz7');
  });

  it('does not quote an observe --decision flag without =', () => {
    const r = runCli([
      'observe',
      '--session',
      's',
      '--decision',
      SECRET,
      '--ledger',
      join(tmp.dir, 'o.jsonl'),
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).not.toContain('Qz7');
  });
});

const good = JSON.stringify({ scope: 'a', target: 'b', acceptance_test: 'c' });

describe('I/O errors name their file', () => {
  it('a decisions file that is a directory (exit 2)', () => {
    const r = runCli([
      'snapshot',
      '--session',
      's',
      '--phase',
      'pre',
      '--decisions',
      tmp.dir,
      '--ledger',
      join(tmp.dir, 'x.jsonl'),
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`continuity: ${tmp.dir}: (file): cannot read: is a directory (EISDIR)\n`);
  });

  it('a ledger path that is a directory, for every ledger command (exit 3)', () => {
    const dir = join(tmp.dir, 'ledger-is-a-dir');
    mkdirSync(dir, { recursive: true });
    for (const args of [
      ['snapshot', '--session', 's', '--phase', 'pre', '--decisions', '-'],
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
        'x',
      ],
      ['status'],
      ['status', '--session', 's'],
      ['ledger', 'verify'],
    ]) {
      const r = runCli([...args, '--ledger', dir], { env: cleanEnv(), input: good });
      expect(r.code, args.join(' ')).toBe(3);
      expect(r.stdout).toBe('');
      expect(r.stderr, args.join(' ')).toMatch(
        new RegExp(`^continuity: ${dir}: cannot [a-z ]+: is a directory \\(EISDIR\\)\\n$`),
      );
    }
  });

  it('a ledger whose directory path runs through a regular file (exit 3)', () => {
    const file = join(tmp.dir, 'plain-file');
    writeFileSync(file, '');
    const ledger = join(file, 'ledger.jsonl');
    const r = runCli(
      ['snapshot', '--session', 's', '--phase', 'pre', '--decisions', '-', '--ledger', ledger],
      {
        input: good,
      },
    );
    expect(r.code).toBe(3);
    expect(r.stderr).toBe(
      `continuity: ${ledger}: cannot open: a part of the path is not a directory (ENOTDIR)\n`,
    );
  });

  it('an append past the file size limit (EFBIG), nothing partial left', () => {
    const ledger = join(tmp.dir, 'limited', 'ledger.jsonl');
    for (let i = 0; i < 4; i++) {
      const r = runCli(
        ['snapshot', '--session', 's', '--phase', 'pre', '--decisions', '-', '--ledger', ledger],
        {
          input: good,
        },
      );
      expect(r.code).toBe(0);
    }
    // RLIMIT_FSIZE of 2 KiB: the next write past it fails with EFBIG, as a full disk fails with ENOSPC.
    const r = spawnSync(
      'bash',
      [
        '-c',
        `ulimit -f 2; exec "${process.execPath}" "${cliPath}" "$@"`,
        'continuity',
        'snapshot',
        '--session',
        's',
        '--phase',
        'pre',
        '--decisions',
        '-',
        '--ledger',
        ledger,
      ],
      { input: good, encoding: 'utf8', env: cleanEnv() },
    );
    expect(r.status).toBe(3);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`continuity: ${ledger}: cannot append: file too large (EFBIG)\n`);
    expect(runCli(['ledger', 'verify', '--ledger', ledger]).stdout).toContain('intact, 4 records');
  });
});

/**
 * A real full disk: a 64 KiB tmpfs mounted in a user and mount namespace of our own (no root, no
 * change to the machine), filled with a file. The script prints what each step answered.
 */
const FULL_DISK_SCRIPT = `
set -u
M=$1; CLI=$2
mount -t tmpfs -o size=64k,mode=0700 tmpfs "$M" || { echo "mount-failed"; exit 0; }
L="$M/state/ledger.jsonl"
snap() { "$NODE" "$CLI" snapshot --session s --phase pre --ledger "$L" --decisions - <<<"$GOOD" >/dev/null 2>"$M.err"; }
snap || { echo "first-append-failed"; cat "$M.err"; exit 0; }
dd if=/dev/zero of="$M/filler" bs=4k 2>/dev/null
snap; echo "full rc=$?"; cat "$M.err"
# One page free: the lock takes it, so the append that needs a new page of the ledger fails.
truncate -s -4096 "$M/filler"
for i in $(seq 1 20); do snap || { echo "page rc=$? after=$i"; cat "$M.err"; break; }; done
"$NODE" "$CLI" ledger verify --json --ledger "$L"
rm "$M/filler"
snap; echo "freed rc=$?"
"$NODE" "$CLI" ledger verify --json --ledger "$L"
`;

describe('a full disk (ENOSPC)', () => {
  it('names the lock or the ledger, exit 3, leaves nothing partial, and appends again once space is free', () => {
    const mount = join(tmp.dir, 'full-disk');
    mkdirSync(mount);
    const script = join(tmp.dir, 'full-disk.sh');
    writeFileSync(script, FULL_DISK_SCRIPT);
    const r = spawnSync('unshare', ['--user', '--map-root-user', '--mount', 'bash', script, mount, cliPath], {
      encoding: 'utf8',
      env: cleanEnv({ NODE: process.execPath, GOOD: good }),
    });
    expect(
      r.status === 0 && !r.stdout.startsWith('mount-failed'),
      `this test mounts a tmpfs in a user namespace of its own; it needs unshare (util-linux) and unprivileged user namespaces (sysctl -w kernel.unprivileged_userns_clone=1): ${r.error?.message ?? r.stderr}`,
    ).toBe(true);
    const lines = r.stdout.trim().split('\n');
    const ledger = join(mount, 'state', 'ledger.jsonl');
    // No page at all: the lock cannot be written; nothing is appended.
    expect(lines[0]).toBe('full rc=3');
    expect(lines[1]).toBe(
      `continuity: ${ledger}.lock: cannot write the lock: no space left on the device (ENOSPC)`,
    );
    // One page: appends go on until the ledger needs a page of its own.
    const page = /^page rc=(\d+) after=(\d+)$/.exec(lines[2] ?? '');
    expect(page?.[1], r.stdout).toBe('3');
    const appended = Number(page?.[2]) - 1;
    expect(appended).toBeGreaterThan(0);
    expect(lines[3]).toBe(`continuity: ${ledger}: cannot append: no space left on the device (ENOSPC)`);
    // The refused append left nothing: the ledger holds exactly the appends reported done.
    expect(JSON.parse(lines[4]!)).toMatchObject({ ok: true, records: 1 + appended, quarantined: 0 });
    // Space back: the next append works on the same ledger, with no restart or repair.
    expect(lines[5]).toBe('freed rc=0');
    expect(JSON.parse(lines[6]!)).toMatchObject({ ok: true, records: 2 + appended, quarantined: 0 });
  });
});
