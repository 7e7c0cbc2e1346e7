/**
 * `continuity init claude-code`: merges the adapter's hooks and permission rules into
 * `.claude/settings.json`, adds `.continuity/` to the project's `.gitignore`, and creates the
 * task record template. `--remove` takes out exactly what init added and keeps everyone else's.
 *
 * Idempotent: a hook already present (a command running `hook claude-code`) is left as it is,
 * unless `--command` names another launcher, which rewrites the command of our hooks (and only
 * ours). Without `--command`, hooks run `continuity` when it is on PATH, else
 * `node <this checkout>/bin/continuity.js`.
 *
 * Settings shape (Claude Code): `hooks.<Event>[] = { matcher?, hooks: [{ type: "command",
 * command, timeout (seconds) }] }`; `permissions.deny[]` rules such as `Read(//abs/path/**)`;
 * `sandbox.filesystem.denyWrite[]` absolute paths. Claude Code 2.1.328 honours the deny rules for
 * its file tools and for Bash commands that name the path; the sandbox list takes effect only
 * where the user enables the sandbox (bubblewrap), and then also stops Bash commands that build
 * the path at run time (docs/claude-code.md).
 */
import { existsSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { InputError } from '../../decision/problems.js';
import { PROJECT_STATE_DIR } from '../core/config.js';
import { type HookGroupMerge, hookMergeLines, mergeHookGroups } from '../core/hook-groups.js';
import {
  ensureProjectFiles,
  hookLauncher,
  nextStepLine,
  notOnPathNote,
  PROJECT_FILES_KEPT,
  readJsonSettings,
  writeJsonSettings,
} from '../core/project.js';
import { ensureDir, isRecord, readJsonFile, writeFileAtomic } from '../core/state.js';
import {
  CLAUDE_CODE_DIALECT,
  type ClaudeCodeEnv,
  type HookDialect,
  onPath,
  resolveClaudeCodeEnv,
} from './config.js';

/** Recognizes the adapter's hooks (of `runtime`) in an existing settings file, whatever launcher they use. */
function oursPattern(runtime: string): RegExp {
  return new RegExp(`\\bhook\\s+${runtime.replace(/[^a-z0-9-]/g, '')}(?![\\w-])`);
}

/** What init records of the rules it added, so `--remove` takes out exactly those. */
const INSTALLED_FILE = `${PROJECT_STATE_DIR}/installed.json`;

/** One hook registration the adapter wants (the core's HookGroupRegistration, in Claude Code's terms). */
export interface HookRegistration {
  event: string;
  /** Claude Code matcher; omitted for events that match everything. */
  matcher?: string;
  /** Seconds before Claude Code cancels the hook. */
  timeout: number;
  /** Why it is there (printed by init). */
  purpose: string;
}

/**
 * The registrations, with sensible timeouts: the gate must answer fast (5 s is a ceiling, it
 * takes tens of milliseconds); PreCompact gets the most room because it reads the task record and
 * the ledger, and a hook that times out only loses its own evidence.
 */
export function hookRegistrations(gateMatcher: string): HookRegistration[] {
  return [
    { event: 'PreToolUse', matcher: gateMatcher, timeout: 5, purpose: 'write gate' },
    {
      event: 'PreCompact',
      timeout: 15,
      purpose: 'pre capture of the task record; asks the summary to keep the decisions',
    },
    {
      event: 'SessionStart',
      timeout: 10,
      purpose: 'current session; confirms a compaction and asks for the restatement',
    },
    { event: 'PostCompact', timeout: 10, purpose: 'confirms a compaction' },
    {
      event: 'InstructionsLoaded',
      matcher: 'compact',
      timeout: 10,
      purpose: 'confirms a compaction',
    },
    { event: 'PostToolUse', matcher: '*', timeout: 5, purpose: 'activity: working' },
    { event: 'UserPromptSubmit', timeout: 5, purpose: 'activity: working' },
    {
      event: 'Notification',
      timeout: 5,
      purpose: 'activity: waiting_human (permission, idle and input prompts)',
    },
    { event: 'PermissionRequest', timeout: 5, purpose: 'activity: waiting_human' },
    { event: 'Stop', timeout: 5, purpose: 'activity: idle' },
  ];
}

/** What merging did. */
export interface MergeResult extends Omit<HookGroupMerge<HookRegistration>, 'hooks'> {
  settings: Record<string, unknown>;
}

function isOursOf(runtime: string): (h: unknown) => boolean {
  const ours = oursPattern(runtime);
  return (h) => isRecord(h) && typeof h.command === 'string' && ours.test(h.command);
}

function hooksOf(
  doc: unknown,
  source: string,
): { settings: Record<string, unknown>; hooks: Record<string, unknown[]> } {
  if (!isRecord(doc)) throw new InputError(source, [{ path: '(root)', message: 'expected a JSON object' }]);
  const settings: Record<string, unknown> = { ...doc };
  const hooksRaw = settings.hooks ?? {};
  if (!isRecord(hooksRaw))
    throw new InputError(source, [{ path: 'hooks', message: 'expected an object of event → hook groups' }]);
  const hooks: Record<string, unknown[]> = {};
  for (const [event, groups] of Object.entries(hooksRaw)) {
    if (!Array.isArray(groups)) {
      throw new InputError(source, [{ path: `hooks.${event}`, message: 'expected an array of hook groups' }]);
    }
    hooks[event] = groups;
  }
  return { settings, hooks };
}

/**
 * Merges the registrations into a parsed settings document (pure). With `rewrite`, our hooks
 * whose command differs from `command` are rewritten; others' hooks are never touched. Throws
 * {@link InputError} naming `source` and the field when the document's shape is not Claude Code's.
 */
export function mergeHookSettings(
  doc: unknown,
  source: string,
  command: string,
  registrations: readonly HookRegistration[],
  rewrite = false,
  runtime = CLAUDE_CODE_DIALECT.runtime,
): MergeResult {
  const { settings, hooks } = hooksOf(doc, source);
  const isOurs = isOursOf(runtime);
  const { hooks: merged, ...result } = mergeHookGroups(hooks, command, registrations, rewrite, isOurs);
  settings.hooks = merged;
  return { settings, ...result };
}

/** Takes out exactly our hooks (pure): a group left with no hook goes, an event left with no group goes. */
export function removeHookSettings(
  doc: unknown,
  source: string,
  runtime = CLAUDE_CODE_DIALECT.runtime,
): { settings: Record<string, unknown>; removed: string[] } {
  const { settings, hooks } = hooksOf(doc, source);
  const isOurs = isOursOf(runtime);
  const hasOurs = (g: unknown) => isRecord(g) && Array.isArray(g.hooks) && g.hooks.some(isOurs);
  const removed: string[] = [];
  const out: Record<string, unknown[]> = {};
  for (const [event, groups] of Object.entries(hooks)) {
    const kept: unknown[] = [];
    for (const g of groups) {
      if (!hasOurs(g)) {
        kept.push(g);
        continue;
      }
      removed.push(event);
      const rest = ((g as Record<string, unknown>).hooks as unknown[]).filter((h) => !isOurs(h));
      if (rest.length > 0) kept.push({ ...(g as Record<string, unknown>), hooks: rest });
    }
    if (kept.length > 0) out[event] = kept;
  }
  if (Object.keys(out).length > 0) settings.hooks = out;
  else delete settings.hooks;
  return { settings, removed: [...new Set(removed)] };
}

/** The rules protecting the continuity evidence: permission deny rules and sandbox write denials. */
export interface ProtectionRules {
  deny: string[];
  denyWrite: string[];
}

/**
 * The rules for the evidence of this environment: the state directory (ledger, adapter state,
 * spool), a ledger outside it, and the key files. `Read`, `Edit` and `Write` rules with `//` for
 * an absolute path, as Claude Code's permission syntax has it.
 */
export function protectionRules(env: ClaudeCodeEnv): ProtectionRules {
  const dirs = [env.core.stateRoot];
  const files = [
    ...(env.core.ledgerExplicit ? [env.core.ledgerPath] : []),
    ...(env.core.digestKeyFile ? [env.core.digestKeyFile] : []),
    ...(env.core.chainKeyFile ? [env.core.chainKeyFile] : []),
  ].filter((f) => relative(env.core.stateRoot, f).startsWith('..'));
  const deny: string[] = [];
  for (const tool of ['Read', 'Edit', 'Write']) {
    for (const d of dirs) deny.push(`${tool}(/${d}/**)`);
    for (const f of files) deny.push(`${tool}(/${f})`);
    if (env.core.ledgerExplicit && files.includes(env.core.ledgerPath)) {
      deny.push(`${tool}(/${env.core.ledgerPath}.*)`, `${tool}(/${env.core.ledgerPath}.index/**)`);
    }
  }
  return { deny, denyWrite: [...dirs, ...files] };
}

/** The protection rules of `env`'s dialect (see {@link HookDialect.protection}). */
function dialectRules(env: ClaudeCodeEnv): ProtectionRules {
  const { protection } = env.dialect;
  if (protection === 'none') return { deny: [], denyWrite: [] };
  const rules = protectionRules(env);
  return protection === 'claude' ? rules : { deny: rules.deny, denyWrite: [] };
}

function stringArray(v: unknown, source: string, path: string): string[] {
  if (v === undefined) return [];
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) {
    throw new InputError(source, [{ path, message: 'expected an array of strings' }]);
  }
  return v as string[];
}

