/**
 * The adapter's pure parts, in process: the Bash and path guard, the policy, configuration,
 * payload parsing, the settings merge, the restatement and the task record, the messages, and
 * the spool's bound.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadClaudeCodeConfig, resolveClaudeCodeEnv } from '../../src/adapters/claude-code/config.js';
import { hookRegistrations, mergeHookSettings } from '../../src/adapters/claude-code/init.js';
import { parsePayload } from '../../src/adapters/claude-code/payload.js';
import { DEFAULT_GATE_POLICY, policyVerdict } from '../../src/adapters/core/config.js';
import { adapterExportConfig } from '../../src/adapters/core/export.js';
import { inspectBashCommand, inspectTargetPath, isContinuityReadonly } from '../../src/adapters/core/gate.js';
import { compactionContext, gateReason, nextAction } from '../../src/adapters/core/messages.js';
import { digestRestatement } from '../../src/adapters/core/restatement.js';
import { fileKey, spoolDir, stateDirOf } from '../../src/adapters/core/state.js';
import {
  digestTaskRecord,
  nestedDeeperThan,
  taskRecordTemplate,
} from '../../src/adapters/core/task-record.js';

/** The configuration of `dir` under the environment `env`, resolved as a hook resolves it. */
function loadConfig(dir: string, env: NodeJS.ProcessEnv) {
  return loadClaudeCodeConfig(dir, resolveClaudeCodeEnv(env));
}

import { InputError } from '../../src/decision/problems.js';
import { createDigestKey, digestValue } from '../../src/digest/digest.js';
import { MAX_SPOOL_FILES, spoolRequest } from '../../src/export/spool.js';

/** A value nested `n` objects deep. */
function deeply(n: number): unknown {
  let v: unknown = 'x';
  for (let i = 0; i < n; i++) v = { a: v };
  return v;
}

let dir = '';
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cc-unit-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const PATHS = {
  stateRoot: '/s/agent-continuity',
  files: ['/k/digest.key'],
  projectStateDir: '/p/.continuity',
};

describe('guard', () => {
  describe('Bash commands', () => {
    it.each([
      ['continuity approve --session s --decision scope', 'approve'],
      ['npx continuity approve --decision scope', 'approve'],
      ['node /opt/ac/bin/continuity.js approve --decision x', 'approve'],
      ['node dist/cli/main.js --ledger x approve', 'approve'],
      ['echo ok && continuity approve', 'approve'],
      ['continuity observe --session s --decision scope=1', 'continuity_readonly'],
      ['continuity status --session s --json', 'continuity_readonly'],
      ['continuity ledger verify', 'continuity_readonly'],
      ['node /opt/ac/bin/continuity.js observe --decisions -', 'continuity_readonly'],
      ['cat /s/agent-continuity/ledger.jsonl', 'touches_evidence'],
      ['rm ~/.local/state/agent-continuity/claude-code/sessions/x/gate.json', 'touches_evidence'],
      ['cat /k/digest.key', 'touches_evidence'],
      ['env | grep CONTINUITY_CHAIN_KEY', 'touches_evidence'],
      ['vim .continuity/task.json', 'touches_task_record'],
      ['git commit -m "continuity: approve later"', 'other'],
      ['npm test', 'other'],
    ] as const)('%s → %s', (command, kind) => {
      expect(inspectBashCommand(command, PATHS)).toBe(kind);
    });

    it('accepts one quoted here-document and nothing after it', () => {
      expect(isContinuityReadonly('continuity observe --decisions - <<\'EOF\'\n{"a": "$(x)"}\nEOF')).toBe(
        true,
      );
      expect(isContinuityReadonly('continuity observe --decisions - <<"EOF"\n{}\nEOF\n')).toBe(true);
      expect(isContinuityReadonly('continuity observe --decisions - <<EOF\n{}\nEOF')).toBe(false); // expands
      expect(isContinuityReadonly("continuity observe --decisions - <<'EOF'\n{}\nEOF\nrm -rf /")).toBe(false);
      expect(isContinuityReadonly("continuity observe --decisions - <<'EOF'\n{}")).toBe(false); // unterminated
      expect(isContinuityReadonly('continuity observe --decision "a=$(id)"')).toBe(false);
      expect(isContinuityReadonly("continuity observe --decision 'a=$(id)'")).toBe(true); // single quotes are literal
      expect(isContinuityReadonly('continuity observe --decision a=1 | sh')).toBe(false);
      expect(isContinuityReadonly('continuity observe > /etc/x')).toBe(false);
      expect(isContinuityReadonly("continuity observe --decision 'a=1")).toBe(false); // unbalanced
      expect(isContinuityReadonly('continuity snapshot --phase pre')).toBe(false);
    });
  });

  it('places file targets in the evidence, the task record, or elsewhere', () => {
    expect(inspectTargetPath('/s/agent-continuity/ledger.jsonl', '/p', PATHS)).toBe('touches_evidence');
    // A relative path that climbs out of the project is resolved before it is judged.
    expect(inspectTargetPath('../s/agent-continuity/x', '/p', PATHS)).toBe('touches_evidence');
    expect(inspectTargetPath('/k/digest.key', '/p', PATHS)).toBe('touches_evidence');
    expect(inspectTargetPath('.continuity/task.json', '/p', PATHS)).toBe('touches_task_record');
    expect(inspectTargetPath('src/.continuity-notes.md', '/p', PATHS)).toBe('other');
    expect(inspectTargetPath('/s/agent-continuity-other/x', '/p', PATHS)).toBe('other');
  });
});

