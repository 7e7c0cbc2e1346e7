/**
 * The Codex adapter's pure parts: the translation table replayed against every hook order recorded
 * from the real codex-cli 0.171.0 (test/fixtures/codex-0.171.0/, sanitized), the patch targets,
 * the trust hash (a vector the real binary computed), the config.toml trust edits, and the gate's
 * answers as Codex must receive them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import {
  activityOf,
  boundaryEventOf,
  resumeSourceOf,
  toolEventsOf,
} from '../../src/adapters/codex/events.js';
import { askInstruction, gateOutput } from '../../src/adapters/codex/hook.js';
import { codexHookRegistrations, mergeCodexHooks, removeCodexHooks } from '../../src/adapters/codex/init.js';
import { patchTargets } from '../../src/adapters/codex/patch.js';
import { toPayload } from '../../src/adapters/codex/payload.js';
import { editTrust } from '../../src/adapters/codex/toml.js';
import { snakeEvent, trustedHash, trustKey } from '../../src/adapters/codex/trust.js';
import type { BoundaryTrack } from '../../src/adapters/core/boundary.js';
import { assemble, emptyTrack } from '../../src/adapters/core/boundary.js';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'codex-0.171.0');

function fixture(name: string): Array<{ event: string; fields: Record<string, unknown> }> {
  return JSON.parse(readFileSync(join(FIXTURES, name), 'utf8')) as Array<{
    event: string;
    fields: Record<string, unknown>;
  }>;
}

/** Replays a recorded order through the translation table and the core's assembly. */
function replay(name: string) {
  let track: BoundaryTrack<null> = emptyTrack();
  const outcomes: string[] = [];
  let n = 0;
  let t = Date.parse('2026-12-01T09:00:00Z');
  for (const e of fixture(name)) {
    const r = toPayload(e.fields);
    if (!r.ok) throw new Error(r.problem);
    t += 300;
    const ev = boundaryEventOf(r.payload, new Date(t).toISOString());
    if (!ev) continue;
    const step =
      ev.type === 'pre'
        ? assemble(track, { event: ev, boundaryId: `b${++n}`, capture: null })
        : assemble(track, { event: ev, boundaryId: `b${++n}` } as Parameters<typeof assemble<null>>[1]);
    track = step.track;
    outcomes.push(`${e.event}:${step.outcome.kind}`);
  }
  return { track, outcomes };
}

describe('the translation table against the orders codex 0.171.0 sent', () => {
  it('every fixture parses and maps its events', () => {
    for (const name of readdirSync(FIXTURES)) {
      for (const e of fixture(name)) {
        const r = toPayload(e.fields);
        expect(r.ok, `${name}: ${e.event}`).toBe(true);
      }
    }
  });

  it('mid-turn automatic compaction: PreCompact pending, PostCompact confirms, SessionStart(compact) joins', () => {
    const { outcomes, track } = replay('auto-compact-mid-turn.json');
    expect(outcomes).toEqual(['PreCompact:pending', 'PostCompact:confirmed', 'SessionStart:joined']);
    expect(track.current?.trigger).toBe('auto');
  });

  it('pre-turn compaction on resume: the same boundary, SessionStart(resume) in between is not a signal', () => {
    const { outcomes } = replay('auto-compact-pre-turn-on-resume.json');
    expect(outcomes).toEqual(['PreCompact:pending', 'PostCompact:confirmed', 'SessionStart:joined']);
  });

  it('manual through app-server, then exec resume: confirmed by PostCompact alone', () => {
    const { outcomes, track } = replay('manual-compact-app-server-on-exec-thread-then-exec-resume.json');
    expect(outcomes).toEqual(['PreCompact:pending', 'PostCompact:confirmed']);
    expect(track.current?.trigger).toBe('manual');
  });

  it('manual in the TUI and app-server: SessionStart(compact) at the next turn joins the boundary', () => {
    for (const name of ['manual-compact-tui.json', 'manual-compact-app-server.json']) {
      expect(replay(name).outcomes).toEqual([
        'PreCompact:pending',
        'PostCompact:confirmed',
        'SessionStart:joined',
      ]);
    }
  });

  it('sources and activity', () => {
    const events = fixture('tool-turn.json').map((e) => toPayload(e.fields));
    const ps = events.flatMap((r) => (r.ok ? [r.payload] : []));
    expect(ps.map((p) => resumeSourceOf(p)).filter(Boolean)).toEqual(['startup']);
    expect(ps.map((p) => activityOf(p)).filter(Boolean)).toEqual(['working', 'working', 'working', 'idle']);
  });
});