/** Adds the rules (pure); returns how many were new. */
export function mergeProtection(
  settings: Record<string, unknown>,
  source: string,
  rules: ProtectionRules,
): { settings: Record<string, unknown>; added: number } {
  const out = { ...settings };
  const perms = out.permissions ?? {};
  if (!isRecord(perms))
    throw new InputError(source, [{ path: 'permissions', message: 'expected an object' }]);
  const deny = stringArray(perms.deny, source, 'permissions.deny');
  const sandbox = out.sandbox ?? {};
  if (!isRecord(sandbox)) throw new InputError(source, [{ path: 'sandbox', message: 'expected an object' }]);
  const fsRaw = sandbox.filesystem ?? {};
  if (!isRecord(fsRaw))
    throw new InputError(source, [{ path: 'sandbox.filesystem', message: 'expected an object' }]);
  const denyWrite = stringArray(fsRaw.denyWrite, source, 'sandbox.filesystem.denyWrite');
  const newDeny = rules.deny.filter((r) => !deny.includes(r));
  const newWrite = rules.denyWrite.filter((r) => !denyWrite.includes(r));
  out.permissions = { ...perms, deny: [...deny, ...newDeny] };
  if (rules.denyWrite.length > 0) {
    out.sandbox = { ...sandbox, filesystem: { ...fsRaw, denyWrite: [...denyWrite, ...newWrite] } };
  }
  return { settings: out, added: newDeny.length + newWrite.length };
}

