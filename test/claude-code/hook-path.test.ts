/**
 * The hook path against a same-user agent with a shell (issue 26: H3, H4, H5, hard links, brace
 * expansion, unknown tools, `PreSkillShellCommand`), on the hook entry: real `continuity hook
 * claude-code` processes fed the payloads Claude Code sends. Every attack is the issue's own.
 *
 * - H3: a FIFO or a link to `/dev/zero` where the configuration, the task record, the transcript,
 *   the gate cache or the ledger should be never holds a hook: the gate answers `ask` (or its
 *   state's answer), the recording hooks record the compaction with `evidence_missing`.
 * - H4: a gate cache the hooks cannot replace (an immutable or read-only directory) is not
 *   trusted: after the next compaction the gate does not allow.
 * - H5: the always-allowed restatement command runs only this package's binary.
 */
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  linkSync,
  mkdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { armWatchdog, type HookIo } from '../../src/adapters/core/process.js';
import { gateFile, sessionDir, stateDirOf } from '../../src/adapters/core/state.js';
import { humanSealsConfig } from '../support/human.js';
import {
  BIN,
  compact,
  gate,
  hook,
  ledgerRecords,
  makeWorld,
  PAYMENTS_DECISIONS,
  PAYMENTS_VALUES,
  runCli,
  type World,
  writeTaskRecord,
} from './harness.js';

// Nothing listens there: the spans go to the spool, which these tests do not read.
const CLOSED = 'http://127.0.0.1:9';

let world: World | undefined;
afterEach(() => {
  world?.dispose();
  world = undefined;
});

function fresh(extraEnv: NodeJS.ProcessEnv = {}): World {
  world = makeWorld(CLOSED, extraEnv);
  writeTaskRecord(world, PAYMENTS_DECISIONS);
  return world;
}

function mkfifo(path: string): void {
  const r = spawnSync('mkfifo', [path]);
  if (r.status !== 0) throw new Error(`mkfifo ${path} failed: ${r.stderr}`);
}

/** Replaces `path` with a FIFO (no writer will ever open it). */
function fifoAt(path: string): void {
  rmSync(path, { force: true });
  mkfifo(path);
}

/** Replaces `path` with a link to /dev/zero (endless bytes). */
function devZeroAt(path: string): void {
  rmSync(path, { force: true });
  symlinkSync('/dev/zero', path);
}

/** The agent restates faithfully: the boundary is `preserved` and writes are allowed again. */
async function restateFaithfully(w: World, sid: string): Promise<void> {
  const r = await runCli(['observe', '--session', sid, '--decisions', '-', '--json'], {
    input: JSON.stringify(PAYMENTS_VALUES),
    env: w.shellEnv,
    cwd: w.project,
  });
  expect(JSON.parse(r.stdout).state, r.stderr).toBe('preserved');
}

const WRITE = (w: World) => ({ file_path: join(w.project, 'src', 'a.ts'), content: 'x' });

function evidenceMissing(w: World, sid: string): unknown[] {
  return ledgerRecords(w)
    .filter((r) => r.sessionId === sid && r.type === 'evidence_missing')
    .map((r) => r.reason);
}