describe('toPayload', () => {
  it.each([
    ['no event', { session_id: 'a' }, 'hook_event_name is missing'],
    ['no id', { hook_event_name: 'Stop' }, 'Stop: session_id is missing'],
    ['an empty id', { session_id: '', hook_event_name: 'Stop' }, 'Stop: session_id is invalid'],
    ['an id with a space', { session_id: 'a b', hook_event_name: 'Stop' }, 'Stop: session_id is invalid'],
    ['a numeric id', { session_id: 42, hook_event_name: 'Stop' }, 'Stop: session_id is invalid'],
  ])('names the problem for %s, an id present but unusable as invalid', (_what, fields, problem) => {
    const r = toPayload(fields);
    expect(r.ok).toBe(false);
    // The problem, optionally followed by why (never the value itself).
    expect(r.problem?.startsWith(problem)).toBe(true);
    expect(r.problem!.slice(problem.length)).toMatch(/^(?:$|: [a-z0-9 ]+$)/);
  });
});

describe('patchTargets', () => {
  it.each([
    ['*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch\n', ['a.txt']],
    [
      '*** Begin Patch\n*** Update File: src/a.ts\n*** Move to: src/b.ts\n@@\n-x\n+y\n*** Delete File: c.txt\n*** End Patch',
      ['src/a.ts', 'src/b.ts', 'c.txt'],
    ],
    [
      "apply_patch <<'EOF'\r\n*** Begin Patch\r\n  *** Add File: .continuity/task.json\r\n+{}\r\n*** End Patch\r\nEOF",
      ['.continuity/task.json'],
    ],
    ['*** Begin Patch\n*** Add File: a.txt\n+*** Add File: not-a-header\n*** End Patch', ['a.txt']],
  ])('%j → %j', (patch, want) => {
    expect(patchTargets(patch)).toEqual(want);
  });

  it('a patch with no header is undefined (the gate then asks: uninspectable)', () => {
    expect(patchTargets('*** Begin Patch\n*** End Patch')).toBeUndefined();
    expect(patchTargets('*** Add File: \n')).toBeUndefined();
    const events = toolEventsOf({
      event: 'PreToolUse',
      sessionId: 's',
      toolName: 'apply_patch',
      command: 'garbage',
    });
    expect(events).toEqual([{ type: 'tool', toolName: 'apply_patch', kind: 'file_write', truncated: true }]);
  });

  it('one tool event per target file; a shell command as is', () => {
    expect(
      toolEventsOf({
        event: 'PreToolUse',
        sessionId: 's',
        toolName: 'apply_patch',
        command: '*** Begin Patch\n*** Add File: a\n+1\n*** Delete File: b\n*** End Patch',
      }).map((e) => e.filePath),
    ).toEqual(['a', 'b']);
    expect(toolEventsOf({ event: 'PreToolUse', sessionId: 's', toolName: 'Bash', command: 'ls' })).toEqual([
      { type: 'tool', toolName: 'Bash', kind: 'command', command: 'ls' },
    ]);
  });
});

describe('trust', () => {
  it('computes the hash codex 0.171.0 computed for a recorded hook (hooks/list currentHash)', () => {
    const cmd =
      'node /work/explore/codex/record-hook.mjs --log /work/explore/codex/runs/s01a-home-hooksjson/events.jsonl --config /work/explore/codex/runs/s01a-home-hooksjson/answers.json --event PreToolUse';
    expect(trustedHash('PreToolUse', undefined, { type: 'command', command: cmd })).toBe(
      'sha256:378432ae06967eed0a3ef2ad0302f2ae50c8f8acd03cf60b9afe6076fb7cf9ae',
    );
  });

  it('names keys by file, snake-case event and position; the matcher counts only where Codex keeps it', () => {
    expect(snakeEvent('UserPromptSubmit')).toBe('user_prompt_submit');
    expect(trustKey('/h/hooks.json', 'PreToolUse', 1, 0)).toBe('/h/hooks.json:pre_tool_use:1:0');
    const h = { type: 'command' as const, command: 'x' };
    expect(trustedHash('PreToolUse', 'Bash', h)).not.toBe(trustedHash('PreToolUse', undefined, h));
    expect(trustedHash('Stop', 'ignored', h)).toBe(trustedHash('Stop', undefined, h));
    expect(trustedHash('SessionEnd', undefined, { ...h, timeout: 30 })).toBe(
      trustedHash('SessionEnd', undefined, { ...h, timeout: 3 }),
    );
  });
});

