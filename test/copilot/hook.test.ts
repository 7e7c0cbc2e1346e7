/**
 * `continuity hook copilot` through real processes of the CLI, fed the payloads Copilot CLI
 * 1.0.102 sent in test/copilot-e2e and the session directory as Copilot had written it at each
 * hook (`~/.copilot/session-state/<id>/`: `events.jsonl`, `checkpoints/`), without the binary.
 *
 * The order recorded on the real binary: PreCompact; `session.compaction_start` in the event log;
 * the agent works on while the summary is made (its context intact); Copilot applies the
 * compaction at the next turn and writes the checkpoint file at once, but its event log only on a
 * debounce, so the next tool call's preToolUse hook can run before the log holds
 * `session.compaction_complete` (seen: checkpoint 14.112, record stamped 14.161, hook 14.246, log
 * on disk 14.352). A gate that read only the log let that first write through.
 */
import { existsSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  ledgerRecords,
  makeWorld,
  PAYMENTS_DECISIONS,
  type Receiver,
  type Run,
  startReceiver,
  type World,
  writeTaskRecord,
} from '../claude-code/harness.js';
import {
  copilotHook,
  copilotSessionDir,
  type GateReply,
  gateReply,
  writeCopilotCheckpoint,
  writeToolCall,
} from './session.js';

const SESSION = '0c579f57-5803-4fab-a02e-9bb5cdcb3e7a';

let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
});

let world: World;
beforeEach(() => {
  world = makeWorld(receiver.endpoint);
  writeTaskRecord(world, PAYMENTS_DECISIONS);
});
afterEach(() => world.dispose());

/** Copilot's session directory in the world's home. */
function sessionDir(): string {
  return copilotSessionDir(world, SESSION);
}

/** An event log line as Copilot writes it (data trimmed to the fields read, plus a secret never read). */
function event(type: string, data: Record<string, unknown>): string {
  return `${JSON.stringify({ type, data, id: 'e', timestamp: new Date().toISOString(), parentId: 'p' })}\n`;
}

const START = event('session.compaction_start', {
  compactionAttemptId: 'a1',
  currentTokens: 17034,
  tokenLimit: 20000,
  trigger: 'threshold',
});

/** Copilot's log as it stood: what was flushed so far. */
function writeLog(...lines: string[]): void {
  writeFileSync(join(sessionDir(), 'events.jsonl'), lines.join(''));
}

function writeCheckpoint(name = '001-session-0c579f57.md'): string {
  return writeCopilotCheckpoint(world, SESSION, name);
}

function hook(event: string, extra: Record<string, unknown> = {}): Promise<Run> {
  return copilotHook(world, SESSION, 'copilot', event, extra, world.env);
}

function preCompact(): Promise<Run> {
  return hook('PreCompact', {
    transcript_path: join(sessionDir(), 'events.jsonl'),
    trigger: 'auto',
    custom_instructions: '',
  });
}

async function write(file: string): Promise<GateReply> {
  return gateReply(await hook('PreToolUse', writeToolCall(world, file)));
}

function boundaries(): string[] {
  if (!existsSync(world.ledger)) return [];
  return [
    ...new Set(
      ledgerRecords(world)
        .map((r) => r.boundaryId)
        .filter((b): b is string => typeof b === 'string'),
    ),
  ];
}

describe('Copilot CLI: a compaction confirmed by the next hook', () => {
  it('holds the first write after Copilot applied a compaction whose log record is not yet on disk', async () => {
    writeLog();
    expect((await preCompact()).status).toBe(0);
    // The summary is being made: the agent's context is intact and its writes go through.
    writeLog(START);
    expect((await write('during.txt')).decision).toBe('allow');
    // Applied: the checkpoint is written, the log's compaction_complete is not flushed yet.
    writeCheckpoint();
    const first = await write('first.txt');
    expect(first.decision).toBe('deny');
    expect(first.reason).toContain('(unverified: post_observation_missing)');
    expect(first.reason).toMatch(/observe --session \S+ --decisions - <<'EOF'/);
    expect(boundaries()).toHaveLength(1);
    expect(boundaries()[0]).toMatch(/^cp-/);
    // The log catches up: the same compaction, no second boundary.
    writeLog(START, event('session.compaction_complete', { success: true, outcome: 'applied' }));
    expect((await write('second.txt')).decision).toBe('deny');
    expect(boundaries()).toHaveLength(1);
  });

  it('a compaction cancelled when the session ended (no checkpoint, outcome cancelled) opens no boundary', async () => {
    writeLog();
    await preCompact();
    writeLog(
      START,
      event('session.compaction_complete', {
        success: false,
        error: 'Compaction Cancelled',
        outcome: 'cancelled',
        outcomeReason: 'owner_cancelled',
      }),
    );
    expect((await write('after.txt')).decision).toBe('allow');
    expect(boundaries()).toHaveLength(0);
  });

  it('a checkpoint from before the pre, a link in its place, or the index is no evidence', async () => {
    const old = writeCheckpoint('001-session-old.md');
    utimesSync(old, new Date(Date.now() - 3_600_000), new Date(Date.now() - 3_600_000));
    writeLog();
    await preCompact();
    writeLog(START);
    writeFileSync(join(sessionDir(), 'checkpoints', 'index.md'), '# Checkpoint History\n');
    symlinkSync(old, join(sessionDir(), 'checkpoints', '002-session-link.md'));
    expect((await write('a.txt')).decision).toBe('allow');
    expect(boundaries()).toHaveLength(0);
  });
});
