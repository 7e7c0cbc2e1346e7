/**
 * What the end-to-end suites of the agent CLIs that run one binary against a scripted model
 * (Gemini CLI, Qwen Code, Copilot CLI) share: the world a scenario runs in (a HOME with the
 * runtime's user settings, a project set up by the real `continuity init`, the task record, the
 * evidence directories of ./world.ts), the readings of one compaction's ledger records and status,
 * and the path by which only a human approval releases a conflicting change. Each suite's harness
 * adds its binary, its provider's variables and its own tools' call shapes.
 */
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { expect } from 'vitest';
import { PROJECT_BIN } from '../../src/adapters/core/project.js';
import { ATTR_RUNTIME, ATTR_SESSION_ID } from '../../src/otel/semconv.js';
import { boundaryIdsOf, humanApproves, type SessionStatus, sessionRecords, statusOf } from './evidence.js';
import type { OtlpReceiver, ReceivedSpan } from './otlp-receiver.js';
import { cleanEnv, type Run, run } from './processes.js';
import { type TaskValues, taskRecord, taskValues } from './task.js';
import { BIN, continuityCli, evidenceDirs, linkPackageInto, type WorldFiles, worldFiles } from './world.js';

/** The launcher `init --command` writes into the hooks. */
export const LAUNCHER = `node ${BIN}`;

/** What a runtime's harness says of the world it needs. */
export interface AgentWorldSpec {
  /** Names the world's temporary folder and its task (`qwen-e2e`). */
  name: string;
  /** Where the spans go. */
  otlpEndpoint: string;
  /** The runtimes `continuity init <runtime> --command <LAUNCHER>` sets the project up for, in order. */
  inits: readonly string[];
  /** The runtime's user settings: `json` written at `HOME/<path>` (its folder created 0700). */
  settings?: { path: string; json: unknown };
  /** Folders on the agent's PATH after the one with `continuity`, before the runner's PATH. */
  path?: readonly string[];
  /** The agent's variables beyond PATH, HOME, TERM and the `CONTINUITY_*` ones. */
  env: NodeJS.ProcessEnv;
  /**
   * How init finds its hooks' launcher. `command` (default): `--command` with this checkout's bin,
   * `continuity` on PATH. `project`: agent-continuity installed in the project (a copy, as npm
   * installs it) and not on PATH, init run from it without `--command` (the hooks run the
   * project's own installation). `machine`: neither installed nor on PATH, init run without
   * `--command` (the hooks run this checkout's path).
   */
  launcher?: 'command' | 'project' | 'machine';
}

/** One scenario's world, before the runtime's harness adds how its binary is run. */
export interface AgentWorld extends WorldFiles {
  root: string;
  project: string;
  home: string;
  values: TaskValues;
  /** The agent's environment (run the binary with it, plus its provider's URL). */
  env: NodeJS.ProcessEnv;
  /** `continuity …` run by the human in their own terminal. */
  continuity(args: string[], input?: string, env?: NodeJS.ProcessEnv): Promise<Run>;
  /** What the last `init` printed. */
  initOutput: string;
}

/** Creates a world: directories, keys, the runtime's user settings, `continuity init`, the task record. */
export async function agentWorld(spec: AgentWorldSpec): Promise<AgentWorld> {
  const root = mkdtempSync(join(tmpdir(), `${spec.name}-`));
  const project = join(root, 'project');
  const home = join(root, 'home');
  for (const d of [project, home]) mkdirSync(d, { recursive: true, mode: 0o700 });
  const { state, ledger, binDir, continuityEnv } = evidenceDirs(root, spec.otlpEndpoint);
  // The user's settings; the project's settings stay exactly what init wrote.
  if (spec.settings) {
    const file = join(home, spec.settings.path);
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    writeFileSync(file, JSON.stringify(spec.settings.json));
  }
  const launcher = spec.launcher ?? 'command';
  const env = cleanEnv({
    PATH: [...(launcher === 'command' ? [binDir] : []), ...(spec.path ?? []), process.env.PATH ?? ''].join(
      ':',
    ),
    HOME: home,
    TERM: 'dumb',
    ...spec.env,
    ...continuityEnv,
  });
  const humanEnv = cleanEnv({ PATH: env.PATH, HOME: join(root, 'human'), ...continuityEnv });
  const cli = continuityCli(project, humanEnv);
  let initOutput = '';
  if (launcher === 'project') linkPackageInto(project, { copy: true });
  for (const runtime of spec.inits) {
    // With the package in the project, init is run from it (as `npx continuity init` runs it).
    const init =
      launcher === 'project'
        ? await run(join(project, PROJECT_BIN), ['init', runtime], { env, cwd: project })
        : await cli(
            ['init', runtime, ...(launcher === 'command' ? ['--command', LAUNCHER] : [])],
            undefined,
            env,
          );
    if (init.status !== 0) throw new Error(`continuity init ${runtime} failed: ${init.stderr}`);
    initOutput = init.stdout;
  }
  const values = taskValues();
  writeFileSync(
    join(project, '.continuity', 'task.json'),
    `${JSON.stringify({ task: spec.name, decisions: taskRecord(values) }, null, 2)}\n`,
    { mode: 0o600 },
  );
  return {
    root,
    project,
    home,
    values,
    env,
    continuity: cli,
    initOutput,
    ...worldFiles(root, project, { state, ledger }),
  };
}