describe('a hang or an unreadable state never holds a hook (H3)', () => {
  for (const [what, plant] of [
    ['a FIFO', fifoAt],
    ['a link to /dev/zero', devZeroAt],
  ] as const) {
    it(`configuration file is ${what}: the gate asks, and the compaction is recorded with evidence missing`, async () => {
      const w = fresh();
      const sid = `cfg-${what.length}`;
      mkdirSync(join(w.project, '.continuity'), { recursive: true });
      plant(join(w.project, '.continuity', 'config.json'));
      const g = await gate(w, sid, 'Write', WRITE(w));
      expect(g.run.status).toBe(0);
      expect(g.decision).toBe('ask');
      expect(g.reason).toContain('configuration');
      // A read still passes: the gate does not stop the agent from looking.
      expect((await gate(w, sid, 'Read', { file_path: join(w.project, 'a') })).decision).toBe('allow');
      const runs = await compact(w, sid);
      for (const r of Object.values(runs)) expect(r.status).toBe(0);
      expect(evidenceMissing(w, sid)).toEqual(['config_unreadable']);
      expect(ledgerRecords(w).some((r) => r.sessionId === sid && r.type === 'boundary')).toBe(true);
    });

    it(`task record is ${what}: PreCompact returns, the compaction is recorded, the gate then asks`, async () => {
      const w = fresh();
      const sid = `task-${what.length}`;
      plant(join(w.project, '.continuity', 'task.json'));
      const runs = await compact(w, sid);
      for (const r of Object.values(runs)) expect(r.status).toBe(0);
      expect(runs.pre.stderr).toContain('not a regular file');
      expect(evidenceMissing(w, sid)).toEqual(['task_record_unreadable']);
      const g = await gate(w, sid, 'Write', WRITE(w));
      expect(g.decision).toBe('ask');
      expect(g.reason).toContain('pre_snapshot_missing');
    });
  }

  it('a transcript that is a FIFO does not hold PreCompact: the capture is taken and confirmed', async () => {
    const w = fresh();
    const sid = 'fifo-transcript';
    const transcript = join(w.root, 'transcript.jsonl');
    mkfifo(transcript);
    const runs = await compact(w, sid, 'auto', { transcript_path: transcript });
    for (const r of Object.values(runs)) expect(r.status).toBe(0);
    expect(evidenceMissing(w, sid)).toEqual([]);
    expect(
      ledgerRecords(w).some((r) => r.sessionId === sid && r.type === 'snapshot' && r.phase === 'pre'),
    ).toBe(true);
  });

  it('a gate cache that is a FIFO is re-derived from the ledger: the held boundary still denies', async () => {
    const w = fresh();
    const sid = 'fifo-cache';
    await compact(w, sid);
    fifoAt(gateFile(stateDirOf(w.state, 'claude-code'), sid));
    const g = await gate(w, sid, 'Write', WRITE(w));
    expect(g.run.status).toBe(0);
    expect(g.decision).toBe('deny');
  });

  it('a ledger that is a FIFO: the hooks return, the gate asks (no state it can read)', async () => {
    const w = fresh();
    const sid = 'fifo-ledger';
    mkdirSync(w.state, { recursive: true });
    fifoAt(w.ledger);
    const runs = await compact(w, sid);
    for (const r of Object.values(runs)) expect(r.status).toBe(0);
    // The compaction is in the cache (the ledger refused it): the gate does not allow.
    const g = await gate(w, sid, 'Write', WRITE(w));
    expect(g.run.status).toBe(0);
    expect(g.decision).not.toBe('allow');
    // A session the cache knows nothing of: no state, no ledger → ask.
    const other = await gate(w, 'fifo-ledger-2', 'Write', WRITE(w));
    expect(other.decision).toBe('ask');
  });

  it('the watchdog answers and exits when its deadline passes, whatever the hook waits for', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const exit = vi.fn() as unknown as (code: number) => never;
    const io: HookIo = {
      readInput: async () => ({ buffer: Buffer.alloc(0), truncated: false }),
      stdout: { write: (s: string) => out.push(s) },
      stderr: { write: (s: string) => err.push(s) },
      env: {},
      exit,
    };
    armWatchdog(io, 5, () => 'ASK\n', 'gave up');
    // The hook "hangs" on something asynchronous (a lock, the network): the timer still fires.
    await new Promise((r) => setTimeout(r, 100));
    expect(out).toEqual(['ASK\n']);
    expect(err).toEqual(['continuity: gave up\n']);
    expect(exit).toHaveBeenCalledWith(0);
    // Disarmed in time, it does nothing.
    const quiet = vi.fn() as unknown as (code: number) => never;
    armWatchdog({ ...io, exit: quiet }, 5, () => 'X', 'y')();
    await new Promise((r) => setTimeout(r, 50));
    expect(quiet).not.toHaveBeenCalled();
  });
});

