/**
 * The ways around the write gate found by the adversarial review (issue 14), each reproduced with
 * hook payloads shaped as Claude Code 2.1.328 sends them (test/fixtures/claude-code-2.1.328/),
 * through real processes of the CLI: the gate never opens on evidence it did not read from the
 * session's own ledger, fails toward `ask` where the evidence is unknown, lets the most severe
 * answer win, and guards the evidence through links and oversized payloads.
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  claudeCodeVoice,
  loadClaudeCodeConfig,
  resolveClaudeCodeEnv,
} from '../../src/adapters/claude-code/config.js';
import { resolveEnv } from '../../src/adapters/core/config.js';
import { decideGate } from '../../src/adapters/core/gate.js';
import { gateFile, stateDirOf } from '../../src/adapters/core/state.js';
import { ATTR_EVIDENCE_MISSING, ATTR_SESSION_ID } from '../../src/otel/semconv.js';
import { humanSealsConfig } from '../support/human.js';
import {
  compact,
  gate,
  hook,
  ledgerRecords,
  makeWorld,
  PAYMENTS_DECISIONS,
  PAYMENTS_VALUES,
  payload,
  type Receiver,
  runCli,
  startReceiver,
  type World,
  writeTaskRecord,
} from './harness.js';

const DECISIONS = PAYMENTS_DECISIONS;
const VALUES = PAYMENTS_VALUES;
const CHANGED = { ...VALUES, scope: { repository: 'acme/payments', paths: ['services/billing'] } };

let receiver: Receiver;
let world: World;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
});
afterEach(() => world?.dispose());

function fresh(extraEnv: NodeJS.ProcessEnv = {}): World {
  world = makeWorld(receiver.endpoint, extraEnv);
  writeTaskRecord(world, DECISIONS);
  return world;
}

/** The agent restates its decisions from its Bash tool (the shell's environment, no CLAUDE_PROJECT_DIR). */
function observe(
  w: World,
  sessionId: string,
  decisions: unknown,
  args: string[] = [],
  env: NodeJS.ProcessEnv = {},
) {
  return runCli(['observe', '--session', sessionId, '--decisions', '-', '--json', ...args], {
    input: JSON.stringify(decisions),
    env: { ...w.shellEnv, ...env },
    cwd: w.project,
  });
}

/** A Write of an absolute path inside the project, as 2.1.328 sends it. */
function write(w: World, sid: string, path = join(w.project, 'src', 'a.ts')) {
  return gate(w, sid, 'Write', { file_path: path, content: 'x' });
}

/** The session's gate cache file. */
function cacheOf(w: World, sid: string): string {
  return gateFile(stateDirOf(w.state, 'claude-code'), sid);
}

/** A conflicting boundary: compacted in the real order, then restated with a changed scope. */
async function conflicting(w: World, sid: string): Promise<void> {
  await hook(w, sid, 'SessionStart', { source: 'startup' });
  await compact(w, sid);
  const r = await observe(w, sid, CHANGED);
  expect(JSON.parse(r.stdout).state).toBe('conflicting');
  expect((await write(w, sid)).decision).toBe('deny');
}