// ── One compaction's evidence ───────────────────────────────────────────────────────────────────

/** The one session the world's ledger holds records of. */
export function onlySession(w: Pick<WorldFiles, 'ledgerRecords'>): string {
  const ids = [
    ...new Set(
      w
        .ledgerRecords()
        .map((r) => r.sessionId)
        .filter((x) => typeof x === 'string'),
    ),
  ];
  expect(ids).toHaveLength(1);
  return ids[0] as string;
}

/**
 * One boundary of the session, recorded by `runtime`'s adapter (its ids start with `idPrefix`),
 * with its pre snapshot and `restatements` post snapshots, and no missing pre evidence.
 */
export function expectOneBoundary(
  w: Pick<WorldFiles, 'ledgerRecords'>,
  sessionId: string,
  restatements: number,
  runtime: string,
  idPrefix: string,
): string {
  const records = sessionRecords(w.ledgerRecords(), sessionId);
  const ids = boundaryIdsOf(records);
  expect(ids, 'boundaries opened for one compaction').toHaveLength(1);
  const mine = records.filter((r) => r.boundaryId === ids[0]);
  const kinds = mine.map((r) => (r.phase ? `${r.type}:${r.phase}` : r.type));
  expect(kinds.filter((k) => k === 'snapshot:pre')).toHaveLength(1);
  expect(kinds.filter((k) => k === 'snapshot:post')).toHaveLength(restatements);
  expect(kinds).not.toContain('evidence_missing:pre');
  expect(mine.find((r) => r.type === 'boundary')?.runtime).toBe(runtime);
  expect(ids[0]!.startsWith(idPrefix), `boundary id ${ids[0]} starts with ${idPrefix}`).toBe(true);
  return ids[0]!;
}

/**
 * The session's spans at the receiver, having checked that every one naming a runtime names
 * `runtime`; the compaction spans among them (at least one).
 */
export function compactionSpans(receiver: OtlpReceiver, sessionId: string, runtime: string): ReceivedSpan[] {
  const spans = receiver.spans.filter((x) => x.attributes[ATTR_SESSION_ID] === sessionId);
  const runtimes = new Set(spans.map((x) => x.attributes[ATTR_RUNTIME]).filter((r) => r !== undefined));
  expect(runtimes).toEqual(new Set([runtime]));
  const compaction = spans.filter((x) => x.name.startsWith('continuity.compaction'));
  expect(compaction.length).toBeGreaterThan(0);
  return compaction;
}

// ── Only a human approves ───────────────────────────────────────────────────────────────────────

/**
 * A tool call the scripted model makes, in the runtime's own tools: a shell command, a file write,
 * or the restatement of `restate` by the command the context or the gate printed.
 */
export type ScriptedCall =
  | { id: string; command: string }
  | { id: string; path: string; content: string }
  | { id: string; restate: Record<string, unknown> };

/**
 * One resumed run of the agent whose scripted model makes `calls` in turn and then answers, once
 * the run exited 0; resolves with what the model was told as the result of each call, by its id.
 */
export type ResumedTurn<W> = (
  w: W,
  prompt: string,
  calls: readonly ScriptedCall[],
) => Promise<(id: string) => string | undefined>;