describe('a gate cache the hooks cannot replace is not trusted (H4)', () => {
  /** Makes `dir` unwritable for this user: `chmod a-w`, or for root (who ignores modes) the immutable attribute. */
  function freeze(dir: string): () => void {
    if (process.getuid?.() !== 0) {
      chmodSync(dir, 0o500);
      return () => chmodSync(dir, 0o700);
    }
    const r = spawnSync('chattr', ['+i', dir]);
    if (r.status !== 0) throw new Error(`chattr +i ${dir} failed (${r.stderr}); the test needs it as root`);
    return () => void spawnSync('chattr', ['-i', dir]);
  }

  it('after the next compaction the ledger says unverified / pre_snapshot_missing, and the gate does not allow', async () => {
    const w = fresh();
    const sid = 'frozen-cache';
    await compact(w, sid);
    await restateFaithfully(w, sid);
    expect((await gate(w, sid, 'Write', WRITE(w))).decision).toBe('allow');
    const thaw = freeze(sessionDir(stateDirOf(w.state, 'claude-code'), sid));
    try {
      const runs = await compact(w, sid);
      for (const r of Object.values(runs)) expect(r.status).toBe(0);
      // The compaction is in the ledger, its pre snapshot missing (the hooks could not keep it).
      expect(evidenceMissing(w, sid)).toEqual(['state_unavailable']);
      const g = await gate(w, sid, 'Write', WRITE(w));
      expect(g.decision).not.toBe('allow');
      expect(g.reason).toContain('pre_snapshot_missing');
    } finally {
      thaw();
    }
  });

  it('a healthy cache stays on the fast path while other sessions append to the shared ledger', async () => {
    const w = fresh();
    const sid = 'busy-ledger';
    await compact(w, sid);
    await restateFaithfully(w, sid);
    expect((await gate(w, sid, 'Write', WRITE(w))).decision).toBe('allow');
    await compact(w, 'someone-else');
    // Still healthy (nothing new for this session), and not re-derived: the cache is unchanged.
    const cache = gateFile(stateDirOf(w.state, 'claude-code'), sid);
    const before = readFileSync(cache, 'utf8');
    expect((await gate(w, sid, 'Write', WRITE(w))).decision).toBe('allow');
    expect(readFileSync(cache, 'utf8')).toBe(before);
  });
});

describe('the always-allowed restatement command runs only this package (H5)', () => {
  it("refuses ./continuity, /any/path/continuity, node ./continuity.js and brace or glob words; allows this package's binary", async () => {
    const w = fresh();
    const sid = 'own-binary';
    await compact(w, sid);
    // The agent's prepared scripts, named like continuity.
    const fake = join(w.root, 'fake');
    mkdirSync(fake);
    for (const p of [join(w.project, 'continuity'), join(fake, 'continuity')]) {
      writeFileSync(p, '#!/bin/sh\ntouch /tmp/pwned\n', { mode: 0o755 });
    }
    writeFileSync(join(w.project, 'continuity.js'), "require('fs').writeFileSync('/tmp/pwned', '')\n");
    const restate = `observe --session ${sid} --decision scope=1`;
    const refused = [
      `./continuity ${restate}`,
      `${join(fake, 'continuity')} ${restate}`,
      `node ./continuity.js ${restate}`,
      `node ${join(w.project, 'continuity.js')} ${restate}`,
      `npx continuity ${restate}`,
      `continuity observe --session ${sid} {--ledger,${join(w.root, 'other.jsonl')}} --decision scope=1`,
      `continuity observe --session ${sid} {--project,/tmp} --decision scope=1`,
      `continuity observe --session ${sid} --decision scope=1 {--receipt,x}`,
      `continuity status --session ${sid} --json *`,
    ];
    for (const command of refused) {
      expect((await gate(w, sid, 'Bash', { command })).decision, command).toBe('deny');
    }
    const allowed = [
      `continuity ${restate}`,
      `node ${BIN} ${restate}`,
      `${BIN} ${restate}`,
      `continuity observe --session ${sid} --decisions - <<'EOF'\n{"scope": "{a,b} *"}\nEOF`,
    ];
    for (const command of allowed) {
      expect((await gate(w, sid, 'Bash', { command })).decision, command).toBe('allow');
    }
  });
});

describe('hard links to protected files are recognised by inode', () => {
  it('a Write or a Bash redirect through a harmless name for the configuration or the task record asks', async () => {
    const w = fresh();
    const sid = 'hard-link';
    writeFileSync(join(w.project, '.continuity', 'config.json'), '{}\n');
    const alias = join(w.project, 'notes.txt');
    linkSync(join(w.project, '.continuity', 'config.json'), alias);
    const g = await gate(w, sid, 'Write', { file_path: alias, content: '{"gate":{"tools":["None"]}}' });
    expect(g.decision).toBe('ask');
    expect(g.reason).toContain('hard link');
    expect(
      (await gate(w, sid, 'Edit', { file_path: 'notes.txt', old_string: '{', new_string: '[' })).decision,
    ).toBe('ask');
    expect((await gate(w, sid, 'Bash', { command: `echo '{}' > notes.txt` })).decision).toBe('ask');
    // The link made earlier, wherever it is: while the file has two names every write asks.
    expect((await gate(w, sid, 'Write', WRITE(w))).decision).toBe('ask');
    unlinkSync(alias);
    expect((await gate(w, sid, 'Write', WRITE(w))).decision).toBe('allow');
  });

  it('a Write through a hard link to the ledger is denied', async () => {
    const w = fresh();
    const sid = 'ledger-link';
    await compact(w, sid);
    await restateFaithfully(w, sid);
    const alias = join(w.project, 'data.jsonl');
    linkSync(w.ledger, alias);
    const g = await gate(w, sid, 'Write', { file_path: alias, content: '' });
    expect(g.decision).toBe('deny');
    expect((await gate(w, sid, 'Bash', { command: 'truncate -s 0 data.jsonl' })).decision).toBe('deny');
  });
});