describe('the gate never opens on evidence it did not read from the session’s own ledger', () => {
  it('keeps denying after `observe --ledger OTHER` classified the boundary as preserved against another ledger', async () => {
    const w = fresh();
    const sid = 'foreign-ledger-1';
    await hook(w, sid, 'SessionStart', { source: 'startup' });
    await compact(w, sid);
    const other = join(w.root, 'OTHER.jsonl');
    copyFileSync(w.ledger, other); // the pre snapshot and the boundary, before any restatement
    expect(JSON.parse((await observe(w, sid, CHANGED)).stdout).state).toBe('conflicting');
    const foreign = await observe(w, sid, VALUES, ['--ledger', other]);
    expect(foreign.status).toBe(0);
    expect(JSON.parse(foreign.stdout).state).toBe('preserved'); // true of OTHER.jsonl, not of the session
    const g = await write(w, sid);
    expect(g.decision).toBe('deny');
    expect(g.reason).toContain('conflicting');
  });

  it('keeps denying after a restatement recorded with CONTINUITY_LEDGER pointing elsewhere in the agent’s shell', async () => {
    const w = fresh();
    const sid = 'foreign-ledger-2';
    await hook(w, sid, 'SessionStart', { source: 'startup' });
    await compact(w, sid);
    const other = join(w.root, 'OTHER.jsonl');
    copyFileSync(w.ledger, other);
    expect(JSON.parse((await observe(w, sid, CHANGED)).stdout).state).toBe('conflicting');
    const foreign = await observe(w, sid, VALUES, [], { CONTINUITY_LEDGER: other });
    expect(JSON.parse(foreign.stdout).state).toBe('preserved');
    expect((await write(w, sid)).decision).toBe('deny');
  });

  it('does not exempt a restatement that names another ledger or project while writes are blocked', async () => {
    const w = fresh();
    const sid = 'foreign-ledger-3';
    await conflicting(w, sid);
    for (const command of [
      `continuity observe --session ${sid} --ledger /tmp/OTHER.jsonl --decision scope=1`,
      `continuity observe --session ${sid} --ledger=/tmp/OTHER.jsonl --decision scope=1`,
      `continuity observe --session ${sid} --project /tmp --decision scope=1`,
      `continuity status --session ${sid} --ledger /tmp/OTHER.jsonl`,
      `continuity status --receipt`,
      `continuity ledger verify --ledger /tmp/OTHER.jsonl`,
    ]) {
      expect((await gate(w, sid, 'Bash', { command })).decision, command).toBe('deny');
    }
    const plain = `continuity observe --session ${sid} --json --decisions - <<'EOF'\n{"scope": 1}\nEOF`;
    expect((await gate(w, sid, 'Bash', { command: plain })).decision).toBe('allow');
  });
});

describe('fail toward ask where the evidence is unknown', () => {
  it('denies with the conflict it re-derived when the gate cache cannot be written', async () => {
    const w = fresh();
    const sid = 'cache-unwritable-1';
    await conflicting(w, sid);
    const cache = cacheOf(w, sid);
    rmSync(cache);
    mkdirSync(cache); // neither readable as a file nor replaceable by a rename
    const g = await write(w, sid);
    expect(g.decision).toBe('deny');
    expect(g.reason).toContain('conflicting');
    expect(g.run.stderr).toContain('gate cache');
  });

  it('asks when neither the cache nor the ledger can be read', async () => {
    const w = fresh();
    const sid = 'nothing-readable';
    await conflicting(w, sid);
    rmSync(cacheOf(w, sid));
    rmSync(w.ledger);
    mkdirSync(w.ledger);
    const g = await write(w, sid);
    expect(g.decision).toBe('ask');
    expect(g.run.stderr).toContain('ledger');
  });

  it('records the compaction (evidence missing) when the gate cache cannot be written, and the gate then asks', async () => {
    const w = fresh();
    const sid = 'cache-unwritable-2';
    await hook(w, sid, 'SessionStart', { source: 'startup' });
    const cache = cacheOf(w, sid);
    rmSync(cache);
    mkdirSync(cache);
    const { pre, start, post } = await compact(w, sid);
    for (const r of [pre, start, post]) expect(r.status).toBe(0);
    const records = ledgerRecords(w).filter((r) => r.sessionId === sid && r.type !== 'activity');
    expect(records.map((r) => r.type)).toEqual(['evidence_missing', 'boundary']);
    expect(records[0]?.reason).toBe('state_unavailable');
    const span = receiver.spans.find((s) => s.attributes[ATTR_SESSION_ID] === sid);
    expect(span?.attributes[ATTR_EVIDENCE_MISSING]).toBe('state_unavailable');
    expect((await write(w, sid)).decision).toBe('ask');
  });

  it('records a task record nested 2 000 deep as evidence missing (no crash), and the gate then asks', async () => {
    const w = fresh();
    const sid = 'deep-record';
    let deep: unknown = 'x';
    for (let i = 0; i < 2000; i++) deep = { a: deep };
    writeTaskRecord(w, { ...DECISIONS, scope: { value: deep } });
    await hook(w, sid, 'SessionStart', { source: 'startup' });
    const { pre, start } = await compact(w, sid);
    expect(pre.stderr).not.toContain('Maximum call stack');
    expect(start.stderr).not.toContain('Maximum call stack');
    expect(pre.stderr).toContain('decisions.scope.value: nested deeper than 64 levels');
    const missing = ledgerRecords(w).find((r) => r.type === 'evidence_missing');
    expect(missing?.reason).toBe('task_record_invalid');
    const g = await write(w, sid);
    expect(g.decision).toBe('ask');
    expect(g.reason).toContain('pre_snapshot_missing');
    // A restatement that deep is refused with the field named, not a crash.
    const r = await observe(w, sid, { ...VALUES, scope: deep });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('scope.value');
  });
});

