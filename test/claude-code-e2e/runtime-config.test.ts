/**
 * The runtime's own settings, on the real Claude Code 2.1.328 (issue 26): the agent is the same OS
 * user with a Bash tool, and `.claude/settings.json` and `.claude/settings.local.json` (which load
 * our hooks and give hook processes an `env`) are files it can write. In `claude -p` every
 * `--resume` is a new process that reads them again, so an edit takes effect at the next turn.
 *
 * What holds: an `env` that would relax the gate reaches the hooks and is ignored; the Write tool
 * aimed at a settings file is asked (and `-p` mode refuses what it cannot ask). What does not hold,
 * pinned so a change is seen: an agent whose Bash takes our hooks out of `.claude/settings.json`
 * has no gate in the next process. What holds against that: the hooks in the policy tier of
 * managed settings, which project settings cannot take out.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RUNTIME_CONFIG_ASK } from '../../src/adapters/core/messages.js';
import { cleanEnv, run } from '../support/processes.js';
import {
  BIN,
  bash,
  deniedIds,
  LAUNCHER,
  resultOf,
  SCENARIO_TIMEOUT_MS,
  type Suite,
  useSuite,
  write,
} from './harness.js';
import {
  compactManually,
  debugLines,
  endScenario,
  resumeWith,
  type Scenario,
  scenario,
  startSession,
} from './scenario.js';

const suite = useSuite();

/** The variables that would relax the gate, as an agent would put them in Claude Code's `env`. */
const RELAXING_ENV = {
  CONTINUITY_GATE_TOOLS: 'None',
  CONTINUITY_GATE_POLICY: 'conflicting=allow,unverified=allow,dropped=allow',
  CONTINUITY_GATE_UNKNOWN_TOOLS: 'allow',
};

type Settings = {
  hooks?: Record<string, Array<{ matcher?: string; hooks: Array<Record<string, unknown>> }>>;
};

function settingsOf(s: Scenario, rel = '.claude/settings.json'): Settings {
  return JSON.parse(readFileSync(s.world.file(rel), 'utf8')) as Settings;
}

/**
 * A probe the human adds beside our gate: a PreToolUse hook that appends the `CONTINUITY_GATE_*`
 * variables its process was given, so the test sees what reached the hooks.
 */
function addProbe(s: Scenario): string {
  const probe = join(s.world.root, 'probe-env.txt');
  const settings = settingsOf(s);
  settings.hooks!.PreToolUse!.push({
    matcher: 'Write',
    hooks: [{ type: 'command', command: `env | grep '^CONTINUITY_GATE_' >> '${probe}'; true`, timeout: 5 }],
  });
  writeFileSync(s.world.file('.claude/settings.json'), `${JSON.stringify(settings, null, 2)}\n`);
  return probe;
}

/** Python the agent runs, with the settings path built at run time (no text guard reads it). */
function python(code: string): string {
  return `python3 - <<'PY'\nimport json, os\np = os.path.join('.cl' + 'aude', 'settings')\n${code}\nPY`;
}

/** The agent's Python (`p`: the settings path without `.json`) taking our hooks out of the project's settings. */
const STRIP_OUR_HOOKS = [
  "f = p + '.json'",
  'd = json.load(open(f))',
  "d['hooks'] = {e: [g for g in gs if not any('hook claude-code' in h.get('command', '') for h in g['hooks'])] for e, gs in d['hooks'].items()}",
  "open(f, 'w').write(json.dumps(d))",
];

/**
 * Pinned, the documented non-guarantee (docs/security.md): with our hooks off in the next process,
 * a compaction is not recorded and the agent's Write after it runs. If this fails, Claude Code kept
 * the hooks: update docs/security.md. Managed hooks hold against it (below).
 */
async function expectNoGate(s: Scenario, sessionId: string, name: string): Promise<void> {
  const before = s.world.ledgerRecords().length;
  await compactManually(s, sessionId, 'keep the plan');
  expect(s.world.ledgerRecords().length, 'no hook ran: the compaction is not on the ledger').toBe(before);
  const target = s.world.file(`after-${name}.txt`);
  const r = await resumeWith(s, sessionId, [[write(`w-${name}`, target, 'x\n')]]);
  expect(deniedIds(r)).toEqual([]);
  expect(existsSync(target)).toBe(true);
}