describe('tools the gate does not know', () => {
  const UNKNOWN = ['mcp__github__create_issue', 'Task', 'Agent', 'bash', 'Skill', 'SomeFutureTool'];

  it('pass while no boundary is held, ask while writes are held; reads always pass', async () => {
    const w = fresh();
    const sid = 'unknown-tools';
    await hook(w, sid, 'SessionStart', { source: 'startup' });
    for (const tool of UNKNOWN) expect((await gate(w, sid, tool, {})).decision, tool).toBe('allow');
    await compact(w, sid);
    for (const tool of UNKNOWN) {
      const g = await gate(w, sid, tool, { command: 'touch x' });
      expect(g.decision, tool).toBe('ask');
      expect(g.reason).toContain('does not know what this tool can change');
    }
    for (const tool of ['Read', 'Grep', 'Glob']) {
      expect((await gate(w, sid, tool, {})).decision, tool).toBe('allow');
    }
    // The restate tool's name from a server the project does not register as ours is held too.
    expect((await gate(w, sid, 'mcp__continuity__restate', {})).decision).toBe('ask');
    await restateFaithfully(w, sid);
    for (const tool of UNKNOWN) expect((await gate(w, sid, tool, {})).decision, tool).toBe('allow');
  });

  it('follows gate.unknownTools: deny from the environment; allow only from the sealed file', async () => {
    // The environment tightens (deny) but cannot relax (allow would be milder than the default ask).
    for (const [policy, expected] of [
      ['deny', 'deny'],
      ['allow', 'ask'],
    ] as const) {
      const w = fresh({ CONTINUITY_GATE_UNKNOWN_TOOLS: policy });
      await compact(w, 'unknown-policy');
      expect((await gate(w, 'unknown-policy', 'mcp__x__y', {})).decision, policy).toBe(expected);
      w.dispose();
      world = undefined;
    }
    const w = fresh();
    await humanSealsConfig(w, { gate: { unknownTools: 'allow' } });
    await compact(w, 'unknown-policy');
    expect((await gate(w, 'unknown-policy', 'mcp__x__y', {})).decision).toBe('allow');
  });
});

describe("PreSkillShellCommand: a skill's or slash command's shell command is gated", () => {
  async function skillShell(w: World, sid: string, command: string) {
    const run = await hook(w, sid, 'PreSkillShellCommand', {
      tool_name: 'Bash',
      tool_input: { command },
      tool_use_id: 'skill-shell-1',
      command_name: 'deploy',
      command_source: 'projectSettings',
      invoked_by: 'user',
    });
    const out = run.stdout.trim() === '' ? undefined : JSON.parse(run.stdout);
    return { run, out };
  }

  it('answers in the event own output: nothing while writes are not held, deny while they are', async () => {
    const w = fresh();
    const sid = 'skill-shell';
    await hook(w, sid, 'SessionStart', { source: 'startup' });
    expect((await skillShell(w, sid, 'touch written.txt')).out).toBeUndefined();
    expect(
      (await skillShell(w, sid, 'continuity approve --decision scope')).out?.hookSpecificOutput,
    ).toMatchObject({
      hookEventName: 'PreSkillShellCommand',
      permissionDecision: 'deny',
    });
    await compact(w, sid);
    const held = await skillShell(w, sid, 'touch written.txt');
    expect(held.run.status).toBe(0);
    expect(held.out.hookSpecificOutput).toMatchObject({
      hookEventName: 'PreSkillShellCommand',
      permissionDecision: 'deny',
    });
    expect(held.out.hookSpecificOutput.permissionDecisionReason).toContain('unverified');
  });
});
