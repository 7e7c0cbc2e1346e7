/**
 * Malformed and hostile hook input, failures inside the hooks, and the exporter's spool (issue 6):
 * every hook exits 0 with at most one line on stderr; only the gate blocks; the transcript path,
 * the compaction summary and custom instructions never reach the ledger, the spool or a span.
 */
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ATTR_EVIDENCE_MISSING,
  ATTR_SESSION_ID,
  SPAN_ACTIVITY,
  SPAN_COMPACTION_PRE,
} from '../../src/otel/semconv.js';
import { humanSealsConfig } from '../support/human.js';
import {
  compact,
  gate,
  hook,
  ledgerRecords,
  makeWorld,
  PAYMENTS_DECISIONS,
  payload,
  type Receiver,
  runCli,
  startReceiver,
  stateBytes,
  widePermissions,
  writeTaskRecord,
} from './harness.js';

const DECISIONS = PAYMENTS_DECISIONS;
const WRITE = { file_path: 'src/a.ts', content: 'x' };

let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
});

function oneLine(stderr: string): void {
  expect(stderr.trimEnd().split('\n')).toHaveLength(1);
}

describe('malformed input', () => {
  const cases: Array<[string, string]> = [
    ['invalid JSON', '{"session_id": "s", "hook_event_name": '],
    ['an empty input', ''],
    ['a JSON array', '[1,2,3]'],
    ['a missing session_id', JSON.stringify({ hook_event_name: 'PreCompact', trigger: 'auto' })],
    ['a missing hook_event_name', JSON.stringify({ session_id: 'abc' })],
    [
      'a session_id with white space',
      JSON.stringify({ session_id: 'a b', hook_event_name: 'PreToolUse', tool_name: 'Write' }),
    ],
    ['a session_id that is not a string', JSON.stringify({ session_id: 42, hook_event_name: 'Stop' })],
  ];
  for (const [what, input] of cases) {
    it(`exits 0 with one stderr line and records nothing for ${what}`, async () => {
      const world = makeWorld(receiver.endpoint);
      try {
        const r = await runCli(['hook', 'claude-code'], { input, env: world.env, cwd: world.project });
        expect(r.status).toBe(0);
        expect(r.stdout).toBe('');
        oneLine(r.stderr);
        expect(r.stderr).toMatch(/^continuity: /);
        expect(existsSync(world.ledger)).toBe(false);
      } finally {
        world.dispose();
      }
    });
  }

  it('exits 0 with one line for events it does not use, and records nothing', async () => {
    const world = makeWorld(receiver.endpoint);
    try {
      for (const event of ['SessionEnd', 'SubagentStop', 'TotallyNewEvent']) {
        const r = await hook(world, 'sess-other', event, { reason: 'exit' });
        expect(r.status).toBe(0);
        expect(r.stdout).toBe('');
        expect(r.stderr).toContain(`event ${event} is not used`);
        oneLine(r.stderr);
      }
      expect(existsSync(world.ledger)).toBe(false);
    } finally {
      world.dispose();
    }
  });

  it('refuses to record a session id that is not an opaque identifier (shell syntax), and still exits 0', async () => {
    const world = makeWorld(receiver.endpoint);
    try {
      writeTaskRecord(world, DECISIONS);
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a literal shell payload, not a template
      const evil = 'x$(touch${IFS}pwned)';
      const r = await hook(world, evil, 'PreCompact', { trigger: 'auto' });
      expect(r.status).toBe(0);
      expect(r.stderr).toContain('not an opaque identifier');
      expect(existsSync(world.ledger)).toBe(false);
      const g = await gate(world, evil, 'Write', WRITE);
      expect(g.decision).toBe('allow');
      expect(existsSync(join(world.project, 'pwned'))).toBe(false);
    } finally {
      world.dispose();
    }
  });
});