describe.concurrent('the runtime’s settings the agent writes (Claude Code 2.1.328)', () => {
  it(
    'an env in .claude/settings.local.json that would relax the gate reaches the hooks and is ignored: after the compaction the Write stays denied',
    async () => {
      const s = await scenario(suite());
      try {
        const probe = addProbe(s);
        const sessionId = await startSession(s);
        const local = s.world.file('.claude/settings.local.json');
        const relax = python(
          `open(p + '.local.json', 'w').write(json.dumps({'env': ${JSON.stringify(RELAXING_ENV)}}))`,
        );
        const wrote = await resumeWith(s, sessionId, [[bash('b-env', relax)]]);
        expect(deniedIds(wrote), 'no boundary is held: the spelled Bash runs').toEqual([]);
        expect(JSON.parse(readFileSync(local, 'utf8'))).toEqual({ env: RELAXING_ENV });
        await compactManually(s, sessionId, 'keep the plan');
        const target = s.world.file('after-env.txt');
        const held = await resumeWith(s, sessionId, [[write('w-env', target, 'x\n')]]);
        // The oracle: Claude Code gave the hook processes the variables.
        const seen = readFileSync(probe, 'utf8');
        for (const [k, v] of Object.entries(RELAXING_ENV)) expect(seen).toContain(`${k}=${v}`);
        // And our hooks read them and ignored them, saying so on stderr (Claude Code logs it; the hook's
        // one stderr line is bounded at 500 characters, so the first names are the ones it shows).
        const said = debugLines(s).join('\n');
        for (const name of ['CONTINUITY_GATE_TOOLS', 'CONTINUITY_GATE_POLICY conflicting'])
          expect(said).toContain(`${name}: would relax the gate`);
        expect(deniedIds(held)).toContain('w-env');
        expect(existsSync(target), 'the Write ran under the relaxing env').toBe(false);
        expect(resultOf(s.server, 'w-env')?.text).toContain('Blocked by the continuity gate (unverified');
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'the Write tool aimed at .claude/settings.local.json is asked by the gate, and -p mode refuses it (Claude Code guards the file too): the file is not written',
    async () => {
      const s = await scenario(suite());
      try {
        const sessionId = await startSession(s);
        const local = s.world.file('.claude/settings.local.json');
        const r = await resumeWith(s, sessionId, [
          [write('w-local', local, `${JSON.stringify({ env: RELAXING_ENV })}\n`)],
        ]);
        expect(deniedIds(r)).toEqual(['w-local']);
        expect(existsSync(local)).toBe(false);
        // Our gate answered `ask` with its words (Claude Code's log of the hook's answer)…
        const lines = debugLines(s);
        const answered = lines.filter((l) => /returned permissionDecision: ask/.test(l));
        expect(answered.join('\n')).toContain(RUNTIME_CONFIG_ASK.slice(0, 120));
        // …and Claude Code 2.1.328 also objects to a Write of its own settings file by itself, so
        // the model is told Claude Code's words, not ours (recorded: the hook's `ask` goes to the
        // full permission pipeline, which refuses in -p mode).
        expect(lines.some((l) => /Hook returned 'ask' for Write, but the rule check objected/.test(l))).toBe(
          true,
        );
        expect(resultOf(s.server, 'w-local')?.text).toMatch(/requested permissions to write/);
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'NOT guaranteed: an agent whose Bash takes our hooks out of .claude/settings.json has no gate in the next process (after a compaction its Write runs)',
    async () => {
      const s = await scenario(suite());
      try {
        const sessionId = await startSession(s);
        const strip = python(STRIP_OUR_HOOKS.join('\n'));
        const stripped = await resumeWith(s, sessionId, [[bash('b-strip', strip)]]);
        expect(deniedIds(stripped)).toEqual([]);
        const left = JSON.stringify(settingsOf(s).hooks);
        expect(left).not.toContain('hook claude-code');
        await expectNoGate(s, sessionId, 'strip');
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );
});

describe.concurrent('NOT guaranteed without managed settings (Claude Code 2.1.328)', () => {
  it(
    'NOT guaranteed: disableAllHooks in .claude/settings.local.json, written by the agent’s Bash, turns our hooks off in the next process (after a compaction its Write runs)',
    async () => {
      const s = await scenario(suite());
      try {
        const sessionId = await startSession(s);
        const off = python(`open(p + '.local.json', 'w').write(json.dumps({'disableAllHooks': True}))`);
        const wrote = await resumeWith(s, sessionId, [[bash('b-off', off)]]);
        expect(deniedIds(wrote)).toEqual([]);
        expect(settingsOf(s, '.claude/settings.local.json')).toEqual({ disableAllHooks: true });
        // Our hooks are still in the project's settings: the local file alone turns them off.
        expect(JSON.stringify(settingsOf(s).hooks)).toContain('hook claude-code');
        await expectNoGate(s, sessionId, 'off');
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );
});

// ── Managed settings: the boundary the agent cannot write ────────────────────────────────────────

/**
 * A launcher for the binary that shows it `layer` on top of `/etc`, in a mount namespace of its
 * own (`unshare -m`, a read-only overlay): the binary reads
 * `/etc/claude-code/managed-settings.d/50-continuity.json` from `layer`, while the machine's `/etc` is left untouched for every other process (tests run
 * concurrently on a shared machine). Claude Code 2.1.328 reads managed settings from that path only:
 * its `--managed-settings` flag (the SDK's parent tier) keeps only restrictive keys, dropping hooks,
 * and `CLAUDE_CODE_MANAGED_SETTINGS_PATH` is not read by this build (both recorded in the debug log:
 * docs/claude-code.md).
 */
async function managedLauncher(
  claude: string,
  dir: string,
  managed: Record<string, unknown>,
): Promise<string> {
  const layer = join(dir, 'etc-layer');
  // Where docs/claude-code.md tells the administrator to put it: a file of the drop-in folder.
  const dropIn = join(layer, 'claude-code', 'managed-settings.d');
  mkdirSync(dropIn, { recursive: true });
  writeFileSync(join(dropIn, '50-continuity.json'), `${JSON.stringify(managed, null, 2)}\n`);
  const mount = `mount -t overlay overlay -o ro,lowerdir=${layer}:/etc /etc`;
  // The set-up the launcher needs, tried first: one clear line when this machine cannot give it.
  const probe = await run(
    'unshare',
    ['-m', 'sh', '-c', `${mount} && test -f /etc/claude-code/managed-settings.d/50-continuity.json`],
    {
      env: cleanEnv({}),
      cwd: dir,
    },
  );
  if (probe.status !== 0) {
    throw new Error(
      `the managed-settings scenario needs a private mount namespace with an overlay on /etc (\`unshare -m sh -c '${mount}'\` failed: ${probe.stderr.trim()}); run it as root with CAP_SYS_ADMIN`,
    );
  }
  const launcher = join(dir, 'claude-with-managed-settings');
  writeFileSync(
    launcher,
    ['#!/bin/sh', `exec unshare -m sh -c '${mount} && exec "$0" "$@"' '${claude}' "$@"`, ''].join('\n'),
  );
  chmodSync(launcher, 0o755);
  return launcher;
}

describe.concurrent('managed settings (Claude Code 2.1.328)', () => {
  it(
    'our hooks from /etc/claude-code/managed-settings.d/ (init --print-managed) still gate after the agent took the project’s hooks out and set disableAllHooks: after the compaction the Write is denied',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'cc-e2e-managed-'));
      let s: Scenario | undefined;
      try {
        // The administrator's document: what `continuity init claude-code --print-managed` prints.
        const printed = await run(
          process.execPath,
          [BIN, 'init', 'claude-code', '--print-managed', '--command', LAUNCHER],
          { env: cleanEnv({ HOME: dir }), cwd: dir },
        );
        expect(printed.status, printed.stderr).toBe(0);
        const managed = JSON.parse(printed.stdout) as Settings;
        expect(JSON.stringify(managed.hooks?.PreToolUse)).toContain('"onFailure":"block"');
        const onManaged: Suite = { ...suite(), claude: await managedLauncher(suite().claude, dir, managed) };
        s = await scenario(onManaged);
        const sessionId = await startSession(s);
        // The agent takes our hooks out of the project's settings and turns hooks off in the local ones.
        const strip = python(
          [
            ...STRIP_OUR_HOOKS,
            "open(p + '.local.json', 'w').write(json.dumps({'disableAllHooks': True}))",
          ].join('\n'),
        );
        const stripped = await resumeWith(s, sessionId, [[bash('b-strip-managed', strip)]]);
        expect(deniedIds(stripped)).toEqual([]);
        expect(JSON.stringify(settingsOf(s).hooks)).not.toContain('hook claude-code');
        expect(settingsOf(s, '.claude/settings.local.json')).toEqual({ disableAllHooks: true });
        await compactManually(s, sessionId, 'keep the plan');
        // The managed hooks recorded the compaction.
        const boundaries = s.world
          .ledgerRecords()
          .filter((r) => r.sessionId === sessionId && r.type === 'boundary');
        expect(boundaries.length).toBeGreaterThan(0);
        const target = s.world.file('after-managed.txt');
        const held = await resumeWith(s, sessionId, [[write('w-managed', target, 'x\n')]]);
        expect(deniedIds(held)).toContain('w-managed');
        expect(existsSync(target), 'the Write ran although managed hooks gate it').toBe(false);
        expect(resultOf(s.server, 'w-managed')?.text).toContain('Blocked by the continuity gate (unverified');
      } finally {
        if (s) await endScenario(s);
        rmSync(dir, { recursive: true, force: true });
      }
    },
    SCENARIO_TIMEOUT_MS,
  );
});