/** Takes out exactly `rules` (pure), dropping a list, then an object, left empty by it. */
export function removeProtection(
  settings: Record<string, unknown>,
  rules: ProtectionRules,
): { settings: Record<string, unknown>; removed: number } {
  const out = { ...settings };
  let removed = 0;
  if (isRecord(out.permissions) && Array.isArray(out.permissions.deny)) {
    const before = out.permissions.deny as unknown[];
    const kept = before.filter((r) => !(typeof r === 'string' && rules.deny.includes(r)));
    removed += before.length - kept.length;
    const perms: Record<string, unknown> = { ...out.permissions, deny: kept };
    if (kept.length === 0) delete perms.deny;
    if (Object.keys(perms).length === 0) delete out.permissions;
    else out.permissions = perms;
  }
  if (
    isRecord(out.sandbox) &&
    isRecord(out.sandbox.filesystem) &&
    Array.isArray(out.sandbox.filesystem.denyWrite)
  ) {
    const before = out.sandbox.filesystem.denyWrite as unknown[];
    const kept = before.filter((r) => !(typeof r === 'string' && rules.denyWrite.includes(r)));
    removed += before.length - kept.length;
    const fsObj: Record<string, unknown> = { ...out.sandbox.filesystem, denyWrite: kept };
    if (kept.length === 0) delete fsObj.denyWrite;
    const sandbox: Record<string, unknown> = { ...out.sandbox, filesystem: fsObj };
    if (Object.keys(fsObj).length === 0) delete sandbox.filesystem;
    if (Object.keys(sandbox).length === 0) delete out.sandbox;
    else out.sandbox = sandbox;
  }
  return { settings: out, removed };
}

export { binPath, gitignoreWith } from '../core/project.js';

/** Options of `continuity init claude-code`. */
export interface InitOptions {
  /** Project directory. Default the working directory. */
  project: string;
  /** Settings file, relative to the project. Default `.claude/settings.json`. */
  settings?: string;
  /** Launcher of the hook command, e.g. `node /path/to/bin/continuity.js`; rewrites ours when it differs. */
  command?: string;
  /** Tools the gate checks (the PreToolUse matcher). Default Edit|Write|MultiEdit|NotebookEdit|Bash|PowerShell. */
  gateMatcher?: string;
  /** Take out exactly what init added. */
  remove?: boolean;
  env?: NodeJS.ProcessEnv;
  /** The runtime whose settings these are: Claude Code, or one that speaks its hook protocol. */
  dialect?: HookDialect;
}

function installedRules(project: string): ProtectionRules {
  const raw = readJsonFile(join(project, INSTALLED_FILE));
  const list = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
  return isRecord(raw)
    ? { deny: list(raw.deny), denyWrite: list(raw.denyWrite) }
    : { deny: [], denyWrite: [] };
}