describe('a gate that cannot read a command still answers', () => {
  it('denies a command with substitutions nested 20 000 deep while a boundary conflicts (no stack overflow, no silence)', async () => {
    const w = fresh();
    const sid = 'deep-command';
    await conflicting(w, sid);
    const deep = `${'$('.repeat(20_000)}echo hi${')'.repeat(20_000)}`;
    const g = await gate(w, sid, 'Bash', { command: deep });
    expect(g.run.stderr).not.toContain('Maximum call stack');
    expect(g.decision).toBe('deny');
    // With no compaction, the same command is no business of the gate's, and it still exits 0.
    const other = 'deep-command-healthy';
    await hook(w, other, 'SessionStart', { source: 'startup' });
    const h = await gate(w, other, 'Bash', { command: deep });
    expect(h.run.status).toBe(0);
    expect(h.run.stderr).not.toContain('Maximum call stack');
  });

  it('asks when the gate fails on its way to a verdict (silence would be "no objection")', async () => {
    const w = fresh();
    const { config } = loadClaudeCodeConfig(w.project, resolveClaudeCodeEnv(w.env));
    const warned: string[] = [];
    const answer = await decideGate(
      'gate-failed',
      { type: 'tool', toolName: 'Write', kind: 'file_write', filePath: join(w.project, 'a.ts') },
      {
        config,
        get state(): never {
          throw new Error('EIO: i/o error');
        },
        rederive: async () => undefined,
        voice: claudeCodeVoice(resolveClaudeCodeEnv(w.env)),
        warn: (line) => warned.push(line),
      },
    );
    expect(answer.verdict).toBe('ask');
    expect(answer.code).toBe('gate_failed');
    expect(warned.join('\n')).toContain('EIO');
  });
});

describe('the most severe answer wins', () => {
  it('denies a command that mentions .continuity/ while the boundary conflicts (the state outranks the task-record ask)', async () => {
    const w = fresh();
    const sid = 'severity-1';
    await conflicting(w, sid);
    const g = await gate(w, sid, 'Bash', { command: 'git push --force origin main # see .continuity/' });
    expect(g.decision).toBe('deny');
    expect(g.reason).toContain('conflicting');
    const t = await gate(w, sid, 'Write', {
      file_path: join(w.project, '.continuity', 'task.json'),
      content: '{}',
    });
    expect(t.decision).toBe('deny');
    // With no objection from the state, the task record still asks.
    const other = 'severity-2';
    await hook(w, other, 'SessionStart', { source: 'startup' });
    expect((await gate(w, other, 'Bash', { command: 'cat .continuity/task.json' })).decision).toBe('ask');
  });
});

