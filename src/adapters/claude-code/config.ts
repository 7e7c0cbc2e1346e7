/**
 * The adapter's configuration: `.continuity/config.json` in the project (optional), overridden by
 * `CONTINUITY_*` environment variables. Claude Code removes `OTEL_*` variables from hook processes,
 * so the exporter has its own settings (`src/export/config.ts`, shared with the recording commands).
 *
 * Lean (the gate loads it): no zod, and nothing of the exporter. The file's `export` section is
 * kept as read and resolved only by the recording hooks that export (`./export.ts`), so the
 * gate's fast path never loads `src/export`. A bad value never stops a hook: it is reported as a
 * warning (one stderr line) and the default is used instead, because a hook must never break the
 * agent.
 *
 * The gate's policy lives here too: what the gate answers for each continuity state. A verdict is
 * `allow` (no objection: Claude Code's normal permission flow decides; the gate never answers
 * `permissionDecision: "allow"` and so never bypasses the user's own permission rules), `ask`
 * (Claude Code asks the human before the tool runs) or `deny` (the tool does not run and the
 * agent reads the reason). Keys are a state (`conflicting`) or a state and reason
 * (`unverified/pre_snapshot_missing`); the more specific key wins.
 */
import { isAbsolute, join, resolve } from 'node:path';
import { ALL_REASONS, CONTINUITY_STATES, type ContinuityState } from '../../classify/states.js';
import type { ExportFileSection } from '../../export/config.js';
import { isRecord, readJsonFile } from './state.js';

// ── Gate policy ───────────────────────────────────────────────────────────────────────────────
/** What the gate answers for a tool call. */
export const GATE_VERDICTS = ['allow', 'ask', 'deny'] as const;
export type GateVerdict = (typeof GATE_VERDICTS)[number];

/** State (or `state/reason`) → verdict. */
export type GatePolicy = Readonly<Record<string, GateVerdict>>;

/**
 * The default policy follows the five states' actions: `preserved` (continue) and
 * `approved_change` (continue with audit) pass; `unverified` (re-observe), `dropped` (pause and
 * restore) and `conflicting` (stop and ask a human) deny until the agent restates its decisions or
 * a human approves the change. One exception asks instead: when no snapshot was taken before
 * compaction, no re-observation can ever verify the boundary, so a human confirms each write
 * until the next boundary is captured properly.
 */
export const DEFAULT_GATE_POLICY: GatePolicy = Object.freeze({
  preserved: 'allow',
  approved_change: 'allow',
  unverified: 'deny',
  dropped: 'deny',
  conflicting: 'deny',
  'unverified/pre_snapshot_missing': 'ask',
});

/** The tools the gate checks by default: those that change files or run commands. */
export const DEFAULT_GATED_TOOLS: readonly string[] = Object.freeze([
  'Edit',
  'Write',
  'MultiEdit',
  'NotebookEdit',
  'Bash',
]);

/** True when `key` is a valid policy key: a state, or `state/reason` with a known reason. */
export function isPolicyKey(key: string): boolean {
  const slash = key.indexOf('/');
  const state = slash === -1 ? key : key.slice(0, slash);
  if (!(CONTINUITY_STATES as readonly string[]).includes(state)) return false;
  return slash === -1 || (ALL_REASONS as readonly string[]).includes(key.slice(slash + 1));
}

/** True when `value` is a gate verdict. */
export function isGateVerdict(value: unknown): value is GateVerdict {
  return typeof value === 'string' && (GATE_VERDICTS as readonly string[]).includes(value);
}

/** The verdict for a boundary in `state` with `reason`: `state/reason`, else `state`, else the default. */
export function policyVerdict(policy: GatePolicy, state: ContinuityState, reason: string): GateVerdict {
  return (
    policy[`${state}/${reason}`] ??
    policy[state] ??
    DEFAULT_GATE_POLICY[`${state}/${reason}`] ??
    DEFAULT_GATE_POLICY[state] ??
    'deny'
  );
}

// ── Configuration ─────────────────────────────────────────────────────────────────────────────
/** The project-relative directory holding the task record and the configuration. */
export const PROJECT_STATE_DIR = '.continuity';
/** Default task record, relative to the project directory. */
export const DEFAULT_TASK_RECORD = `${PROJECT_STATE_DIR}/task.json`;
/** Default configuration file, relative to the project directory. */
export const DEFAULT_CONFIG_FILE = `${PROJECT_STATE_DIR}/config.json`;
/** Default OTLP/HTTP base endpoint of the hooks: a local `continuity serve`. */
export const DEFAULT_OTLP_ENDPOINT = 'http://127.0.0.1:4318';
/** The runtime name written on every compaction span and ledger record, and the spans' `service.name`. */
export const RUNTIME = 'claude-code';

/**
 * Environment variables read by the adapter, defined once. The exporter's (`CONTINUITY_EXPORT`,
 * `CONTINUITY_OTLP_*`) are `EXPORT_ENV` in `src/export/config.ts`.
 */
export const ENV = {
  config: 'CONTINUITY_CONFIG',
  taskRecord: 'CONTINUITY_TASK_RECORD',
  gateTools: 'CONTINUITY_GATE_TOOLS',
  gatePolicy: 'CONTINUITY_GATE_POLICY',
  projectDir: 'CLAUDE_PROJECT_DIR',
} as const;

/** Write gate settings. */
export interface GateConfig {
  /** Tool names the gate checks. Default Edit, Write, MultiEdit, NotebookEdit, Bash. */
  tools: readonly string[];
  /** State → verdict overrides; unlisted states use {@link DEFAULT_GATE_POLICY}. Default none. */
  policy: GatePolicy;
  /**
   * Guard the continuity files: deny writes to the ledger, keys and state directory, and ask the
   * human before the agent writes `.continuity/`. Default true.
   */
  protectContinuityFiles: boolean;
}

