/**
 * The environment and the configuration of a runtime adapter, each resolved once at the edge
 * into one typed object, and the gate's policy.
 *
 * **Environment.** A hook process or command calls {@link resolveEnv} once with the process
 * environment; everything below it takes the {@link ContinuityEnv} and never reads
 * `process.env`. It holds the resolved state directory and ledger path, the key files, the
 * overrides, and a frozen copy of the few variables the shared loaders read (`vars`: the
 * `CONTINUITY_*` variables, `XDG_STATE_HOME`, `HOME`), so the exporter, the key loaders and the
 * ledger see exactly what was resolved at the start.
 *
 * **Configuration.** `.continuity/config.json` in the project (optional), overridden by
 * `CONTINUITY_*` variables. A bad value never stops a hook: it becomes a warning (one stderr line)
 * and the default is used, because a hook must never break the agent.
 *
 * **Policy.** What the gate answers for each continuity state: `allow` (no objection: the
 * runtime's own permission flow decides), `ask` (a human confirms) or `deny`. Keys are a state
 * (`conflicting`) or a state and reason (`unverified/pre_snapshot_missing`); the more specific
 * key wins.
 *
 * Lean on purpose: the write gate loads it on every tool call (node built-ins and a few tiny modules).
 */
import { isAbsolute, join, resolve, sep } from 'node:path';
import { approverRootsOf } from '../../authority/patterns.js';
import { ALL_REASONS, CONTINUITY_STATES, type ContinuityState } from '../../classify/states.js';
import type { ExportSpan } from '../../export/spans.js';
import { defaultStateDir } from '../../ledger/state-home.js';
import { type GateSettings, type Relaxation, relaxationsOf, tightenGate } from './config-relax.js';
import type { GateVerdict } from './events.js';
import { isRecord, readJsonState } from './state.js';

// ── Environment ───────────────────────────────────────────────────────────────────────────────
/** Environment variables read by every adapter, defined once (the exporter's are in `src/export/config.ts`). */
export const ENV = {
  stateDir: 'CONTINUITY_STATE_DIR',
  ledger: 'CONTINUITY_LEDGER',
  digestKeyFile: 'CONTINUITY_DIGEST_KEY_FILE',
  chainKeyFile: 'CONTINUITY_CHAIN_KEY_FILE',
  config: 'CONTINUITY_CONFIG',
  taskRecord: 'CONTINUITY_TASK_RECORD',
  gateTools: 'CONTINUITY_GATE_TOOLS',
  gatePolicy: 'CONTINUITY_GATE_POLICY',
  gateUnknownTools: 'CONTINUITY_GATE_UNKNOWN_TOOLS',
  hookDeadline: 'CONTINUITY_HOOK_DEADLINE_MS',
  approverKeys: 'CONTINUITY_APPROVER_KEYS',
} as const;

/** Default most milliseconds a recording hook may take. */
export const DEFAULT_HOOK_DEADLINE_MS = 8000;

/** What a run will do, as far as the environment decides it: read once, passed down. */
export interface ContinuityEnv {
  /** The state root (`CONTINUITY_STATE_DIR`, else `$XDG_STATE_HOME/agent-continuity`, else `~/.local/state/agent-continuity`). */
  readonly stateRoot: string;
  /** The ledger file (`CONTINUITY_LEDGER`, else `ledger.jsonl` in the XDG state directory). */
  readonly ledgerPath: string;
  /** True when the ledger path was set explicitly (it may then lie outside the state root). */
  readonly ledgerExplicit: boolean;
  readonly digestKeyFile?: string;
  readonly chainKeyFile?: string;
  /** `CONTINUITY_CONFIG`: the configuration file, absolute. */
  readonly configFile?: string;
  /** `CONTINUITY_TASK_RECORD`, as given (resolved against the project later). */
  readonly taskRecord?: string;
  readonly gateTools?: string;
  readonly gatePolicy?: string;
  readonly gateUnknownTools?: string;
  /** Most milliseconds a recording hook may take. */
  readonly hookDeadlineMs: number;
  /**
   * `CONTINUITY_APPROVER_KEYS`: the key ids an approver key chain must start with to be trusted
   * (../../authority/trust.ts `approverRootsOf`). Empty: the ledger's own pin decides.
   */
  readonly approverRoots: readonly string[];
  /** The variables the shared loaders (exporter, key files, ledger path) read, frozen. */
  readonly vars: Readonly<NodeJS.ProcessEnv>;
}