/** Runs init (or `--remove`) and returns the lines it prints. Nothing is written when the settings file is bad. */
export function runInit(options: InitOptions): string[] {
  const env = resolveClaudeCodeEnv(options.env ?? process.env, undefined, options.dialect);
  const project = options.project;
  const settingsRel = options.settings ?? env.dialect.settingsFile;
  const settingsPath = join(project, settingsRel);
  const { doc, mode, exists } = readJsonSettings(settingsPath, settingsRel);
  return options.remove
    ? remove({ project, settingsRel, settingsPath, doc, mode, exists, env })
    : install(options, { project, settingsRel, settingsPath, doc, mode, exists, env });
}

/** The project and settings file init works on, read once. */
interface Target {
  project: string;
  settingsRel: string;
  settingsPath: string;
  /** The settings document as read (`{}` when there is no file). */
  doc: unknown;
  /** The settings file's mode, kept when it is rewritten. */
  mode: number;
  /** Whether the settings file existed. */
  exists: boolean;
  env: ClaudeCodeEnv;
}

function unionRules(a: ProtectionRules, b: ProtectionRules): ProtectionRules {
  return {
    deny: [...new Set([...a.deny, ...b.deny])],
    denyWrite: [...new Set([...a.denyWrite, ...b.denyWrite])],
  };
}

function install(options: InitOptions, t: Target): string[] {
  const { project, settingsRel, settingsPath, doc, mode, env } = t;
  const out: string[] = [];
  const explicit = options.command?.trim();
  const onPathNow = onPath('continuity', env.path);
  const launcherText = hookLauncher(explicit, onPathNow);
  const { runtime } = env.dialect;
  const command = `${launcherText} hook ${runtime}`;
  const gateMatcher = options.gateMatcher ?? env.dialect.gatedTools.join('|');
  const events = env.dialect.events;
  const registrations = hookRegistrations(gateMatcher).filter((r) => !events || events.has(r.event));
  const seeded =
    t.exists || !env.dialect.settingsSeed ? doc : { ...env.dialect.settingsSeed, ...(doc as object) };
  const merged = mergeHookSettings(seeded, settingsRel, command, registrations, Boolean(explicit), runtime);
  const rules = dialectRules(env);
  const protectedSettings = mergeProtection(merged.settings, settingsRel, rules);
  const changed = merged.added.length > 0 || merged.rewritten.length > 0 || protectedSettings.added > 0;
  if (changed) writeJsonSettings(settingsPath, protectedSettings.settings, mode);
  out.push(...hookMergeLines(settingsRel, merged, command));
  if (protectedSettings.added > 0) {
    out.push(
      `${settingsRel}: added ${protectedSettings.added} rule(s) keeping the agent's tools out of the ledger, keys and state (permissions.deny, sandbox.filesystem.denyWrite)`,
    );
  }
  if (!changed) out.push(`${settingsRel}: unchanged`);

  // What init added, so --remove takes out exactly that even if the environment changes later.
  const before = installedRules(project);
  const union = unionRules(before, rules);
  ensureDir(join(project, PROJECT_STATE_DIR));
  if (JSON.stringify(union) !== JSON.stringify(before)) {
    writeFileAtomic(join(project, INSTALLED_FILE), `${JSON.stringify(union, null, 2)}\n`);
  }

  out.push(...ensureProjectFiles(project));
  if (!explicit && !onPathNow) {
    out.push(notOnPathNote());
  }
  out.push(nextStepLine(env.dialect.command));
  return out;
}

function remove(t: Target): string[] {
  const { project, settingsRel, settingsPath, doc, mode, env } = t;
  const out: string[] = [];
  const hooks = removeHookSettings(doc, settingsRel, env.dialect.runtime);
  const rules = unionRules(installedRules(project), dialectRules(env));
  const cleaned = removeProtection(hooks.settings, rules);
  if (hooks.removed.length > 0 || cleaned.removed > 0) {
    const seed = env.dialect.settingsSeed;
    if (seed && JSON.stringify(cleaned.settings) === JSON.stringify(seed))
      rmSync(settingsPath, { force: true });
    else writeJsonSettings(settingsPath, cleaned.settings, mode);
    if (hooks.removed.length > 0)
      out.push(`${settingsRel}: removed continuity hooks from ${hooks.removed.join(', ')}`);
    if (cleaned.removed > 0) out.push(`${settingsRel}: removed ${cleaned.removed} continuity rule(s)`);
  } else {
    out.push(`${settingsRel}: no continuity hooks or rules; unchanged`);
  }
  const installed = join(project, INSTALLED_FILE);
  if (existsSync(installed))
    writeFileAtomic(installed, `${JSON.stringify({ deny: [], denyWrite: [] }, null, 2)}\n`);
  out.push(PROJECT_FILES_KEPT);
  return out;
}