/** The whole adapter configuration, resolved. */
export interface AdapterConfig {
  /** Absolute project directory. */
  projectDir: string;
  /** Absolute path of the task record. Default `<project>/.continuity/task.json`. */
  taskRecordPath: string;
  gate: GateConfig;
  /**
   * The configuration file's `export` section as read (unvalidated; empty without a file),
   * resolved with the `CONTINUITY_OTLP_*` variables by `adapterExportConfig` in `./export.ts`
   * when a hook exports. Default: export on, to {@link DEFAULT_OTLP_ENDPOINT}.
   */
  exportFile: ExportFileSection;
}

/** A resolved configuration and what was wrong with the input (each already replaced by a default). */
export interface LoadedConfig {
  config: AdapterConfig;
  warnings: string[];
}

function parseList(text: string): string[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

function parsePairs(text: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const part of parseList(text)) {
    const eq = part.indexOf('=');
    if (eq > 0) out.push([part.slice(0, eq).trim(), part.slice(eq + 1).trim()]);
  }
  return out;
}

function readPolicy(raw: unknown, source: string, warnings: string[]): Record<string, GateVerdict> {
  const policy: Record<string, GateVerdict> = {};
  const entries: Array<[string, unknown]> = isRecord(raw)
    ? Object.entries(raw)
    : typeof raw === 'string'
      ? parsePairs(raw)
      : [];
  if (raw !== undefined && !isRecord(raw) && typeof raw !== 'string') {
    warnings.push(`${source}: expected an object of state → allow|ask|deny; using the default policy`);
  }
  for (const [key, value] of entries) {
    if (!isPolicyKey(key)) {
      warnings.push(`${source}.${key}: unknown state (or state/reason); ignored`);
    } else if (!isGateVerdict(value)) {
      warnings.push(`${source}.${key}: expected allow, ask or deny; ignored`);
    } else {
      policy[key] = value;
    }
  }
  return policy;
}

function readTools(raw: unknown, source: string, warnings: string[]): readonly string[] | undefined {
  if (raw === undefined) return undefined;
  const list = typeof raw === 'string' ? parseList(raw) : raw;
  if (
    Array.isArray(list) &&
    list.every((t) => typeof t === 'string' && /^[A-Za-z0-9_.*:-]{1,128}$/.test(t))
  ) {
    return list as string[];
  }
  warnings.push(`${source}: expected a list of tool names; using the default tools`);
  return undefined;
}

/**
 * The project directory of a hook or command: `CLAUDE_PROJECT_DIR` (set by Claude Code for
 * hooks), else the hook payload's `cwd`, else the process's working directory.
 */
export function resolveProjectDir(env: NodeJS.ProcessEnv, payloadCwd?: string): string {
  const fromEnv = env[ENV.projectDir];
  if (fromEnv && isAbsolute(fromEnv)) return resolve(fromEnv);
  if (payloadCwd && isAbsolute(payloadCwd)) return resolve(payloadCwd);
  return process.cwd();
}

/**
 * Loads the configuration for `projectDir`: the file named by `CONTINUITY_CONFIG`, else
 * `<project>/.continuity/config.json` (optional), then the `CONTINUITY_*` overrides.
 */
export function loadConfig(projectDir: string, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  const warnings: string[] = [];
  const file = env[ENV.config] ? resolve(env[ENV.config]!) : join(projectDir, DEFAULT_CONFIG_FILE);
  const raw = readJsonFile(file);
  const fileLabel = env[ENV.config] ? ENV.config : DEFAULT_CONFIG_FILE;
  let doc: Record<string, unknown> = {};
  if (raw !== undefined) {
    if (isRecord(raw)) doc = raw;
    else warnings.push(`${fileLabel}: expected a JSON object; using defaults`);
  }
  const gateRaw = isRecord(doc.gate) ? doc.gate : {};
  const exportRaw = isRecord(doc.export) ? doc.export : {};

  // Task record
  let taskRecordPath = join(projectDir, DEFAULT_TASK_RECORD);
  const taskRaw = env[ENV.taskRecord] ?? doc.taskRecord;
  if (typeof taskRaw === 'string' && taskRaw.length > 0) taskRecordPath = resolve(projectDir, taskRaw);
  else if (taskRaw !== undefined)
    warnings.push(`${fileLabel}.taskRecord: expected a path; using the default`);

  // Gate
  const tools =
    readTools(env[ENV.gateTools], ENV.gateTools, warnings) ??
    readTools(gateRaw.tools, `${fileLabel}.gate.tools`, warnings) ??
    DEFAULT_GATED_TOOLS;
  const policy = {
    ...readPolicy(gateRaw.policy, `${fileLabel}.gate.policy`, warnings),
    ...(env[ENV.gatePolicy] !== undefined ? readPolicy(env[ENV.gatePolicy], ENV.gatePolicy, warnings) : {}),
  };
  let protectContinuityFiles = true;
  if (typeof gateRaw.protectContinuityFiles === 'boolean') {
    protectContinuityFiles = gateRaw.protectContinuityFiles;
  } else if (gateRaw.protectContinuityFiles !== undefined) {
    warnings.push(`${fileLabel}.gate.protectContinuityFiles: expected true or false; using true`);
  }

  return {
    config: {
      projectDir,
      taskRecordPath,
      gate: { tools, policy, protectContinuityFiles },
      exportFile: { values: exportRaw, label: `${fileLabel}.export` },
    },
    warnings,
  };
}
