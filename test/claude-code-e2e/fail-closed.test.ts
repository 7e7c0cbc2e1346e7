/**
 * The hook path on the real Claude Code binaries (issue 26), where only the runtime can say what
 * happens: whether `onFailure: "block"` (written by `continuity init claude-code` on the gate)
 * blocks a tool whose gate hook hangs past its timeout (2.1.328); whether a Write or Edit through
 * a hard link with a harmless name reaches the task record's directory (2.1.328); and whether a
 * project slash command's shell command (``!`…` ``), which 2.1.332 runs through the
 * `PreSkillShellCommand` hook instead of `PreToolUse`, can write while writes are held.
 */
import { existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureNpmPeer, PEERS } from '../support/peers.js';
import {
  bash,
  deniedIds,
  edit,
  INSTALL_TIMEOUT_MS,
  resultOf,
  SCENARIO_TIMEOUT_MS,
  type Suite,
  useSuite,
  write,
} from './harness.js';
import {
  compactManually,
  endScenario,
  resumeWith,
  type Scenario,
  scenario,
  sessionOf,
  startSession,
} from './scenario.js';

const suite = useSuite();

interface HookHandler {
  command: string;
  timeout: number;
  onFailure?: string;
}

type Settings = { hooks: Record<string, Array<{ hooks: HookHandler[] }>> };

function settingsOf(s: Scenario): Settings {
  return JSON.parse(readFileSync(s.world.file('.claude/settings.json'), 'utf8')) as Settings;
}

/** Makes the gate's hook hang past its timeout (a FIFO read, a stuck lock), keeping or dropping `onFailure`. */
function hangTheGate(s: Scenario, keepOnFailure: boolean): void {
  const settings = settingsOf(s);
  const gate = settings.hooks.PreToolUse![0]!.hooks[0]!;
  expect(gate.onFailure, 'init writes onFailure: "block" on the gate').toBe('block');
  gate.command = `sleep 30; ${gate.command}`;
  if (!keepOnFailure) delete gate.onFailure;
  writeFileSync(s.world.file('.claude/settings.json'), `${JSON.stringify(settings, null, 2)}\n`);
}

describe.concurrent('onFailure: "block" on the gate (Claude Code 2.1.328)', () => {
  it(
    'a gate hook that hangs past its timeout blocks the Write; without onFailure the same hang lets it run',
    async () => {
      for (const keep of [true, false]) {
        const s = await scenario(suite());
        try {
          hangTheGate(s, keep);
          const target = s.world.file(`hung-${keep}.txt`);
          s.server.push([write('w-hung', target, 'written\n')], 'Done.');
          const r = await s.world.claude(s.server, ['-p', 'write the file']);
          sessionOf(r);
          if (keep) {
            expect(existsSync(target), 'the Write ran although its gate hook never answered').toBe(false);
            expect(resultOf(s.server, 'w-hung')?.isError).toBe(true);
          } else {
            // The oracle: the same hang without the field fails open, so the field is what blocks.
            expect(existsSync(target)).toBe(true);
          }
        } finally {
          await endScenario(s);
        }
      }
    },
    SCENARIO_TIMEOUT_MS * 2,
  );
});

