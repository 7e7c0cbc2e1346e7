/**
 * The adapter's derived per-session state, kept so the write gate decides with one small file
 * read instead of loading the ledger. The ledger stays the evidence: the gate cache is rebuilt
 * from it whenever it is missing or says a write must wait (so a human approval recorded in the
 * ledger by `continuity approve` is seen at the next tool call).
 *
 * Lean (the gate imports it). Values are never here: names, digests, ids, states and times only.
 */
import { CONTINUITY_STATES, type ContinuityState } from '../../classify/states.js';
import { isRecord, readJsonFile, readTextFile, writeFileAtomic } from './fsio.js';
import type { BoundaryView } from './messages.js';
import { activityFile, gateFile, projectFile } from './paths.js';

/** The latest boundary of a session as the gate sees it. */
export interface GateBoundary {
  id: string;
  state: ContinuityState;
  reason: string;
  primaryDecision: string | null;
  decisionNames: string[];
  /** When the compaction finished (PostCompact), if reported. */
  compactedAt?: string;
  /** Why the pre snapshot is missing, if it is. */
  evidenceMissing?: string;
  change?: { decision: string; fromDigest: string; toDigest: string };
  approvalRefs?: string[];
  /** True once a post snapshot (a restatement) exists for the boundary. */
  observed?: boolean;
}

/** The gate cache of one session. `boundary: null` means no compaction happened in the session. */
export interface GateState {
  v: 1;
  sessionId: string;
  boundary: GateBoundary | null;
  updatedAt: string;
}

/** True for the states in which the gate has no objection. */
export function isHealthy(state: ContinuityState): boolean {
  return state === 'preserved' || state === 'approved_change';
}

function isStringArray(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((x) => typeof x === 'string');
}

/** Reads a session's gate cache; `undefined` when missing, unreadable or for another session. */
export function readGateState(
  sessionId: string,
  env: NodeJS.ProcessEnv = process.env,
): GateState | undefined {
  const raw = readJsonFile(gateFile(sessionId, env));
  if (!isRecord(raw) || raw.v !== 1 || raw.sessionId !== sessionId) return undefined;
  if (raw.boundary === null) return raw as unknown as GateState;
  const b = raw.boundary;
  if (
    !isRecord(b) ||
    typeof b.id !== 'string' ||
    !(CONTINUITY_STATES as readonly unknown[]).includes(b.state) ||
    typeof b.reason !== 'string' ||
    !(b.primaryDecision === null || typeof b.primaryDecision === 'string') ||
    !isStringArray(b.decisionNames)
  ) {
    return undefined;
  }
  return raw as unknown as GateState;
}

/** Writes a session's gate cache (atomic, 0600). */
export function writeGateState(
  sessionId: string,
  boundary: GateBoundary | null,
  now: string,
  env: NodeJS.ProcessEnv = process.env,
): GateState {
  const state: GateState = { v: 1, sessionId, boundary, updatedAt: now };
  writeFileAtomic(gateFile(sessionId, env), `${JSON.stringify(state)}\n`);
  return state;
}

/** The view the messages need, from a cached boundary. */
export function boundaryView(sessionId: string, b: GateBoundary): BoundaryView {
  const view: BoundaryView = {
    sessionId,
    state: b.state,
    reason: b.reason,
    primaryDecision: b.primaryDecision,
    decisionNames: b.decisionNames,
  };
  if (b.evidenceMissing) view.evidenceMissing = b.evidenceMissing;
  if (b.change) view.change = b.change;
  if (b.approvalRefs) view.approvalRefs = b.approvalRefs;
  return view;
}

/** Reads a session's latest recorded activity state. */
export function readActivity(sessionId: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  return readTextFile(activityFile(sessionId, env))?.trim();
}

/** Records a session's latest activity state. */
export function writeActivity(sessionId: string, state: string, env: NodeJS.ProcessEnv = process.env): void {
  writeFileAtomic(activityFile(sessionId, env), `${state}\n`);
}

/** The current session of a project directory, as written by the hooks. */
export interface ProjectSession {
  v: 1;
  sessionId: string;
  updatedAt: string;
}

/** Records `sessionId` as the current session of `projectDir` (what `continuity observe` defaults to). */
export function writeProjectSession(
  projectDir: string,
  sessionId: string,
  now: string,
  env: NodeJS.ProcessEnv = process.env,
): void {
  const doc: ProjectSession = { v: 1, sessionId, updatedAt: now };
  writeFileAtomic(projectFile(projectDir, env), `${JSON.stringify(doc)}\n`);
}

/** Reads the current session of `projectDir`, if a hook recorded one. */
export function readProjectSession(
  projectDir: string,
  env: NodeJS.ProcessEnv = process.env,
): ProjectSession | undefined {
  const raw = readJsonFile(projectFile(projectDir, env));
  if (!isRecord(raw) || raw.v !== 1 || typeof raw.sessionId !== 'string') return undefined;
  return raw as unknown as ProjectSession;
}