describe('policy', () => {
  it('follows the five states by default, asking when the pre snapshot is missing', () => {
    expect(policyVerdict({}, 'preserved', 'digest_match_fresh')).toBe('allow');
    expect(policyVerdict({}, 'approved_change', 'approved_chain')).toBe('allow');
    expect(policyVerdict({}, 'unverified', 'post_observation_missing')).toBe('deny');
    expect(policyVerdict({}, 'unverified', 'pre_snapshot_missing')).toBe('ask');
    expect(policyVerdict({}, 'dropped', 'absent_after_compaction')).toBe('deny');
    expect(policyVerdict({}, 'conflicting', 'unapproved_change')).toBe('deny');
    expect(Object.isFrozen(DEFAULT_GATE_POLICY)).toBe(true);
  });

  it('lets the user override a state, and a state/reason more specifically', () => {
    const policy = { unverified: 'allow', 'unverified/stale_observation': 'ask' } as const;
    expect(policyVerdict(policy, 'unverified', 'pre_snapshot_missing')).toBe('allow');
    expect(policyVerdict(policy, 'unverified', 'stale_observation')).toBe('ask');
    expect(policyVerdict(policy, 'conflicting', 'unapproved_change')).toBe('deny');
  });
});

describe('configuration', () => {
  it('reads the project file, lets CONTINUITY_* variables tighten it, and turns bad values into warnings', () => {
    mkdirSync(join(dir, '.continuity'));
    writeFileSync(
      join(dir, '.continuity', 'config.json'),
      JSON.stringify({
        taskRecord: 'docs/task.json',
        gate: { tools: ['Write', 'Bash'], policy: { conflicting: 'ask', bogus: 'deny', dropped: 'maybe' } },
        export: { endpoint: 'http://collector:4318', timeoutMs: 5, headers: { 'x-token': 't' } },
      }),
    );
    const env = {
      CONTINUITY_OTLP_PROTOCOL: 'http/protobuf',
      CONTINUITY_GATE_POLICY: 'unverified=ask,preserved=ask',
      CONTINUITY_OTLP_HEADERS: 'authorization=Bearer x',
    };
    const { config, warnings } = loadConfig(dir, env);
    // The export section is resolved only when a hook exports (the gate never loads the exporter).
    const exported = adapterExportConfig(config);
    expect(config.taskRecordPath).toBe(join(dir, 'docs', 'task.json'));
    // The file's relaxations wait for the human's seal: until then the strict defaults hold for
    // them (the file's tools added to the default list, its milder verdict dropped); the
    // environment applies on top only where it tightens (preserved=ask), never where it would
    // relax (unverified=ask, milder than the default deny).
    expect(config.gate.tools).toEqual(['Edit', 'Write', 'MultiEdit', 'NotebookEdit', 'Bash', 'PowerShell']);
    expect(config.gate.policy).toEqual({ preserved: 'ask' });
    expect(config.unsealed?.relaxations.map((r) => r.setting)).toEqual([
      'gate.tools',
      'gate.policy.conflicting',
    ]);
    expect(config.unsealed?.gate.tools).toEqual(['Write', 'Bash']);
    expect(config.unsealed?.gate.policy).toEqual({ conflicting: 'ask', preserved: 'ask' });
    expect(exported.config.tracesUrl).toBe('http://collector:4318/v1/traces');
    expect(exported.config.protocol).toBe('http/protobuf');
    expect(exported.config.timeoutMs).toBe(1500);
    expect(exported.config.headers).toEqual({ 'x-token': 't', authorization: 'Bearer x' });
    expect(warnings.join('\n')).toMatch(/gate\.policy\.bogus: unknown state/);
    expect(warnings.join('\n')).toMatch(
      /CONTINUITY_GATE_POLICY unverified: would relax the gate, and the environment can only tighten it .*continuity config seal.*; ignored/,
    );
    expect(warnings.join('\n')).toMatch(/gate\.policy\.dropped: expected allow, ask or deny/);
    expect(exported.warnings.join('\n')).toMatch(/timeoutMs: expected an integer/);
  });

  it('the environment only tightens: it adds gated tools and stricter verdicts, and a relaxing variable is ignored', () => {
    mkdirSync(join(dir, '.continuity'), { recursive: true });
    writeFileSync(
      join(dir, '.continuity', 'config.json'),
      JSON.stringify({ gate: { tools: ['Write'], unknownTools: 'allow', policy: { dropped: 'allow' } } }),
    );
    // An agent that can write the runtime's settings (Claude Code's `env`) must not relax the gate
    // through them: each of these would, and each is ignored with its variable named.
    const relaxing = loadConfig(dir, {
      CONTINUITY_GATE_TOOLS: 'None',
      CONTINUITY_GATE_POLICY: 'conflicting=allow,unverified/pre_snapshot_missing=allow',
      CONTINUITY_GATE_UNKNOWN_TOOLS: 'allow',
    });
    const strictTools = ['Edit', 'Write', 'MultiEdit', 'NotebookEdit', 'Bash', 'PowerShell'];
    // `None` joins the list (a name no tool has); it takes none away.
    expect(relaxing.config.gate.tools).toEqual([...strictTools, 'None']);
    expect(relaxing.config.gate.policy).toEqual({});
    expect(relaxing.config.gate.unknownTools).toBe('ask');
    const said = relaxing.warnings.join('\n');
    for (const name of [
      'CONTINUITY_GATE_TOOLS',
      'CONTINUITY_GATE_POLICY conflicting',
      'CONTINUITY_GATE_POLICY unverified/pre_snapshot_missing',
    ]) {
      expect(said).toContain(`${name}: would relax the gate`);
    }
    // Under the file's sealed settings the same variables relax nothing either.
    expect(relaxing.config.unsealed?.gate.tools).toEqual(['Write', 'None']);
    expect(relaxing.config.unsealed?.gate.policy).toEqual({ dropped: 'allow' });
    expect(relaxing.config.unsealed?.gate.unknownTools).toBe('allow');

    // Tightening variables apply, over the strict defaults and over the file as sealed.
    const { config } = loadConfig(dir, {
      CONTINUITY_GATE_TOOLS: 'Write,Bash,mcp__db__query',
      CONTINUITY_GATE_POLICY: 'dropped=ask,preserved=ask',
      CONTINUITY_GATE_UNKNOWN_TOOLS: 'deny',
    });
    expect(config.gate.tools).toEqual([...strictTools, 'mcp__db__query']);
    // dropped=ask is milder than the default deny: ignored while the file is not sealed.
    expect(config.gate.policy).toEqual({ preserved: 'ask' });
    expect(config.gate.unknownTools).toBe('deny');
    expect(config.unsealed?.relaxations.map((r) => r.setting)).toEqual(['gate.tools', 'gate.policy.dropped']);
    expect(config.unsealed?.gate.tools).toEqual(['Write', 'Bash', 'mcp__db__query']);
    expect(config.unsealed?.gate.policy).toEqual({ dropped: 'ask', preserved: 'ask' });
    expect(config.unsealed?.gate.unknownTools).toBe('deny');
  });

  it('defaults to a local continuity serve, JSON encoding, the gated tools (PowerShell too), export on', () => {
    const { config, warnings } = loadConfig(dir, {});
    expect(adapterExportConfig(config)).toEqual({
      warnings: [],
      config: {
        enabled: true,
        tracesUrl: 'http://127.0.0.1:4318/v1/traces',
        protocol: 'http/json',
        timeoutMs: 1500,
        headers: {},
      },
    });
    expect(config.gate.tools).toEqual(['Edit', 'Write', 'MultiEdit', 'NotebookEdit', 'Bash', 'PowerShell']);
    expect(warnings).toEqual([]);
    const off = { CONTINUITY_EXPORT: 'off' };
    expect(adapterExportConfig(loadConfig(dir, off).config).config.enabled).toBe(false);
  });
});