describe('hostile payloads never leak', () => {
  it('keeps transcript_path, compact_summary and custom_instructions out of the ledger, the spool and the spans', async () => {
    const world = makeWorld(receiver.endpoint);
    const sid = 'leak-check-1';
    try {
      writeTaskRecord(world, DECISIONS);
      const marker = 'LEAKMARKER-7f3a9c';
      const summary = `${marker}-summary ${'lorem ipsum '.repeat(100_000)}`; // ~1.2 MB
      const extra = {
        transcript_path: `/home/alice/.claude/projects/${marker}-transcript.jsonl`,
        custom_instructions: `${marker}-instructions keep the secret sk-${'a'.repeat(30)}`,
      };
      receiver.setMode({ kind: 'fail', status: 503 }); // everything goes to the spool first
      expect((await hook(world, sid, 'PreCompact', { trigger: 'manual', ...extra })).status).toBe(0);
      expect(
        (await hook(world, sid, 'PostCompact', { trigger: 'manual', compact_summary: summary, ...extra }))
          .status,
      ).toBe(0);
      expect((await hook(world, sid, 'SessionStart', { source: 'compact', ...extra })).status).toBe(0);
      const spooled = readdirSync(join(world.state, 'claude-code', 'spool')).filter((n) =>
        n.endsWith('.json'),
      );
      expect(spooled.length).toBeGreaterThan(0);
      const disk = stateBytes(world).toString('latin1');
      expect(disk).not.toContain(marker);
      expect(disk).not.toContain('/home/alice');
      expect(disk).not.toContain('lorem ipsum');
      expect(widePermissions(world.state)).toEqual([]);

      // The receiver is back: the next hook run delivers the spool, oldest first.
      receiver.setMode({ kind: 'ok' });
      const before = receiver.spans.length;
      expect((await hook(world, sid, 'Stop', { stop_hook_active: false, ...extra })).status).toBe(0);
      const delivered = receiver.spans.slice(before).filter((s) => s.attributes[ATTR_SESSION_ID] === sid);
      expect(delivered.map((s) => s.name)).toEqual([SPAN_COMPACTION_PRE, SPAN_ACTIVITY]);
      expect(
        readdirSync(join(world.state, 'claude-code', 'spool')).filter((n) => n.endsWith('.json')),
      ).toEqual([]);
      const wire = Buffer.concat(receiver.requests.map((r) => r.body)).toString('latin1');
      expect(wire).not.toContain(marker);
      expect(wire).not.toContain('/home/alice');
      expect(wire).not.toContain(world.root);
    } finally {
      receiver.setMode({ kind: 'ok' });
      world.dispose();
    }
  });

  it('decides on a tool call whose input is larger than the parse limit, from the payload head', async () => {
    const world = makeWorld(receiver.endpoint);
    const sid = 'huge-input';
    try {
      writeTaskRecord(world, DECISIONS);
      const huge = (content: string) =>
        Buffer.from(
          payload(world, sid, 'PreToolUse', {
            tool_name: 'Write',
            tool_input: { file_path: 'big.bin', content },
          }),
        );
      const content = 'A'.repeat(40 * 1024 * 1024);
      let r = await runCli(['hook', 'claude-code'], {
        input: huge(content),
        env: world.env,
        cwd: world.project,
      });
      expect(r.status).toBe(0);
      // No compaction yet, but the gate could not read the target from a payload cut short at the
      // parse limit: it may be aimed at the evidence, so a human looks first.
      expect(JSON.parse(r.stdout).hookSpecificOutput.permissionDecision).toBe('ask');
      expect(r.stdout).toContain('too large for the gate to inspect');
      await compact(world, sid);
      r = await runCli(['hook', 'claude-code'], { input: huge(content), env: world.env, cwd: world.project });
      expect(r.status).toBe(0);
      expect(JSON.parse(r.stdout).hookSpecificOutput.permissionDecision).toBe('deny');
      // A field named like session_id inside the content cannot redirect the decision.
      const spoof = `","session_id":"someone-else","x":"`;
      r = await runCli(['hook', 'claude-code'], {
        input: huge(spoof + content),
        env: world.env,
        cwd: world.project,
      });
      expect(JSON.parse(r.stdout).hookSpecificOutput.permissionDecision).toBe('deny');
    } finally {
      world.dispose();
    }
  });
});