describe.concurrent('hard links to protected files (Claude Code 2.1.328)', () => {
  it(
    'a Write and an Edit through a harmless-named hard link to .continuity/config.json are stopped; the configuration is unchanged',
    async () => {
      const s = await scenario(suite());
      try {
        const config = s.world.file('.continuity/config.json');
        writeFileSync(config, '{}\n');
        await startSession(s);
        const alias = s.world.file('notes.json');
        linkSync(config, alias);
        s.server.push(
          [{ tool: 'Read', id: 'r-alias', input: { file_path: alias } }],
          [edit('e-alias', alias, '{}', '{"gate":{"tools":["None"]}}')],
          [write('w-alias', alias, '{"gate":{"policy":{"conflicting":"allow"}}}\n')],
          'Done.',
        );
        const r = await s.world.claude(s.server, ['-p', 'tidy the notes'], {
          allowedTools: 'Bash Edit Write Read',
        });
        sessionOf(r);
        expect(deniedIds(r)).toEqual(['e-alias', 'w-alias']);
        for (const id of ['e-alias', 'w-alias']) expect(resultOf(s.server, id)?.text).toContain('hard link');
        expect(readFileSync(config, 'utf8')).toBe('{}\n');
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'while writes are held after a compaction, a Write through a hard link to the task record does not run',
    async () => {
      const s = await scenario(suite());
      try {
        const task = s.world.file('.continuity/task.json');
        const before = readFileSync(task, 'utf8');
        const sessionId = await startSession(s);
        await compactManually(s, sessionId, 'keep the plan');
        const alias = s.world.file('plan.json');
        linkSync(task, alias);
        const r = await resumeWith(s, sessionId, [[write('w-task-alias', alias, '{"decisions":{}}\n')]]);
        expect(deniedIds(r)).toContain('w-task-alias');
        expect(readFileSync(task, 'utf8')).toBe(before);
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );
});

describe.concurrent('a relaxing configuration the agent writes (Claude Code 2.1.328)', () => {
  it(
    "the agent's Bash writes the gate off through a spelling no guard reads; after the compaction its Write stays blocked, and the change is evidence",
    async () => {
      const s = await scenario(suite());
      try {
        const config = s.world.file('.continuity/config.json');
        const sessionId = await startSession(s);
        // While no boundary is held the Bash runs: the path is built at run time, so neither the
        // gate's text guard nor the runtime's rules on .continuity/ see it (the oracle that it ran).
        const spelled = `python3 -c "open('.contin'+'uity/config.json','w').write('{\\"gate\\":{\\"tools\\":[\\"None\\"],\\"policy\\":{\\"unverified\\":\\"allow\\"}}}')"`;
        const relaxed = await resumeWith(s, sessionId, [[bash('b-relax', spelled)]]);
        expect(deniedIds(relaxed)).toEqual([]);
        expect(JSON.parse(readFileSync(config, 'utf8'))).toEqual({
          gate: { tools: ['None'], policy: { unverified: 'allow' } },
        });
        await compactManually(s, sessionId, 'keep the plan');
        const target = s.world.file('after-relax.txt');
        const held = await resumeWith(s, sessionId, [[write('w-held', target, 'x\n')]]);
        expect(deniedIds(held)).toContain('w-held');
        expect(existsSync(target), 'the Write ran under an unsealed configuration').toBe(false);
        expect(resultOf(s.server, 'w-held')?.text).toContain('config_changed');
        const reasons = s.world
          .ledgerRecords()
          .filter((r) => r.sessionId === sessionId && r.type === 'evidence_missing')
          .map((r) => r.reason);
        expect(reasons).toContain('config_changed');
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );
});

describe.concurrent("PreSkillShellCommand: a project command's shell command (Claude Code 2.1.332)", () => {
  let claude332 = '';
  beforeAll(async () => {
    claude332 = (await ensureNpmPeer(PEERS.claudeCodeSkillShell)).bin;
  }, INSTALL_TIMEOUT_MS);

  it(
    'runs while no boundary is held, and cannot write while writes are held',
    async () => {
      const on332: Suite = { ...suite(), claude: claude332 };
      const s = await scenario(on332);
      try {
        mkdirSync(s.world.file('.claude/commands'), { recursive: true });
        writeFileSync(
          s.world.file('.claude/commands/mkfile.md'),
          '---\ndescription: writes a file\nallowed-tools: Bash(touch:*)\n---\n!`touch skill-wrote.txt`\n\nSay done.\n',
        );
        const marker = s.world.file('skill-wrote.txt');
        // No compaction yet: the command's shell runs (the oracle that it runs at all).
        s.server.push('Done.');
        const first = await s.world.claude(s.server, ['-p', '/mkfile']);
        const sessionId = sessionOf(first);
        expect(existsSync(marker), 'the project command did not run its shell command').toBe(true);
        rmSync(marker);
        await compactManually(s, sessionId, 'keep the plan');
        s.server.push('Done.');
        const held = await s.world.claude(s.server, ['-p', '/mkfile', '--resume', sessionId]);
        expect(held.code, held.stderr).toBe(0);
        expect(existsSync(marker), 'the command wrote while writes were held').toBe(false);
      } finally {
        await endScenario(s);
      }
    },
    SCENARIO_TIMEOUT_MS,
  );
});