describe('hook payloads', () => {
  it('keeps identifiers and the gate inputs, never the transcript path, summary or prompt', () => {
    const r = parsePayload(
      Buffer.from(
        JSON.stringify({
          session_id: 'abc-123',
          transcript_path: '/home/u/t.jsonl',
          cwd: '/p',
          hook_event_name: 'PostCompact',
          trigger: 'auto',
          compact_summary: 'SUMMARY',
          prompt: 'PROMPT',
        }),
      ),
      false,
    );
    expect(r.ok).toBe(true);
    expect(r.payload).toEqual({ event: 'PostCompact', sessionId: 'abc-123', cwd: '/p', trigger: 'auto' });
    expect(JSON.stringify(r.payload)).not.toMatch(/SUMMARY|PROMPT|t\.jsonl/);
  });

  it('reads the identifying fields from the head of a truncated payload', () => {
    const head =
      '{"session_id":"s-1","transcript_path":"/x","cwd":"/p","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"content":"\\"session_id\\":\\"evil\\"';
    const r = parsePayload(Buffer.from(head), true);
    expect(r.payload).toEqual({
      event: 'PreToolUse',
      sessionId: 's-1',
      truncated: true,
      toolName: 'Write',
      cwd: '/p',
    });
  });

  it.each([
    ['not JSON', '{', 'input is not valid JSON'],
    ['an array', '[]', 'input is not a JSON object'],
    ['no event', '{"session_id":"a"}', 'hook_event_name is missing'],
    ['an event that is not a string', '{"session_id":"a","hook_event_name":7}', 'hook_event_name is invalid'],
    ['no id', '{"hook_event_name":"Stop"}', 'Stop: session_id is missing'],
    ['a null id', '{"session_id":null,"hook_event_name":"Stop"}', 'Stop: session_id is missing'],
    ['an empty id', '{"session_id":"","hook_event_name":"Stop"}', 'Stop: session_id is invalid'],
    ['a numeric id', '{"session_id":42,"hook_event_name":"Stop"}', 'Stop: session_id is invalid'],
    [
      'a control character in the id',
      '{"session_id":"a\\u0007","hook_event_name":"Stop"}',
      'Stop: session_id is invalid',
    ],
    [
      'a 300-character id',
      `{"session_id":"${'a'.repeat(300)}","hook_event_name":"Stop"}`,
      'Stop: session_id is invalid',
    ],
  ])('names the problem for %s', (_what, text, problem) => {
    const r = parsePayload(Buffer.from(text), false);
    expect(r.ok).toBe(false);
    // The problem, optionally followed by why (never the value itself).
    expect(r.problem?.startsWith(problem)).toBe(true);
    expect(r.problem!.slice(problem.length)).toMatch(/^(?:$|: [a-z0-9 ]+$)/);
  });
});