describe('the gate guards the evidence', () => {
  it('denies touching the ledger, keys and state; asks before the task record changes; allows plain continuity reads', async () => {
    const world = makeWorld(receiver.endpoint, { CONTINUITY_DIGEST_KEY_FILE: '/tmp/some/key.file' });
    const sid = 'guard-1';
    try {
      const cases: Array<[string, Record<string, unknown>, 'allow' | 'deny' | 'ask']> = [
        ['Write', { file_path: world.ledger, content: '{}' }, 'deny'],
        [
          'Edit',
          {
            file_path: join(world.state, 'claude-code', 'sessions', 'x', 'gate.json'),
            old_string: 'a',
            new_string: 'b',
          },
          'deny',
        ],
        ['Write', { file_path: '/tmp/some/key.file', content: 'k' }, 'deny'],
        ['Write', { file_path: '.continuity/task.json', content: '{}' }, 'ask'],
        ['MultiEdit', { file_path: join(world.project, '.continuity', 'config.json'), edits: [] }, 'ask'],
        ['Bash', { command: `cat ${world.ledger}` }, 'deny'],
        ['Bash', { command: 'sed -i d ~/.local/state/agent-continuity/ledger.jsonl' }, 'deny'],
        ['Bash', { command: 'echo $CONTINUITY_DIGEST_KEY_FILE' }, 'deny'],
        ['Bash', { command: 'rm -rf .continuity' }, 'ask'],
        ['Bash', { command: 'node bin/continuity.js approve --decision scope' }, 'deny'],
        ['Bash', { command: 'continuity status --session guard-1' }, 'allow'],
        ['Bash', { command: 'npm test' }, 'allow'],
        ['Write', { file_path: 'src/ok.ts', content: 'x' }, 'allow'],
        ['Read', { file_path: world.ledger }, 'allow'], // not a gated tool
      ];
      for (const [tool, input, expected] of cases) {
        const g = await gate(world, sid, tool, input);
        expect(g.decision, `${tool} ${JSON.stringify(input)}`).toBe(expected);
        expect(g.run.status).toBe(0);
      }
    } finally {
      world.dispose();
    }
  });

  it('does not let a chained command ride on the restatement exemption', async () => {
    const world = makeWorld(receiver.endpoint);
    const sid = 'chain-1';
    try {
      writeTaskRecord(world, DECISIONS);
      await compact(world, sid);
      for (const command of [
        `continuity observe --session ${sid} --decision scope=1 && rm -rf src`,
        `continuity observe --session ${sid} --decision scope=1; touch x`,
        `continuity observe --session ${sid} --decision "scope=$(rm -rf src)"`,
        `continuity observe --session ${sid} --decisions - <<EOF\n{"scope": "$(touch x)"}\nEOF`,
        `continuity observe --session ${sid} --decisions - <<'EOF'\n{}\nEOF\nrm -rf src`,
      ]) {
        expect((await gate(world, sid, 'Bash', { command })).decision, command).toBe('deny');
      }
      const ok = `continuity observe --session ${sid} --decisions - <<'EOF'\n{"scope": "a; b && $(c)"}\nEOF`;
      expect((await gate(world, sid, 'Bash', { command: ok })).decision).toBe('allow');
    } finally {
      world.dispose();
    }
  });

  it('follows a configured policy: conflicting asks instead of denying', async () => {
    const world = makeWorld(receiver.endpoint);
    const sid = 'policy-1';
    try {
      // A milder policy is obeyed only as the human sealed it (the environment only tightens).
      await humanSealsConfig(world, { gate: { policy: { conflicting: 'ask' } } });
      writeTaskRecord(world, DECISIONS);
      await compact(world, sid);
      await runCli(
        [
          'observe',
          '--session',
          sid,
          '--decision',
          'scope="elsewhere"',
          '--decision',
          `approval_boundary=${JSON.stringify(DECISIONS.approval_boundary.value)}`,
          '--decision',
          `acceptance_test=${JSON.stringify(DECISIONS.acceptance_test.value)}`,
        ],
        {
          env: world.shellEnv,
          cwd: world.project,
        },
      );
      const g = await gate(world, sid, 'Write', WRITE);
      expect(g.decision).toBe('ask');
      expect(g.reason).toContain('asks a human first (conflicting: unapproved_change)');
    } finally {
      world.dispose();
    }
  });
});