describe('config.toml trust edits', () => {
  const key = '/h/hooks.json:stop:0:0';
  const src = '# mine\nmodel = "m"\n\n[projects."/p"]\ntrust_level = "trusted"\n';

  it('appends a table, keeps comments and everything else, and takes it out again exactly', () => {
    const added = editTrust(src, new Map([[key, 'sha256:aa']]), 'config.toml');
    expect(added.startsWith(src)).toBe(true);
    expect(
      (parse(added) as { hooks: { state: Record<string, { trusted_hash: string }> } }).hooks.state[key],
    ).toEqual({
      trusted_hash: 'sha256:aa',
    });
    expect(editTrust(added, new Map([[key, 'sha256:aa']]), 'config.toml')).toBe(added);
    const changed = editTrust(added, new Map([[key, 'sha256:bb']]), 'config.toml');
    expect(changed).toContain('trusted_hash = "sha256:bb"');
    expect(changed).not.toContain('sha256:aa');
    expect(editTrust(changed, new Map([[key, null]]), 'config.toml')).toBe(src);
  });

  it('keeps other fields of a table it untrusts', () => {
    const text = `[hooks.state."${key}"]\ntrusted_hash = "sha256:aa"\nenabled = false\n`;
    expect(editTrust(text, new Map([[key, null]]), 'config.toml')).toBe(
      `[hooks.state."${key}"]\nenabled = false\n`,
    );
  });

  it('refuses what it cannot edit safely, naming the file, and changes nothing', () => {
    expect(() => editTrust('model = \n', new Map([[key, 'sha256:aa']]), 'config.toml')).toThrow(
      /config\.toml/,
    );
    const inline = `hooks = { state = { "${key}" = { trusted_hash = "sha256:zz" } } }\n`;
    expect(() => editTrust(inline, new Map([[key, 'sha256:aa']]), 'config.toml')).toThrow(
      /does not edit|safely/,
    );
  });
});

describe('hooks.json merge and removal', () => {
  const regs = codexHookRegistrations('Bash|apply_patch');
  const theirs = { PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: 'echo mine' }] }] };

  it('appends ours after everyone else, once', () => {
    const m = mergeCodexHooks(theirs, 'continuity hook codex', regs, false);
    expect(m.hooks.PreToolUse).toHaveLength(2);
    expect(m.hooks.PreToolUse![0]).toBe(theirs.PreToolUse[0]);
    expect(m.added.map((r) => r.event)).toEqual(regs.map((r) => r.event));
    const again = mergeCodexHooks(m.hooks, 'continuity hook codex', regs, false);
    expect(again.added).toEqual([]);
    expect(again.hooks).toEqual(m.hooks);
  });

  it('removes exactly ours and says which of the others moved', () => {
    const ours = { type: 'command', command: 'node /x/bin/continuity.js hook codex', timeout: 10 };
    const hooks = {
      Stop: [{ hooks: [ours] }, { hooks: [{ type: 'command', command: 'echo after' }] }],
    };
    const r = removeCodexHooks(hooks, '/h/hooks.json');
    expect(r.hooks).toEqual({ Stop: [{ hooks: [{ type: 'command', command: 'echo after' }] }] });
    expect([...r.moved]).toEqual([['/h/hooks.json:stop:1:0', '/h/hooks.json:stop:0:0']]);
  });
});

describe('the gate as Codex receives it', () => {
  it('allow prints nothing; deny is exactly the well-formed block', () => {
    expect(gateOutput({ verdict: 'allow', code: 'state_allows' })).toBe('');
    const out = JSON.parse(gateOutput({ verdict: 'deny', code: 'state_blocks', reason: 'R' }));
    expect(out).toEqual({
      hookSpecificOutput: {
        hookEventName: 'PreToolUse',
        permissionDecision: 'deny',
        permissionDecisionReason: 'R',
      },
    });
  });

  it('ask becomes deny, saying that a human must approve and how (Codex fails open on ask)', () => {
    const out = JSON.parse(gateOutput({ verdict: 'ask', code: 'state_blocks', reason: 'WORDS' }));
    expect(Object.keys(out)).toEqual(['hookSpecificOutput']);
    expect(Object.keys(out.hookSpecificOutput).sort()).toEqual([
      'hookEventName',
      'permissionDecision',
      'permissionDecisionReason',
    ]);
    expect(out.hookSpecificOutput.permissionDecision).toBe('deny');
    const reason: string = out.hookSpecificOutput.permissionDecisionReason;
    expect(reason).toContain('a human must approve it first');
    expect(reason).toContain('.continuity/config.json');
    expect(reason.endsWith('WORDS')).toBe(true);
    expect(askInstruction('task_record_ask')).toContain('they make the change themselves');
    expect(askInstruction('uninspectable_ask')).toContain('Split it');
  });
});