describe('settings merge', () => {
  const regs = hookRegistrations('Edit|Write|MultiEdit|NotebookEdit|Bash');
  const user = {
    permissions: { allow: ['Bash(npm test)'] },
    hooks: {
      PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: './guard.sh' }] }],
      Stop: [{ hooks: [{ type: 'command', command: 'notify-send done' }] }],
    },
  };

  it("adds every hook once and keeps the user's settings and hooks", () => {
    const first = mergeHookSettings(user, 'settings.json', 'continuity hook claude-code', regs);
    expect(first.added.map((r) => r.event)).toEqual(regs.map((r) => r.event));
    expect(first.keptGroups).toBe(2);
    const s = first.settings as {
      permissions: unknown;
      hooks: Record<string, Array<Record<string, unknown>>>;
    };
    expect(s.permissions).toEqual(user.permissions);
    expect(s.hooks.PreToolUse).toHaveLength(2);
    expect(s.hooks.PreToolUse![0]).toEqual(user.hooks.PreToolUse[0]);
    expect(s.hooks.PreToolUse![1]).toEqual({
      matcher: 'Edit|Write|MultiEdit|NotebookEdit|Bash',
      hooks: [{ type: 'command', command: 'continuity hook claude-code', timeout: 5, onFailure: 'block' }],
    });
    // The skill and slash-command shell gate blocks on failure too; a recording hook never does.
    expect(s.hooks.PreSkillShellCommand![0]).toEqual({
      hooks: [{ type: 'command', command: 'continuity hook claude-code', timeout: 5, onFailure: 'block' }],
    });
    expect(s.hooks.PreCompact![0]).toEqual({
      hooks: [{ type: 'command', command: 'continuity hook claude-code', timeout: 15 }],
    });
    const second = mergeHookSettings(
      first.settings,
      'settings.json',
      'node /x/bin/continuity.js hook claude-code',
      regs,
    );
    expect(second.added).toEqual([]);
    expect(second.alreadyPresent).toHaveLength(regs.length);
    expect(second.settings).toEqual(first.settings);
  });

  it('gives a gate hook installed before onFailure existed `onFailure: "block"`, and only the gate', () => {
    const old = {
      hooks: {
        PreToolUse: [
          { matcher: '*', hooks: [{ type: 'command', command: 'continuity hook claude-code', timeout: 5 }] },
        ],
        PreCompact: [{ hooks: [{ type: 'command', command: 'continuity hook claude-code', timeout: 15 }] }],
      },
    };
    const merged = mergeHookSettings(old, 'settings.json', 'continuity hook claude-code', regs);
    const s = merged.settings as { hooks: Record<string, Array<{ hooks: Array<Record<string, unknown>> }>> };
    expect(s.hooks.PreToolUse![0]!.hooks[0]!.onFailure).toBe('block');
    expect(s.hooks.PreCompact![0]!.hooks[0]!.onFailure).toBeUndefined();
    expect(merged.upgraded).toEqual(['PreToolUse']);
    expect(merged.rewritten).toEqual([]);
  });

  it('refuses a settings file of the wrong shape, naming the field', () => {
    expect(() => mergeHookSettings([], 's.json', 'c', regs)).toThrow(InputError);
    expect(() => mergeHookSettings({ hooks: [] }, 's.json', 'c', regs)).toThrow(
      /s\.json: hooks: expected an object/,
    );
    expect(() => mergeHookSettings({ hooks: { Stop: {} } }, 's.json', 'c', regs)).toThrow(
      /s\.json: hooks\.Stop: expected an array/,
    );
  });
});