describe('the path guard', () => {
  it('follows links: a Write through a symbolic link into the ledger, the state or the task record', async () => {
    const w = fresh();
    const sid = 'links';
    await hook(w, sid, 'SessionStart', { source: 'startup' });
    await compact(w, sid); // the ledger and the state directory exist
    expect(JSON.parse((await observe(w, sid, VALUES)).stdout).state).toBe('preserved');
    symlinkSync(w.ledger, join(w.project, 'notes.jsonl'));
    symlinkSync(w.state, join(w.project, 'cache'));
    symlinkSync(join(w.project, '.continuity'), join(w.project, 'docs'));
    expect((await write(w, sid, join(w.project, 'notes.jsonl'))).decision).toBe('deny');
    expect((await write(w, sid, 'notes.jsonl')).decision).toBe('deny');
    // A new file under a linked directory: its nearest existing parent is resolved.
    expect((await write(w, sid, join(w.project, 'cache', 'claude-code', 'new', 'x.json'))).decision).toBe(
      'deny',
    );
    expect((await write(w, sid, join(w.project, 'docs', 'task.json'))).decision).toBe('ask');
    expect((await write(w, sid, join(w.project, 'src', 'ok.ts'))).decision).toBe('allow');
  });

  it('never skips the guard for a Write too large to read whole: it asks, and denies when the state denies', async () => {
    const w = fresh();
    const sid = 'huge-write';
    await hook(w, sid, 'SessionStart', { source: 'startup' });
    const huge = (file: string) =>
      Buffer.from(
        payload(w, sid, 'PreToolUse', {
          tool_name: 'Write',
          tool_input: { file_path: file, content: 'A'.repeat(33 * 1024 * 1024) },
          tool_use_id: 'toolu_01',
        }),
      );
    const run = (file: string) =>
      runCli(['hook', 'claude-code'], { input: huge(file), env: w.env, cwd: w.project });
    const decisionOf = (stdout: string) =>
      stdout.trim() === '' ? 'allow' : JSON.parse(stdout).hookSpecificOutput.permissionDecision;
    expect(decisionOf((await run(w.ledger)).stdout)).toBe('deny'); // the path in the head names the evidence
    expect(decisionOf((await run(join(w.project, 'src', 'big.bin'))).stdout)).toBe('ask');
  });

  it('ignores a relative XDG_STATE_HOME: the adapter state never lands in the project', async () => {
    const w = makeWorld(receiver.endpoint);
    world = w;
    writeTaskRecord(w, DECISIONS);
    const env: NodeJS.ProcessEnv = { ...w.env, XDG_STATE_HOME: 'state-rel' };
    delete env.CONTINUITY_STATE_DIR;
    delete env.CONTINUITY_LEDGER;
    const sid = 'xdg-relative';
    const at = { ...w, env };
    await hook(at, sid, 'SessionStart', { source: 'startup' });
    await compact(at, sid);
    expect(existsSync(join(w.project, 'state-rel'))).toBe(false);
    expect(readdirSync(join(w.root, 'home', '.local', 'state', 'agent-continuity'))).toContain(
      'ledger.jsonl',
    );
  });

  it('ignores a relative HOME too: the state root is absolute and outside the working directory', () => {
    for (const env of [
      { HOME: 'home-rel' },
      { HOME: 'home-rel', XDG_STATE_HOME: 'state-rel' },
      { HOME: '' },
    ]) {
      const e = resolveEnv(env);
      expect(isAbsolute(e.stateRoot), JSON.stringify(env)).toBe(true);
      expect(isAbsolute(e.ledgerPath), JSON.stringify(env)).toBe(true);
      expect(e.stateRoot.startsWith(process.cwd()), JSON.stringify(env)).toBe(false);
    }
  });
});

