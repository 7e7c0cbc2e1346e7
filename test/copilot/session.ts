/**
 * Copilot CLI's side of a hook test without the binary: its session directory in the world's
 * home, its checkpoint files, and hook invocations with the payloads Copilot 1.0.102 sends (to
 * `continuity hook copilot`, or to the Claude Code hooks it also runs from .claude/settings.json).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { type Run, runCli, type World } from '../claude-code/harness.js';

/** The hook command a test runs: Copilot's own, or the Claude Code one Copilot also loads. */
export type HookRuntime = 'claude-code' | 'copilot';

/** The gate's answer as a hook printed it (`allow` when it printed nothing). */
export interface GateReply {
  decision: string;
  reason: string;
}

/** Copilot's session directory in the world's home, with its `checkpoints/`. */
export function copilotSessionDir(world: World, sessionId: string): string {
  const dir = join(world.root, 'home', '.copilot', 'session-state', sessionId);
  mkdirSync(join(dir, 'checkpoints'), { recursive: true });
  return dir;
}

/** A checkpoint file as Copilot writes it when it applies a compaction (the summary, never read). */
export function writeCopilotCheckpoint(world: World, sessionId: string, name: string): string {
  const path = join(copilotSessionDir(world, sessionId), 'checkpoints', name);
  writeFileSync(path, '## Summary\nSECRET SUMMARY\n');
  return path;
}

/** One hook invocation of `runtime` with a payload shaped as Copilot 1.0.102 sends it. */
export function copilotHook(
  world: World,
  sessionId: string,
  runtime: HookRuntime,
  event: string,
  extra: Record<string, unknown>,
  env: NodeJS.ProcessEnv,
): Promise<Run> {
  return runCli(['hook', runtime], {
    input: JSON.stringify({
      hook_event_name: event,
      session_id: sessionId,
      timestamp: new Date().toISOString(),
      cwd: world.project,
      ...extra,
    }),
    env,
    cwd: world.project,
  });
}

/** Copilot's `create` as its hooks see it: a `Write` with its target in `tool_input.path`. */
export function writeToolCall(world: World, file: string): Record<string, unknown> {
  return { tool_name: 'Write', tool_input: { path: join(world.project, file), file_text: 'x\n' } };
}

/** The gate's answer in a hook run's output. */
export function gateReply(r: Run): GateReply {
  expect(r.status).toBe(0);
  if (r.stdout.trim() === '') return { decision: 'allow', reason: '' };
  const out = JSON.parse(r.stdout).hookSpecificOutput;
  return { decision: out.permissionDecision, reason: out.permissionDecisionReason };
}