describe('task record', () => {
  const now = '2026-11-30T10:00:00Z';
  function write(doc: unknown): string {
    const p = join(dir, 'task.json');
    writeFileSync(p, JSON.stringify(doc));
    return p;
  }

  it('digests each decision (keyed when sensitive) and keeps no value', () => {
    const key = createDigestKey(Buffer.alloc(32, 7));
    const p = write({
      decisions: {
        scope: { value: { repository: 'acme/payments' } },
        approval_boundary: { value: 'deploy-needs-human', sensitive: true },
        acceptance_test: { value: 'npm test', revision: 3 },
      },
    });
    const r = digestTaskRecord(p, 'task.json', now, () => key);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.digests.sensitive).toEqual(['approval_boundary']);
    expect(r.digests.decisions.scope).toEqual({
      digest: digestValue({ repository: 'acme/payments' }),
      revision: 1,
      observedAt: now,
      source: 'task-record',
    });
    expect(r.digests.decisions.approval_boundary!.digest).toBe(digestValue('deploy-needs-human', key));
    expect(r.digests.decisions.acceptance_test!.revision).toBe(3);
    expect(JSON.stringify(r)).not.toMatch(/acme|deploy-needs-human|npm test/);
  });

  it.each([
    ['the template', JSON.parse(taskRecordTemplate()), 'task_record_template'],
    ['two decisions', { decisions: { a: { value: 1 }, b: { value: 2 } } }, 'task_record_invalid'],
    [
      'an unknown field',
      { decisions: { a: { value: 1, colour: 'red' }, b: { value: 2 }, c: { value: 3 } } },
      'task_record_invalid',
    ],
    [
      'a bad name',
      { decisions: { Scope: { value: 1 }, b: { value: 2 }, c: { value: 3 } } },
      'task_record_invalid',
    ],
    [
      'a value nested 2 000 deep (refused, never a stack overflow)',
      { decisions: { a: { value: deeply(2000) }, b: { value: 2 }, c: { value: 3 } } },
      'task_record_invalid',
    ],
    [
      'a sensitive decision and no key',
      { decisions: { a: { value: 1, sensitive: true }, b: { value: 2 }, c: { value: 3 } } },
      'digest_key_missing',
    ],
  ])('refuses %s with a reason code', (_what, doc, code) => {
    const r = digestTaskRecord(write(doc), 'task.json', now, () => undefined);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.problem.code).toBe(code);
      expect(r.problem.message).toMatch(/^task\.json/);
    }
  });

  it('reports a missing file as task_record_missing', () => {
    const r = digestTaskRecord(join(dir, 'nope.json'), '.continuity/task.json', now, () => undefined);
    expect(r.ok ? '' : r.problem.code).toBe('task_record_missing');
  });
  it('names every problem with its field path, and never quotes the file when it is not JSON', () => {
    const r = digestTaskRecord(
      write({ task: 'has space', extra: 1, decisions: { a: { value: 1, sensitive: 'yes', revision: 0 } } }),
      'task.json',
      now,
      () => undefined,
    );
    expect(r.ok ? '' : r.problem.message).toBe(
      'task.json: extra: unknown field; remove it; task.json: task: expected an opaque identifier: letters, digits and ._:@#+=/- only, no spaces, not a path, at most 256; task.json: decisions.a.sensitive: expected true or false',
    );
    const p = join(dir, 'broken.json');
    writeFileSync(p, '{"decisions": {"scope": {"value": SECRET-VALUE}}}');
    const bad = digestTaskRecord(p, 'task.json', now, () => undefined);
    expect(bad.ok ? '' : bad.problem.message).toMatch(/^task\.json: not valid JSON/);
    expect(bad.ok ? '' : bad.problem.message).not.toContain('SECRET');
  });

  it('bounds the nesting of a value without recursion', () => {
    expect(nestedDeeperThan(deeply(64))).toBe(false);
    expect(nestedDeeperThan(deeply(65))).toBe(true);
    expect(nestedDeeperThan(deeply(100_000))).toBe(true);
    expect(nestedDeeperThan([[[]]], 2)).toBe(true);
    expect(nestedDeeperThan('scalar', 0)).toBe(false);
  });
});