describe('session ids', () => {
  it.each([
    ['empty', '', /session_id is invalid: empty/],
    ['too long', 'a'.repeat(300), /session_id is invalid: longer than 256 characters/],
    ['with white space', 'a b', /session_id is invalid: white space or control characters/],
    ['not a string', 42, /session_id is invalid: not a string/],
  ])('reports a present but invalid session id (%s) as invalid, naming why', async (_what, id, message) => {
    const w = fresh();
    const input = JSON.stringify({
      session_id: id,
      hook_event_name: 'PreCompact',
      trigger: 'auto',
      cwd: w.project,
    });
    const r = await runCli(['hook', 'claude-code'], { input, env: w.env, cwd: w.project });
    expect(r.status).toBe(0);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).not.toContain('missing');
  });

  it('reports a missing session id as missing', async () => {
    const w = fresh();
    const input = JSON.stringify({ hook_event_name: 'PreCompact', trigger: 'auto' });
    const r = await runCli(['hook', 'claude-code'], { input, env: w.env, cwd: w.project });
    expect(r.stderr).toContain('session_id is missing');
  });

  it('never echoes the bytes of a hostile session id', async () => {
    const w = fresh();
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a literal shell payload, not a template
    const hostile = 'x$(touch${IFS}pwned)\u001b[31m';
    for (const event of ['PreCompact', 'PreToolUse']) {
      const input = JSON.stringify({
        session_id: hostile,
        hook_event_name: event,
        tool_name: 'Write',
        cwd: w.project,
      });
      const r = await runCli(['hook', 'claude-code'], { input, env: w.env, cwd: w.project });
      expect(r.stderr).not.toContain('touch');
      expect(r.stderr).not.toContain('\u001b');
    }
    const storable = JSON.stringify({ session_id: 'x$(id)', hook_event_name: 'PreCompact', trigger: 'auto' });
    const r = await runCli(['hook', 'claude-code'], { input: storable, env: w.env, cwd: w.project });
    expect(r.stderr).toMatch(/session_id is invalid: .*opaque identifier/);
    expect(r.stderr).not.toContain('$(id)');
  });
});

describe('approvals through the agent’s shell', () => {
  it('refuses a run-time chosen program handed `approve` even while the session is healthy (it would carry forward)', async () => {
    const w = fresh();
    const sid = 'hidden-approve-healthy';
    await hook(w, sid, 'SessionStart', { source: 'startup' });
    for (const command of [
      'c=continuity; $c approve --session s --decision scope --from-digest a --to-digest b',
      '"$C" approve --decision scope',
      'eval "contin""uity approve --decision scope"',
      "bash -c 'continuity approve --decision scope'",
    ]) {
      const g = await gate(w, sid, 'Bash', { command });
      expect(g.decision, command).toBe('deny');
    }
    // A run-time chosen program on its own is no business of the gate's while nothing is unresolved.
    expect((await gate(w, sid, 'Bash', { command: 'c=ls; $c -la' })).decision).toBe('allow');
  });

  it('refuses a command whose program is chosen at run time while a boundary is unresolved, even where the policy asks', async () => {
    const w = fresh();
    // The policy that asks is the human's: a sealed configuration (the environment only tightens).
    await humanSealsConfig(w, { gate: { policy: { conflicting: 'ask' } } });
    const sid = 'hidden-approve';
    await hook(w, sid, 'SessionStart', { source: 'startup' });
    await compact(w, sid);
    expect(JSON.parse((await observe(w, sid, CHANGED)).stdout).state).toBe('conflicting');
    for (const command of [
      'c=continuity; $c approve --session s --decision scope --from-digest a --to-digest b',
      '"$C" approve --decision scope',
      'eval "contin""uity approve --decision scope"',
      'x=$(echo continuity); $x approve',
      'bash -c "$CMD"',
      '`echo continuity` approve',
      '$TOOL --version',
    ]) {
      const g = await gate(w, sid, 'Bash', { command });
      expect(g.decision, command).toBe('deny');
      // Handed `approve`, it is refused as an approval; otherwise for its run-time chosen program.
      if (!command.includes('approve')) expect(g.reason, command).toContain('chosen at run time');
    }
    // A plain command still gets what the policy says (ask here).
    expect((await gate(w, sid, 'Bash', { command: 'npm test' })).decision).toBe('ask');
  });
});