const PASSED = /^(?:CONTINUITY_|XDG_STATE_HOME$|HOME$)/;

/** Resolves the environment once. `env` is normally `process.env`; nothing else reads it. */
export function resolveEnv(env: NodeJS.ProcessEnv): ContinuityEnv {
  const vars: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && PASSED.test(k)) vars[k] = v;
  // The ledger's own rule: a relative XDG_STATE_HOME or HOME is ignored.
  const stateBase = defaultStateDir(env);
  const stateRoot = env[ENV.stateDir] ? resolve(env[ENV.stateDir]!) : stateBase;
  const ledgerExplicit = Boolean(env[ENV.ledger]);
  const deadline = Number(env[ENV.hookDeadline]);
  const opt = (name: string) => (env[name] ? { value: env[name]! } : undefined);
  return Object.freeze({
    stateRoot,
    ledgerPath: ledgerExplicit ? resolve(env[ENV.ledger]!) : join(stateBase, 'ledger.jsonl'),
    ledgerExplicit,
    ...(opt(ENV.digestKeyFile) && { digestKeyFile: resolve(env[ENV.digestKeyFile]!) }),
    ...(opt(ENV.chainKeyFile) && { chainKeyFile: resolve(env[ENV.chainKeyFile]!) }),
    ...(opt(ENV.config) && { configFile: resolve(env[ENV.config]!) }),
    ...(opt(ENV.taskRecord) && { taskRecord: env[ENV.taskRecord]! }),
    ...(env[ENV.gateTools] !== undefined && { gateTools: env[ENV.gateTools]! }),
    ...(env[ENV.gatePolicy] !== undefined && { gatePolicy: env[ENV.gatePolicy]! }),
    ...(env[ENV.gateUnknownTools] !== undefined && { gateUnknownTools: env[ENV.gateUnknownTools]! }),
    hookDeadlineMs: deadline > 0 ? deadline : DEFAULT_HOOK_DEADLINE_MS,
    approverRoots: approverRootsOf(env[ENV.approverKeys]),
    vars: Object.freeze(vars),
  });
}

// ── Gate policy ───────────────────────────────────────────────────────────────────────────────
/** What the gate answers for a tool call. */
export const GATE_VERDICTS = ['allow', 'ask', 'deny'] as const;
export type { GateVerdict } from './events.js';

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

/** True when `key` is a valid policy key: a state, or `state/reason` with a known reason. */
export function isPolicyKey(key: string): boolean {
  const slash = key.indexOf('/');
  const state = slash === -1 ? key : key.slice(0, slash);
  if (!(CONTINUITY_STATES as readonly string[]).includes(state)) return false;
  return slash === -1 || (ALL_REASONS as readonly string[]).includes(key.slice(slash + 1));
}

/**
 * `policy` spelled out for every state and every state and reason, each with the verdict
 * {@link policyVerdict} gives it: a floor no layer on top of `policy` may go below.
 */