describe('restatement', () => {
  const now = '2026-11-30T10:05:00Z';
  const pre = {
    scope: { digest: digestValue('a'), revision: 2, observedAt: '2026-11-30T10:00:00Z' },
    approval_boundary: {
      digest: digestValue('b', createDigestKey(Buffer.alloc(16, 1))),
      revision: 1,
      observedAt: '2026-11-30T10:00:00Z',
    },
  };

  it('reads plain values and the wrapper form, keeps revisions, bumps them on change', () => {
    const key = createDigestKey(Buffer.alloc(16, 1));
    const out = digestRestatement(
      {
        scope: 'a',
        approval_boundary: { value: 'c' },
        target: { value: { branch: 'x' }, observedAt: '2026-11-30T10:04:00Z', source: 'runbook' },
      },
      '(stdin)',
      { now, pre, sensitive: [], loadKey: () => key },
    );
    expect(out.scope).toEqual({
      digest: digestValue('a'),
      revision: 2,
      observedAt: now,
      source: 'agent-restatement',
    });
    expect(out.approval_boundary!.digest).toBe(digestValue('c', key));
    expect(out.approval_boundary!.revision).toBe(2);
    expect(out.target).toEqual({
      digest: digestValue({ branch: 'x' }),
      revision: 1,
      observedAt: '2026-11-30T10:04:00Z',
      source: 'runbook',
    });
  });

  it('refuses a plain hash of a sensitive decision when no key is configured', () => {
    expect(() =>
      digestRestatement({ approval_boundary: 'b' }, '-', {
        now,
        pre,
        sensitive: [],
        loadKey: () => undefined,
      }),
    ).toThrow(/CONTINUITY_DIGEST_KEY_FILE/);
  });

  it('names every bad field', () => {
    try {
      digestRestatement(
        {
          Scope: 1,
          target: { value: 1, observedAt: 'yesterday' },
          constraint: { value: 1, observedAt: '2099-01-01T00:00:00Z' },
        },
        'file.json',
        { now, pre: null, sensitive: [], loadKey: () => undefined },
      );
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(InputError);
      const msg = (e as Error).message;
      expect(msg).toContain('file.json: Scope: expected a decision name');
      expect(msg).toContain('file.json: target.observedAt: expected RFC 3339');
      expect(msg).toContain('file.json: constraint.observedAt: is in the future');
    }
  });
});