/** How a runtime's harness scripts its model and resumes its session, in its own tools' shapes. */
export interface ScriptedAgent<W, S extends { close(): Promise<void> }, T> {
  /** Starts the scripted model server on `steps`. */
  start(steps: T[]): Promise<S>;
  /** Runs the agent in the world against `server`, resuming the session. */
  resume(w: W, server: S, prompt: string): Promise<Run>;
  /** What the model was told as the result of call `id`. */
  resultOf(server: S, id: string): string | undefined;
  shell(id: string, command: string): T;
  writeFile(id: string, path: string, content: string): T;
  restate(id: string, values: Record<string, unknown>): T;
  /** The final answer that ends the run. */
  done: T;
}

/** The {@link ResumedTurn} of a scripted agent. */
export function resumedTurnOf<W, S extends { close(): Promise<void> }, T>(
  agent: ScriptedAgent<W, S, T>,
): ResumedTurn<W> {
  return async (w, prompt, calls) => {
    const steps = calls.map((c) =>
      'command' in c
        ? agent.shell(c.id, c.command)
        : 'restate' in c
          ? agent.restate(c.id, c.restate)
          : agent.writeFile(c.id, c.path, c.content),
    );
    const server = await agent.start([...steps, agent.done]);
    try {
      const r = await agent.resume(w, server, prompt);
      expect(r.status, r.stderr).toBe(0);
      return (id) => agent.resultOf(server, id);
    } finally {
      await server.close();
    }
  };
}

/**
 * With the session `conflicting` over `scope` (from the task's value to `changed`): the agent's own
 * `continuity approve` through its shell is refused by the gate and records nothing; the human's
 * approval in their own terminal lets the next write (`approved.txt`) through, and the session is
 * `approved_change`.
 */
export async function expectOnlyAHumanApproves<W extends AgentWorld>(
  w: W,
  sessionId: string,
  changed: TaskValues,
  turn: ResumedTurn<W>,
): Promise<void> {
  // The agent tries to approve its own change through its shell: the gate refuses it.
  const selfApproval = await turn(w, 'Approve it.', [
    {
      id: 'self-approve',
      command: `continuity approve --session ${sessionId} --decision scope --from '${JSON.stringify(w.values.scope)}' --to '${JSON.stringify(changed.scope)}' --ref self --by agent`,
    },
  ]);
  expect(selfApproval('self-approve')).toContain(
    'Refused by the continuity gate: approvals come from a human',
  );
  expect(w.ledgerRecords().filter((x) => x.type === 'approval')).toHaveLength(0);
  expect((await statusOf(w.continuity, sessionId)).state).toBe('conflicting');

  // The human approves in their own terminal; the next write goes through.
  await humanApproves(w.continuity, sessionId, {
    decision: 'scope',
    from: w.values.scope,
    to: changed.scope,
    ref: 'CHG-1',
  });
  await turn(w, 'Go on.', [{ id: 'w-approved', path: w.file('approved.txt'), content: 'approved\n' }]);
  expect(existsSync(w.file('approved.txt'))).toBe(true);
  expect((await statusOf(w.continuity, sessionId)).state).toBe('approved_change');
}

// ── A dropped decision ──────────────────────────────────────────────────────────────────────────

/**
 * After a compaction of the session whose context the resumed run does not carry: the first write
 * waits for the restatement (the gate's answer names the command), a restatement without
 * `approval_boundary` is `dropped`, and the write after it is blocked; nothing is written and the
 * session stays the one. Resolves with the session's status (its state `dropped`).
 */
export async function expectDroppedDecisionBlocks<W extends AgentWorld>(
  w: W,
  sessionId: string,
  turn: ResumedTurn<W>,
): Promise<SessionStatus> {
  const { approval_boundary: _left, ...partial } = w.values;
  const result = await turn(w, 'Go on.', [
    { id: 'w-first', path: w.file('first.txt'), content: 'before restating\n' },
    { id: 'restate', restate: partial },
    { id: 'w-after', path: w.file('after.txt'), content: 'after\n' },
  ]);
  expect(result('w-first')).toContain('(unverified: post_observation_missing)');
  expect(result('restate')).toContain('dropped (absent_after_compaction)');
  expect(result('w-after')).toContain('Blocked by the continuity gate');
  expect(existsSync(w.file('first.txt'))).toBe(false);
  expect(existsSync(w.file('after.txt'))).toBe(false);
  expect(onlySession(w)).toBe(sessionId);
  const st = await statusOf(w.continuity, sessionId);
  expect(st.state).toBe('dropped');
  return st;
}