function everyVerdict(policy: GatePolicy): GatePolicy {
  const out: Record<string, GateVerdict> = {};
  for (const state of CONTINUITY_STATES) {
    out[state] = policy[state] ?? DEFAULT_GATE_POLICY[state] ?? 'deny';
    for (const reason of ALL_REASONS) out[`${state}/${reason}`] = policyVerdict(policy, state, reason);
  }
  return out;
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

/** Write gate settings. */
export interface GateConfig {
  /** Tool names the gate checks (`*` for all). Default: the runtime adapter's list. */
  tools: readonly string[];
  /** State → verdict overrides; unlisted states use {@link DEFAULT_GATE_POLICY}. Default none. */
  policy: GatePolicy;
  /**
   * Guard the continuity files: deny writes to the ledger, keys and state directory, and ask the
   * human before the agent writes `.continuity/`. Default true.
   */
  protectContinuityFiles: boolean;
  /**
   * What the gate answers, while writes are held, for a tool the runtime's adapter does not know
   * (an MCP tool, a subagent, a tool a later version adds) and the configuration does not list.
   * Default `ask`. With no boundary held, such a tool passes.
   */
  unknownTools: GateVerdict;
}

/** The configuration file's `export` section as read (unvalidated), and how warnings name it. */
export interface ExportSection {
  values: Record<string, unknown>;
  label: string;
}

/** The whole adapter configuration, resolved. */
export interface AdapterConfig {
  /** The runtime name on every span and ledger record (`claude-code`, `codex-cli`, …). */
  runtime: string;
  /** Absolute project directory. */
  projectDir: string;
  /** Absolute path of the task record. Default `<project>/.continuity/task.json`. */
  taskRecordPath: string;
  gate: GateConfig;
  /**
   * The configuration file's `export` section as read (empty without a file), resolved with the
   * `CONTINUITY_OTLP_*` variables only when something exports (`./export.ts`), so the gate's
   * fast path never loads the exporter. Default: export on, to {@link DEFAULT_OTLP_ENDPOINT}.
   */
  exportFile: ExportSection;
  /**
   * Where the spans go instead of the OTLP exporter, when set: an in-process adapter hands them
   * to the application's own tracer provider. Default none (the exporter and its spool).
   */
  spanSink?: SpanSink;
  /** The environment, resolved once. */
  env: ContinuityEnv;
  /**
   * Set when the configuration file exists but could not be read as one (a FIFO, a device, a
   * link to one, larger than its bound, not a JSON object): what it says is unknown, so the gate
   * asks for every tool that could change anything and a pre capture is recorded as evidence
   * missing (`config_unreadable`). The defaults fill the rest.
   */
  configProblem?: string;
  /**
   * The runtime's own settings files that load the continuity hooks (or its plugin, or its MCP
   * server), absolute; a directory ends in the path separator (every file in it). Written by the
   * agent (same user, a shell), one could take the hooks out for the next session or add others:
   * the gate asks a human before a tool writes one, whatever the continuity state
   * (`runtime_config_ask`). From the runtime adapter ({@link ConfigDefaults.runtimeConfig}).
   * Default none.
   */
  runtimeConfig?: readonly string[];
  /**
   * Set when the configuration file relaxes the gate (./config-relax.ts): `gate` then holds the
   * strict default for each relaxed setting, and this the gate as the file would have it. The file
   * is obeyed only once its seal verifies (./config-seal.ts, loaded off the fast path). Default none.
   */
  unsealed?: UnsealedConfig;
}

/** A configuration file that relaxes the gate, before its seal is checked. */
export interface UnsealedConfig {
  /** What the file relaxes. */
  relaxations: readonly Relaxation[];
  /** The gate as the file (and the environment on top) would have it. */
  gate: GateConfig;
  /** The file as parsed: its canonical JSON's digest is what a seal covers. */
  document: Record<string, unknown>;
  /** How messages name the file (`.continuity/config.json`, or `CONTINUITY_CONFIG`). */
  label: string;
}

/**
 * Receives an adapter's spans in place of the OTLP exporter. Returns false when it cannot take
 * them (the exporter then sends them as usual). Must not throw; a throw counts as false.
 */
export type SpanSink = (spans: readonly ExportSpan[]) => boolean | Promise<boolean>;

/** Most bytes of a configuration file. */
export const MAX_CONFIG_BYTES = 1024 * 1024;

const CONFIG_PROBLEMS: Readonly<Record<string, string>> = {
  not_regular: 'not a regular file (a FIFO, device or socket, or a link to one)',
  link: 'a symbolic link loop',
  too_large: `larger than ${MAX_CONFIG_BYTES} bytes`,
  unreadable: 'cannot be read',
  invalid_json: 'not valid JSON',
};

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

/** What a runtime adapter tells the loader. */
export interface ConfigDefaults {
  runtime: string;
  /** The tools the runtime's gate checks unless configured otherwise. */
  gatedTools: readonly string[];
  /**
   * The runtime's settings files that load the continuity hooks: relative to the project, absolute,
   * or under the home directory (`~/`); a directory ends in `/`. Default none.
   */
  runtimeConfig?: readonly string[];
}

/**
 * The runtime's settings files of {@link ConfigDefaults.runtimeConfig}, absolute: a relative one
 * against the project, `~/` against `HOME` (left out when `HOME` is not absolute), a directory
 * ending in the path separator.
 */
export function runtimeConfigPaths(
  projectDir: string,
  env: ContinuityEnv,
  files: readonly string[] = [],
): string[] {
  const home = env.vars.HOME;
  const out: string[] = [];
  for (const f of files) {
    let abs: string;
    if (f.startsWith('~/')) {
      if (!home || !isAbsolute(home)) continue;
      abs = resolve(home, f.slice(2));
    } else abs = resolve(projectDir, f);
    out.push(f.endsWith('/') ? `${abs}${sep}` : abs);
  }
  return out;
}

/**
 * Loads the configuration for `projectDir`: the file named by `CONTINUITY_CONFIG`, else
 * `<project>/.continuity/config.json` (optional), then the `CONTINUITY_*` overrides.
 */
export function loadConfig(projectDir: string, env: ContinuityEnv, defaults: ConfigDefaults): LoadedConfig {
  const warnings: string[] = [];
  const file = env.configFile ?? join(projectDir, DEFAULT_CONFIG_FILE);
  // A link is followed (a user may keep the file elsewhere), but only a regular file is read.
  const read = readJsonState(file, MAX_CONFIG_BYTES, true);
  const fileLabel = env.configFile ? ENV.config : DEFAULT_CONFIG_FILE;
  let doc: Record<string, unknown> = {};
  let configProblem: string | undefined;
  if (read.kind === 'unreadable') {
    configProblem = `${fileLabel}: ${CONFIG_PROBLEMS[read.problem]}`;
  } else if (read.kind === 'value') {
    if (isRecord(read.value)) doc = read.value;
    else configProblem = `${fileLabel}: expected a JSON object`;
  }
  if (configProblem) warnings.push(`${configProblem}; the gate asks until it is fixed`);
  const gateRaw = isRecord(doc.gate) ? doc.gate : {};
  const exportRaw = isRecord(doc.export) ? doc.export : {};

  let taskRecordPath = join(projectDir, DEFAULT_TASK_RECORD);
  const taskRaw = env.taskRecord ?? doc.taskRecord;
  if (typeof taskRaw === 'string' && taskRaw.length > 0) taskRecordPath = resolve(projectDir, taskRaw);
  else if (taskRaw !== undefined)
    warnings.push(`${fileLabel}.taskRecord: expected a path; using the default`);

  // The file's gate settings first: a setting that relaxes the gate is obeyed only under the
  // human's seal, so until that is checked the strict default stands for it.
  let fileUnknown: GateVerdict = 'ask';
  if (isGateVerdict(gateRaw.unknownTools)) fileUnknown = gateRaw.unknownTools;
  else if (gateRaw.unknownTools !== undefined)
    warnings.push(`${fileLabel}.gate.unknownTools: expected allow, ask or deny; using ask`);
  let protectContinuityFiles = true;
  if (typeof gateRaw.protectContinuityFiles === 'boolean') {
    protectContinuityFiles = gateRaw.protectContinuityFiles;
  } else if (gateRaw.protectContinuityFiles !== undefined) {
    warnings.push(`${fileLabel}.gate.protectContinuityFiles: expected true or false; using true`);
  }
  const fromFile: GateSettings = {
    tools: readTools(gateRaw.tools, `${fileLabel}.gate.tools`, warnings) ?? defaults.gatedTools,
    policy: readPolicy(gateRaw.policy, `${fileLabel}.gate.policy`, warnings),
    unknownTools: fileUnknown,
    protectContinuityFiles,
  };
  const strict: GateSettings = {
    tools: defaults.gatedTools,
    policy: DEFAULT_GATE_POLICY,
    unknownTools: 'ask',
    protectContinuityFiles: true,
  };
  // The environment applies on top, but only where it tightens: a runtime may take variables from
  // a settings file the agent can write (Claude Code's `env`), so relaxing the gate takes the
  // sealed file. A variable that would relax is ignored, with a warning naming it.
  const envTools = readTools(env.gateTools, ENV.gateTools, warnings);
  const envPolicy = env.gatePolicy !== undefined ? readPolicy(env.gatePolicy, ENV.gatePolicy, warnings) : {};
  let envUnknown: GateVerdict | undefined;
  if (isGateVerdict(env.gateUnknownTools)) envUnknown = env.gateUnknownTools;
  else if (env.gateUnknownTools !== undefined)
    warnings.push(`${ENV.gateUnknownTools}: expected allow, ask or deny; ignored`);
  // The environment over settings `g`, and the floor it may not go below: `g` itself.
  const layer = (g: GateSettings): GateSettings => ({
    tools: envTools ?? g.tools,
    policy: { ...g.policy, ...envPolicy },
    unknownTools: envUnknown ?? g.unknownTools,
    protectContinuityFiles: g.protectContinuityFiles,
  });
  const floor = (g: GateSettings): GateSettings => ({ ...g, policy: everyVerdict(g.policy) });
  const envSays = envTools !== undefined || Object.keys(envPolicy).length > 0 || envUnknown !== undefined;
  // With no variable set (the usual case, and the gate's fast path) there is nothing to layer.
  const withEnv = (g: GateSettings): GateConfig => (envSays ? tightenGate(layer(g), floor(g)) : g);
  // The gate as the file would have it: obeyed outright when it relaxes nothing, else under its seal.
  const asFiled = withEnv(fromFile);
  const relaxations = isRecord(doc.gate) ? relaxationsOf(asFiled, strict) : [];
  const gate = relaxations.length > 0 ? withEnv(tightenGate(fromFile, strict)) : asFiled;
  const unsealed: UnsealedConfig | undefined =
    relaxations.length > 0 ? { relaxations, gate: asFiled, document: doc, label: fileLabel } : undefined;
  // Named against the file's own settings: what the variable would have done there.
  for (const { setting } of envSays ? relaxationsOf(layer(fromFile), floor(fromFile)) : []) {
    const name =
      setting === 'gate.tools'
        ? ENV.gateTools
        : setting === 'gate.unknownTools'
          ? ENV.gateUnknownTools
          : `${ENV.gatePolicy} ${setting.slice('gate.policy.'.length)}`;
    warnings.push(
      `${name}: would relax the gate, and the environment can only tighten it (relax it in ${fileLabel} and seal that with \`continuity config seal\`); ignored`,
    );
  }

  return {
    config: {
      runtime: defaults.runtime,
      projectDir,
      taskRecordPath,
      gate,
      exportFile: { values: exportRaw, label: `${fileLabel}.export` },
      env,
      runtimeConfig: runtimeConfigPaths(projectDir, env, defaults.runtimeConfig),
      ...(configProblem ? { configProblem } : {}),
      ...(unsealed ? { unsealed } : {}),
    },
    warnings,
  };
}