describe('messages', () => {
  it('names decisions and the exact command, never values', () => {
    const text = compactionContext('sess-1', ['approval_boundary', 'scope']);
    expect(text).toContain('"approval_boundary", "scope"');
    expect(text).toContain("continuity observe --session sess-1 --decisions - <<'EOF'");
    const conflict = nextAction({
      sessionId: 'sess-1',
      state: 'conflicting',
      reason: 'unapproved_change',
      primaryDecision: 'scope',
      decisionNames: ['scope'],
      change: { decision: 'scope', fromDigest: 'sha256:aa', toDigest: 'sha256:bb' },
    });
    expect(conflict).toContain('--from-digest sha256:aa --to-digest sha256:bb');
    expect(conflict).toContain('never through your Bash tool');
    const ask = gateReason(
      {
        sessionId: 's',
        state: 'unverified',
        reason: 'pre_snapshot_missing',
        primaryDecision: null,
        decisionNames: [],
        evidenceMissing: 'task_record_missing',
      },
      'ask',
    );
    const started = {
      sessionId: 's',
      state: 'unverified',
      reason: 'post_observation_missing',
      primaryDecision: null,
      decisionNames: ['scope'],
    } as const;
    expect(nextAction({ ...started, compacted: false })).toContain('if the compaction was cancelled');
    expect(nextAction({ ...started, compacted: true })).toContain('This session was compacted');
    expect(ask).toMatch(/^The continuity gate asks a human first/);
    expect(ask).toContain('(task_record_missing)');
  });
});

describe('state file names', () => {
  it('are 32 hex digits and differ for near-identical ids', () => {
    expect(fileKey('session-1')).toMatch(/^[0-9a-f]{32}$/);
    expect(fileKey('session-1')).not.toBe(fileKey('session-2'));
    expect(fileKey('../../etc/passwd')).toMatch(/^[0-9a-f]{32}$/);
  });
});

describe('spool', () => {
  it('drops the oldest requests when full, counts them, and keeps files 0600', () => {
    const env = { CONTINUITY_STATE_DIR: dir };
    const spool = join(dir, 'claude-code', 'spool');
    mkdirSync(spool, { recursive: true, mode: 0o700 });
    for (let i = 0; i < MAX_SPOOL_FILES; i++) {
      writeFileSync(join(spool, `${String(i).padStart(15, '0')}-1-a.json`), '{}', { mode: 0o600 });
    }
    expect(spoolDir(stateDirOf(resolveClaudeCodeEnv(env).core.stateRoot, 'claude-code'))).toBe(spool);
    const dropped = spoolRequest(spool, Buffer.from('{"new":true}'), 'json');
    expect(dropped).toBe(1);
    const names = readdirSync(spool).filter((n) => n.endsWith('.json'));
    expect(names).toHaveLength(MAX_SPOOL_FILES);
    expect(names).not.toContain(`${'0'.repeat(15)}-1-a.json`);
    expect(readFileSync(join(spool, 'dropped'), 'utf8').trim()).toBe('1');
    const fresh = names.find((n) => readFileSync(join(spool, n), 'utf8') === '{"new":true}');
    expect(fresh).toBeDefined();
    expect(statSync(join(spool, fresh!)).mode & 0o777).toBe(0o600);
  });
});