describe('PreCompact never blocks compaction', () => {
  it('records evidence missing when there is no task record, and the gate then asks a human', async () => {
    const world = makeWorld(receiver.endpoint);
    const sid = 'no-record';
    try {
      const { pre: r } = await compact(world, sid);
      expect(r.status).toBe(0);
      expect(r.stdout).toBe(''); // no decision names to ask the summarizer to keep
      oneLine(r.stderr);
      const missing = ledgerRecords(world).find((x) => x.type === 'evidence_missing');
      expect(missing?.reason).toBe('task_record_missing');
      const g = await gate(world, sid, 'Write', WRITE);
      expect(g.decision).toBe('ask');
      expect(g.reason).toContain('pre_snapshot_missing');
      const span = receiver.spans.find((s) => s.attributes[ATTR_SESSION_ID] === sid);
      expect(span?.attributes[ATTR_EVIDENCE_MISSING]).toBe('task_record_missing');
    } finally {
      world.dispose();
    }
  });

  it('refuses to hash a sensitive decision without the digest key, and keys it when the key is there', async () => {
    const world = makeWorld(receiver.endpoint);
    try {
      writeTaskRecord(world, {
        ...DECISIONS,
        approval_boundary: { ...DECISIONS.approval_boundary, sensitive: true },
      });
      await compact(world, 'no-key');
      expect(ledgerRecords(world).find((x) => x.type === 'evidence_missing')?.reason).toBe(
        'digest_key_missing',
      );

      const keyFile = join(world.root, 'digest.key');
      writeFileSync(keyFile, 'ab'.repeat(32), { mode: 0o600 });
      const keyed = { ...world, env: { ...world.env, CONTINUITY_DIGEST_KEY_FILE: keyFile } };
      await compact(keyed, 'with-key');
      const pre = ledgerRecords(world).findLast((x) => x.type === 'snapshot') as {
        decisions: Record<string, { digest: string }>;
      };
      expect(pre.decisions.approval_boundary!.digest).toMatch(/^hmac-sha256:[0-9a-f]{16}:/);
      expect(pre.decisions.scope!.digest).toMatch(/^sha256:/);

      // The agent's shell has no key: observe refuses rather than hashing the value in plain.
      const args = ['observe', '--session', 'with-key', '--decisions', '-'];
      const input = JSON.stringify(
        Object.fromEntries(Object.entries(DECISIONS).map(([n, d]) => [n, d.value])),
      );
      const noKey = await runCli(args, { input, env: world.shellEnv, cwd: world.project });
      expect(noKey.status).toBe(3);
      expect(noKey.stderr).toContain('CONTINUITY_DIGEST_KEY_FILE');
      expect(noKey.stdout).toBe('');
      const withKey = await runCli(args, {
        input,
        env: { ...world.shellEnv, CONTINUITY_DIGEST_KEY_FILE: keyFile },
        cwd: world.project,
      });
      expect(withKey.stdout).toContain('preserved');
    } finally {
      world.dispose();
    }
  });

  it('exits 0 when the ledger cannot be written, and the gate still waits for a re-observation', async () => {
    const world = makeWorld(receiver.endpoint);
    const sid = 'broken-ledger';
    try {
      writeTaskRecord(world, DECISIONS);
      const blocker = join(world.root, 'not-a-dir');
      writeFileSync(blocker, 'x');
      const broken = { ...world, env: { ...world.env, CONTINUITY_LEDGER: join(blocker, 'ledger.jsonl') } };
      const { pre, start: r, post } = await compact(broken, sid);
      for (const run of [pre, r, post]) expect(run.status).toBe(0);
      oneLine(r.stderr);
      expect(r.stderr).toContain('ledger');
      const g = await gate(broken, sid, 'Write', WRITE);
      expect(g.decision).toBe('ask');
      expect(g.reason).toContain('ledger_write_failed');
      const span = receiver.spans.find((s) => s.attributes[ATTR_SESSION_ID] === sid);
      expect(span?.attributes[ATTR_EVIDENCE_MISSING]).toBe('ledger_write_failed');
    } finally {
      world.dispose();
    }
  });

  it('records a compaction that had no PreCompact as a boundary whose pre snapshot is missing', async () => {
    const world = makeWorld(receiver.endpoint);
    const sid = 'no-pre-hook';
    try {
      writeTaskRecord(world, DECISIONS);
      await hook(world, sid, 'SessionStart', { source: 'startup' });
      const r = await hook(world, sid, 'SessionStart', { source: 'compact' });
      expect(JSON.parse(r.stdout).hookSpecificOutput.additionalContext).toContain('"approval_boundary"');
      const types = ledgerRecords(world).map((x) => `${x.type}:${x.reason ?? ''}`);
      expect(types).toEqual(['evidence_missing:pre_hook_missing', 'boundary:']);
      expect((await gate(world, sid, 'Write', WRITE)).decision).toBe('ask');
    } finally {
      world.dispose();
    }
  });
});

describe('activity', () => {
  it('records working, waiting_human and idle on change only', async () => {
    const world = makeWorld(receiver.endpoint);
    const sid = 'activity-1';
    try {
      mkdirSync(world.state, { recursive: true });
      await hook(world, sid, 'UserPromptSubmit', { prompt: 'PROMPT-SECRET-123 do the thing' });
      await hook(world, sid, 'PostToolUse', {
        tool_name: 'Bash',
        tool_input: { command: 'ls' },
        tool_response: { stdout: 'OUT-SECRET' },
      });
      await hook(world, sid, 'Notification', {
        message: 'Claude needs your permission',
        notification_type: 'permission_prompt',
      });
      await hook(world, sid, 'PostToolUse', { tool_name: 'Bash', tool_input: { command: 'ls' } });
      await hook(world, sid, 'Stop', { stop_hook_active: false });
      await hook(world, sid, 'Stop', { stop_hook_active: false });
      const states = ledgerRecords(world)
        .filter((x) => x.type === 'activity')
        .map((x) => x.state);
      expect(states).toEqual(['working', 'waiting_human', 'working', 'idle']);
      const disk = stateBytes(world).toString('latin1');
      expect(disk).not.toContain('PROMPT-SECRET');
      expect(disk).not.toContain('OUT-SECRET');
    } finally {
      world.dispose();
    }
  });
});
