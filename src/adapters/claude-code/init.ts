/**
 * `continuity init claude-code`: merges the adapter's hooks and permission rules into
 * `.claude/settings.json`, adds `.continuity/` to the project's `.gitignore`, and creates the
 * task record template. `--remove` takes out exactly what init added and keeps everyone else's.
 *
 * Idempotent: a hook already present (a command running `hook claude-code`) is left as it is,
 * unless `--command` names another launcher, which rewrites the command of our hooks (and only
 * ours). Without `--command`, the launcher is portable where it can be (core/project.ts
 * `chooseHookLauncher`): `continuity` when PATH has this installation, else the project's own
 * (`"$CLAUDE_PROJECT_DIR"/node_modules/.bin/continuity`), both written into the committed
 * `.claude/settings.json` (rewriting our hooks that ran this installation by its absolute path);
 * else `node <this installation>/bin/continuity.js`, which only this machine has, written into
 * `.claude/settings.local.json` (git-ignored) and never into the committed `.mcp.json`. Hooks of
 * ours in the other file of the pair move, so none run twice; `--remove` takes them out of both.
 *
 * Settings shape (Claude Code): `hooks.<Event>[] = { matcher?, hooks: [{ type: "command",
 * command, timeout (seconds) }] }`; `permissions.deny[]` rules such as `Read(//abs/path/**)`;
 * `sandbox.filesystem.denyWrite[]` absolute paths. Claude Code 2.1.328 honours the deny rules for
 * its file tools and for Bash commands that name the path; the sandbox list takes effect only
 * where the user enables the sandbox (bubblewrap), and then also stops Bash commands that build
 * the path at run time (docs/claude-code.md).
 */
import { existsSync, readdirSync, rmdirSync, rmSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { InputError } from '../../decision/problems.js';
import { PROJECT_STATE_DIR } from '../core/config.js';
import {
  type HookGroupMerge,
  type HookGroupRegistration,
  hookMergeLines,
  mergeHookGroups,
} from '../core/hook-groups.js';
import { MCP_SERVER_NAME } from '../core/mcp-names.js';
import { shellWord } from '../core/process.js';
import {
  binPath,
  chooseHookLauncher,
  ensureIgnored,
  ensureProjectFiles,
  type HookLaunch,
  machineLauncher,
  nextStepLine,
  PROJECT_FILES_KEPT,
  readJsonSettings,
  writeJsonSettings,
} from '../core/project.js';
import { ensureDir, isRecord, readJsonFile, writeFileAtomic } from '../core/state.js';
import {
  CLAUDE_CODE_DIALECT,
  type ClaudeCodeEnv,
  HOOK_TIMEOUT_S,
  type HookDialect,
  isOurServer,
  resolveClaudeCodeEnv,
  runtimeEventName,
} from './config.js';
import {
  MCP_JSON,
  type McpSettingsRules,
  mcpServerEntry,
  mcpServerEntryFor,
  mergeMcpJson,
  mergeMcpSettings,
  removeMcpJson,
  removeMcpSettings,
} from './mcp-config.js';

/** Recognizes the adapter's hooks (of `runtime`) in an existing settings file, whatever launcher they use. */
function oursPattern(runtime: string): RegExp {
  return new RegExp(`\\bhook\\s+${runtime.replace(/[^a-z0-9-]/g, '')}(?![\\w-])`);
}

/** What init records of the rules it added, so `--remove` takes out exactly those. */
const INSTALLED_FILE = `${PROJECT_STATE_DIR}/installed.json`;

/**
 * One hook registration the adapter wants: the core's registration as it is (Claude Code's
 * settings are the shape the core merges; `matcher` is Claude Code's, `timeout` in seconds before
 * Claude Code cancels the hook).
 */
export type HookRegistration = HookGroupRegistration;

/**
 * The registrations, with the timeouts of {@link HOOK_TIMEOUT_S}. The gate's two events carry
 * `onFailure: "block"`: if the gate ever fails to answer (a hang past its timeout, a crash), the
 * tool or the skill's shell command does not run. The recording hooks keep Claude Code's default
 * (`continue`): a failure there loses only its own evidence and never blocks compaction.
 * `PreSkillShellCommand` is Claude Code 2.1.332's and `Interrupt` 2.1.337's; earlier versions
 * ignore the key.
 */
export function hookRegistrations(gateMatcher: string): HookRegistration[] {
  const t = HOOK_TIMEOUT_S;
  return [
    {
      event: 'PreToolUse',
      matcher: gateMatcher,
      timeout: t.PreToolUse!,
      purpose: 'write gate',
      onFailure: 'block',
    },
    {
      event: 'PreSkillShellCommand',
      timeout: t.PreSkillShellCommand!,
      purpose: "write gate for skills' and slash commands' shell commands (Claude Code 2.1.332+)",
      onFailure: 'block',
    },
    {
      event: 'PreCompact',
      timeout: t.PreCompact!,
      purpose: 'pre capture of the task record; asks the summary to keep the decisions',
    },
    {
      event: 'SessionStart',
      timeout: t.SessionStart!,
      purpose: 'current session; confirms a compaction and asks for the restatement',
    },
    { event: 'PostCompact', timeout: t.PostCompact!, purpose: 'confirms a compaction' },
    {
      event: 'InstructionsLoaded',
      matcher: 'compact',
      timeout: t.InstructionsLoaded!,
      purpose: 'confirms a compaction',
    },
    {
      event: 'PostToolUse',
      matcher: '*',
      timeout: t.PostToolUse!,
      purpose: 'activity: working (in the background)',
      async: true,
    },
    {
      event: 'UserPromptSubmit',
      timeout: t.UserPromptSubmit!,
      purpose: 'activity: working (in the background)',
      async: true,
    },
    {
      event: 'Notification',
      timeout: t.Notification!,
      purpose: 'activity: waiting_human (permission, idle and input prompts)',
    },
    { event: 'PermissionRequest', timeout: t.PermissionRequest!, purpose: 'activity: waiting_human' },
    // Not async: a `claude -p` run ends right after Stop and kills a background hook still running
    // (2.1.328 and 2.1.332, recorded: an async Stop hook that took 2 s never finished), and Stop
    // comes once a turn, not once a tool call.
    { event: 'Stop', timeout: t.Stop!, purpose: 'activity: idle' },
    {
      event: 'Interrupt',
      timeout: t.Interrupt!,
      purpose: 'activity: idle (the user or the runtime stopped the turn; Claude Code 2.1.337+)',
    },
  ];
}

/**
 * The gate's matcher for a dialect that lists its read-only tools: every tool but those, as a
 * regular expression (`^(?!(?:Read|Glob|…)$).*`), so a tool that cannot write never starts the
 * gate's process while any other (a write, a command, an MCP tool, a tool a later version adds)
 * still reaches it. Claude Code 2.1.328 and 2.1.332 match a matcher that is not a plain list of
 * names as a regular expression, and so does Copilot CLI 1.0.102 reading `.claude/settings.json`
 * (recorded: Read and Glob started no gate, Write and Bash did). A hook's `if` filter cannot say
 * this: it takes one permission rule (`Write|Bash` and `Write, Bash` match nothing, recorded), and
 * Copilot ignores it.
 */
export function gateMatcherExcluding(readOnly: ReadonlySet<string>): string {
  const names = [...readOnly].sort().map((n) => n.replace(/[^A-Za-z0-9_]/g, ''));
  return `^(?!(?:${names.join('|')})$).*`;
}

/** Events only Claude Code has: another dialect's settings never get them. */
const CLAUDE_CODE_ONLY_EVENTS: ReadonlySet<string> = new Set(['PreSkillShellCommand', 'Interrupt']);

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
 * whose command differs from `command` are rewritten (given a predicate, those whose command it
 * accepts); others' hooks are never touched. Throws
 * {@link InputError} naming `source` and the field when the document's shape is not Claude Code's.
 */
export function mergeHookSettings(
  doc: unknown,
  source: string,
  command: string,
  registrations: readonly HookRegistration[],
  rewrite: boolean | ((current: string) => boolean) = false,
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

/** The rules protecting the continuity evidence: permission deny rules and sandbox read and write denials. */
export interface ProtectionRules {
  deny: string[];
  denyWrite: string[];
  /** `sandbox.filesystem.denyRead`: the project's `.continuity/` (older installs recorded none). */
  denyRead: string[];
}

/**
 * The tools the deny rules name. Claude Code 2.1.328 matches file paths only in `Read` and `Edit`
 * rules: a `Read` rule covers every file-reading tool (Read, Grep, Glob), an `Edit` rule every
 * file-editing tool (Edit, Write, NotebookEdit); it warns that a `Write(path)` or `Glob(path)`
 * rule "never matches" (its own words, in the settings check). So these two, proven on the real
 * binary against Read, Grep, Glob, Write and Edit (test/claude-code-e2e/protection.test.ts).
 * Older installs also wrote `Write` rules; `--remove` takes those out from what init recorded.
 */
const DENIED_TOOLS = ['Read', 'Edit'] as const;

/**
 * The rules for the evidence of this environment: the state directory (ledger, adapter state,
 * spool), a ledger outside it, the key files, and the project's `.continuity/` (task record and
 * configuration: the agent restates from its context, never from the record). `Read` and
 * `Edit` rules with `//` for an absolute path, as Claude Code's permission syntax has it; the
 * sandbox denies writing all of them, and reading `.continuity/` (the state directory's `Read`
 * rule is already a sandbox read denial: Claude Code merges `Read` deny rules into it).
 */
export function protectionRules(
  env: ClaudeCodeEnv,
  project?: string,
  tools: readonly string[] = DENIED_TOOLS,
): ProtectionRules {
  const taskDir = project === undefined ? [] : [join(project, PROJECT_STATE_DIR)];
  const dirs = [env.core.stateRoot, ...taskDir];
  const files = [
    ...(env.core.ledgerExplicit ? [env.core.ledgerPath] : []),
    ...(env.core.digestKeyFile ? [env.core.digestKeyFile] : []),
    ...(env.core.chainKeyFile ? [env.core.chainKeyFile] : []),
  ].filter((f) => relative(env.core.stateRoot, f).startsWith('..'));
  const deny: string[] = [];
  for (const tool of tools) {
    for (const d of dirs) deny.push(`${tool}(/${d}/**)`);
    for (const f of files) deny.push(`${tool}(/${f})`);
    if (env.core.ledgerExplicit && files.includes(env.core.ledgerPath)) {
      deny.push(`${tool}(/${env.core.ledgerPath}.*)`, `${tool}(/${env.core.ledgerPath}.index/**)`);
    }
  }
  return { deny, denyWrite: [...dirs, ...files], denyRead: taskDir };
}

/**
 * The protection rules of `env`'s dialect (see {@link HookDialect.protection}): Claude Code's,
 * with `.continuity/` (proven on its binary); the deny rules of before for the others (their
 * binaries have not been shown to match only Read and Edit rules).
 */
function dialectRules(env: ClaudeCodeEnv, project: string): ProtectionRules {
  const { protection } = env.dialect;
  if (protection === 'none') return { deny: [], denyWrite: [], denyRead: [] };
  if (protection === 'claude') return protectionRules(env, project);
  return {
    deny: protectionRules(env, undefined, ['Read', 'Edit', 'Write']).deny,
    denyWrite: [],
    denyRead: [],
  };
}

/** Whether init registers the restate MCP server: Claude Code's `.mcp.json` (its dialect only). */
function registersMcp(env: ClaudeCodeEnv): boolean {
  return env.dialect === CLAUDE_CODE_DIALECT;
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
  const denyRead = stringArray(fsRaw.denyRead, source, 'sandbox.filesystem.denyRead');
  const newDeny = rules.deny.filter((r) => !deny.includes(r));
  const newWrite = rules.denyWrite.filter((r) => !denyWrite.includes(r));
  const newRead = rules.denyRead.filter((r) => !denyRead.includes(r));
  // A runtime with no rules of ours (Copilot, Gemini) gets no `permissions` key it does not read.
  if (rules.deny.length > 0) out.permissions = { ...perms, deny: [...deny, ...newDeny] };
  if (rules.denyWrite.length + rules.denyRead.length > 0) {
    const filesystem: Record<string, unknown> = { ...fsRaw, denyWrite: [...denyWrite, ...newWrite] };
    if (denyRead.length + newRead.length > 0) filesystem.denyRead = [...denyRead, ...newRead];
    out.sandbox = { ...sandbox, filesystem };
  }
  return { settings: out, added: newDeny.length + newWrite.length + newRead.length };
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
  if (isRecord(out.sandbox) && isRecord(out.sandbox.filesystem)) {
    const fsObj: Record<string, unknown> = { ...out.sandbox.filesystem };
    for (const [key, list] of [
      ['denyWrite', rules.denyWrite],
      ['denyRead', rules.denyRead],
    ] as const) {
      if (!Array.isArray(fsObj[key])) continue;
      const before = fsObj[key] as unknown[];
      const kept = before.filter((r) => !(typeof r === 'string' && list.includes(r)));
      removed += before.length - kept.length;
      if (kept.length === 0) delete fsObj[key];
      else fsObj[key] = kept;
    }
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
  /** Tools that reach the gate (the PreToolUse matcher). Default `*`: every tool (the gate lets reads through). */
  gateMatcher?: string;
  /** Take out exactly what init added. */
  remove?: boolean;
  env?: NodeJS.ProcessEnv;
  /** The runtime whose settings these are: Claude Code, or one that speaks its hook protocol. */
  dialect?: HookDialect;
}

/** What init recorded in `.continuity/installed.json`: the protection rules and the MCP settings it added. */
interface Installed extends ProtectionRules {
  mcp: McpSettingsRules;
  /** Files and directories (project-relative) init created: `--remove` deletes them once left empty. */
  created: string[];
}

const NOTHING_INSTALLED: Installed = {
  deny: [],
  denyWrite: [],
  denyRead: [],
  mcp: { enabledMcpjsonServers: [], allow: [] },
  created: [],
};

function installedRules(project: string): Installed {
  const raw = readJsonFile(join(project, INSTALLED_FILE));
  const list = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
  if (!isRecord(raw)) return NOTHING_INSTALLED;
  const mcp = isRecord(raw.mcp) ? raw.mcp : {};
  return {
    deny: list(raw.deny),
    denyWrite: list(raw.denyWrite),
    denyRead: list(raw.denyRead),
    mcp: { enabledMcpjsonServers: list(mcp.enabledMcpjsonServers), allow: list(mcp.allow) },
    created: list(raw.created),
  };
}

/** Runs init (or `--remove`) and returns the lines it prints. Nothing is written when a settings file is bad. */
export function runInit(options: InitOptions): string[] {
  const env = resolveClaudeCodeEnv(options.env ?? process.env, undefined, options.dialect);
  const project = options.project;
  const { settingsFile, localSettingsFile } = env.dialect;
  if (options.remove) {
    // Without --settings, from wherever init put the hooks: the committed file, this machine's file.
    const files =
      options.settings !== undefined
        ? [options.settings]
        : [settingsFile, ...(localSettingsFile ? [localSettingsFile] : [])];
    return remove(files.map((f) => readTarget(project, f, env)));
  }
  const launch = chooseHookLauncher({
    ...(options.command !== undefined && { explicit: options.command }),
    project,
    path: env.path,
    projectDirVar: env.dialect.env.projectDir,
    ...(env.dialect.projectDirQuoted && { projectDirQuoted: true }),
  });
  if (options.settings !== undefined)
    return install(options, launch, readTarget(project, options.settings, env));
  const committed = readTarget(project, settingsFile, env);
  const local = localSettingsFile ? readTarget(project, localSettingsFile, env) : undefined;
  // A launcher only this machine has goes into this machine's file; unless the committed file has
  // hooks of ours with another launcher (a portable one a teammate committed: `npm install` makes
  // it run here too), which init leaves as they are rather than run the hooks twice.
  const command = `${launch.text} hook ${env.dialect.runtime}`;
  const toLocal =
    launch.origin === 'machine' &&
    local !== undefined &&
    ourCommands(committed.doc, settingsFile, env.dialect.runtime).every((c) => c === command);
  return toLocal ? install(options, launch, local, committed) : install(options, launch, committed, local);
}

/** The commands of our hooks in a settings document. */
function ourCommands(doc: unknown, source: string, runtime: string): string[] {
  const isOurs = isOursOf(runtime);
  return Object.values(hooksOf(doc, source).hooks).flatMap((groups) =>
    groups.flatMap((g) =>
      isRecord(g) && Array.isArray(g.hooks)
        ? g.hooks.filter(isOurs).map((h) => String((h as Record<string, unknown>).command))
        : [],
    ),
  );
}

/** Reads one settings file of the project (an {@link InputError} naming it when it is not JSON). */
function readTarget(project: string, settingsRel: string, env: ClaudeCodeEnv): Target {
  const settingsPath = join(project, settingsRel);
  const { doc, mode, exists } = readJsonSettings(settingsPath, settingsRel);
  return { project, settingsRel, settingsPath, doc, mode, exists, env };
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

const union = (a: readonly string[], b: readonly string[]) => [...new Set([...a, ...b])];

function unionRules(
  a: Installed,
  b: ProtectionRules,
  mcp: McpSettingsRules,
  created: readonly string[] = [],
): Installed {
  return {
    created: union(a.created, created),
    deny: union(a.deny, b.deny),
    denyWrite: union(a.denyWrite, b.denyWrite),
    denyRead: union(a.denyRead, b.denyRead),
    mcp: {
      enabledMcpjsonServers: union(a.mcp.enabledMcpjsonServers, mcp.enabledMcpjsonServers),
      allow: union(a.mcp.allow, mcp.allow),
    },
  };
}

/**
 * Installs into `t`. `moveFrom` is the other settings file of the pair (committed, this
 * machine's): hooks of ours there move to `t`, so they never run twice.
 */
function install(options: InitOptions, launch: HookLaunch, t: Target, moveFrom?: Target): string[] {
  const { project, settingsRel, settingsPath, doc, mode, env } = t;
  const out: string[] = [];
  const explicit = launch.origin === 'explicit';
  const launcherText = launch.text;
  const { runtime } = env.dialect;
  const command = `${launcherText} hook ${runtime}`;
  const registrations = dialectRegistrations(env.dialect, options.gateMatcher);
  const seeded =
    t.exists || !env.dialect.settingsSeed ? doc : { ...env.dialect.settingsSeed, ...(doc as object) };
  // A `--command` rewrites our hooks; a portable launcher rewrites those that ran this
  // installation by its absolute path (what init wrote before it knew a portable one).
  const machineCommand = `${machineLauncher()} hook ${runtime}`;
  const rewrite = explicit || (launch.origin !== 'machine' && ((c: string) => c === machineCommand));
  const merged = mergeHookSettings(seeded, settingsRel, command, registrations, rewrite, runtime);
  const rules = dialectRules(env, project);
  const protectedSettings = mergeProtection(merged.settings, settingsRel, rules);
  // The restatement tool: our server in .mcp.json (read and checked before anything is written).
  // `.mcp.json` is committed: a launcher only this machine has never goes in; one of ours that
  // ran this installation by its absolute path comes out.
  const mcp = registersMcp(env);
  const mcpJsonPath = join(project, MCP_JSON);
  const mcpJson = mcp ? readJsonSettings(mcpJsonPath, MCP_JSON) : { doc: {}, mode: 0o644, exists: false };
  const server: { doc: Record<string, unknown>; change: 'added' | 'rewritten' | 'removed' | 'unchanged' } =
    !mcp
      ? { doc: {}, change: 'unchanged' }
      : launch.origin !== 'machine'
        ? mergeMcpJson(mcpJson.doc, mcpServerEntryFor(launch))
        : runsThisMachine(mcpJson.doc, launcherText)
          ? { doc: removeMcpJson(mcpJson.doc).doc, change: 'removed' }
          : { doc: isRecord(mcpJson.doc) ? mcpJson.doc : {}, change: 'unchanged' };
  const serverRegistered = mcp && hasOurServer(server.doc);
  const mcpSettings = serverRegistered
    ? mergeMcpSettings(protectedSettings.settings, settingsRel)
    : { settings: protectedSettings.settings, added: { enabledMcpjsonServers: [], allow: [] } };
  const mcpAdded = mcpSettings.added.enabledMcpjsonServers.length + mcpSettings.added.allow.length;
  const changed =
    merged.added.length > 0 ||
    merged.rewritten.length > 0 ||
    merged.upgraded.length > 0 ||
    protectedSettings.added > 0 ||
    mcpAdded > 0;
  // What this run creates (the settings file, its directory), for `--remove` to take away again.
  const settingsDir = dirname(settingsRel);
  const created = changed
    ? [
        ...(t.exists ? [] : [settingsRel]),
        ...(settingsDir !== '.' && !existsSync(join(project, settingsDir)) ? [settingsDir] : []),
      ]
    : [];
  const before = installedRules(project);
  const all = unionRules(before, rules, mcpSettings.added, created);
  // The other file of the pair: hooks of ours there move here (planned before anything is written).
  const moved =
    moveFrom && removeHookSettings(moveFrom.doc, moveFrom.settingsRel, runtime).removed.length > 0
      ? stripPlan(moveFrom, all)
      : undefined;

  if (changed) writeJsonSettings(settingsPath, mcpSettings.settings, mode);
  if (server.change === 'removed' && Object.keys(server.doc).length === 0)
    rmSync(mcpJsonPath, { force: true });
  else if (server.change !== 'unchanged') writeJsonSettings(mcpJsonPath, server.doc, mcpJson.mode);
  out.push(...hookMergeLines(settingsRel, merged, command));
  if (protectedSettings.added > 0) {
    out.push(
      `${settingsRel}: added ${protectedSettings.added} rule(s) keeping the agent's tools out of the ledger, keys, state and .continuity/ (permissions.deny, sandbox.filesystem.denyWrite, sandbox.filesystem.denyRead)`,
    );
  }
  if (mcpAdded > 0) {
    out.push(
      `${settingsRel}: approved the continuity MCP server and allowed its restate tool (enabledMcpjsonServers, permissions.allow)`,
    );
  }
  if (!changed) out.push(`${settingsRel}: unchanged`);
  if (server.change === 'removed') {
    out.push(
      `${MCP_JSON}: removed the continuity MCP server, which ran this machine's path (the file is committed); restating takes the shell command until the package is installed in the project`,
    );
  } else if (server.change !== 'unchanged') {
    out.push(
      `${MCP_JSON}: ${server.change} the continuity MCP server (restating needs no shell, so it works with the Bash sandbox on)`,
    );
  }
  if (moved) {
    applyStrip(moveFrom!, moved);
    out.push(
      `${moveFrom!.settingsRel}: moved continuity's hooks to ${settingsRel}${moved.deleted ? ' (deleted it: init created it, and nothing else is in it)' : ''}`,
    );
  }

  // What init added, so --remove takes out exactly that even if the environment changes later.
  ensureDir(join(project, PROJECT_STATE_DIR));
  if (JSON.stringify(all) !== JSON.stringify(before)) {
    writeFileAtomic(join(project, INSTALLED_FILE), `${JSON.stringify(all, null, 2)}\n`);
  }

  out.push(...ensureProjectFiles(project));
  // A machine's own settings file (`.claude/settings.local.json`) stays out of the repository.
  if (/\.local\.json$/.test(settingsRel))
    out.push(...ensureIgnored(project, settingsRel, "this machine's settings, with its paths"));
  // Hooks of ours that run another launcher (a teammate's portable one) were left as they are.
  const kept = ourCommands(mcpSettings.settings, settingsRel, runtime).some((c) => c !== command);
  out.push(...launcherNotes(launch, env, settingsRel, mcp && !serverRegistered, kept));
  out.push(nextStepLine(env.dialect.command));
  return out;
}

/**
 * The registrations for `dialect`, in its event names and timeout unit. Every tool reaches Claude
 * Code's gate (`gateMatcher` default): the ones it does not know get its unknown-tool policy; a
 * dialect without a read-only list keeps its gated tools as the matcher.
 */
function dialectRegistrations(dialect: HookDialect, gateMatcher?: string): HookRegistration[] {
  const readOnly = dialect.readOnlyTools;
  const matcher = gateMatcher ?? (readOnly ? gateMatcherExcluding(readOnly) : dialect.gatedTools.join('|'));
  const events = dialect.events;
  // `PreSkillShellCommand`, `Interrupt` and `onFailure` are Claude Code's (2.1.332, 2.1.337,
  // 2.1.328): another dialect gets none of them, so a runtime that validates its hook settings
  // never sees a key it does not know.
  const claude = dialect.runtime === CLAUDE_CODE_DIALECT.runtime;
  const scale = dialect.timeoutScale ?? 1;
  return hookRegistrations(matcher)
    .filter((r) => !events || events.has(r.event))
    .filter((r) => claude || !CLAUDE_CODE_ONLY_EVENTS.has(r.event))
    .map((r) => (claude || !r.onFailure ? r : { ...r, onFailure: undefined }))
    .map((r) => (dialect.asyncHooks || !r.async ? r : { ...r, async: undefined }))
    .map((r) => ({ ...r, event: runtimeEventName(dialect, r.event), timeout: r.timeout * scale }));
}

/** Options of {@link managedSettingsDocument}. */
export interface ManagedOptions {
  /** Launcher of the hook command. Default this Node and this installation's `bin/continuity.js`, both absolute. */
  command?: string;
  /** Tools that reach the gate (the PreToolUse matcher). Default as init's. */
  gateMatcher?: string;
}

/**
 * `continuity init claude-code --print-managed`: the hooks init writes, as a Claude Code managed
 * settings document, for an administrator to install root-owned where the agent cannot write
 * (`/etc/claude-code/managed-settings.d/50-continuity.json`, or merged into
 * `/etc/claude-code/managed-settings.json`). Claude Code runs managed hooks whatever the project's,
 * the local and the user's settings say (a `disableAllHooks` there included), so an agent that
 * rewrites those files cannot take the gate out of the next session (docs/security.md). Pure:
 * nothing is written.
 *
 * The launcher is absolute (this Node, this installation's entry point) because a managed hook
 * must not depend on a `PATH` the user's shell files, which the agent can edit, decide; install
 * the package root-owned too, or the agent can rewrite the program the hook runs.
 */
export function managedSettingsDocument(options: ManagedOptions = {}): Record<string, unknown> {
  const launcherText = options.command?.trim() || `${shellWord(process.execPath)} ${shellWord(binPath())}`;
  const command = `${launcherText} hook ${CLAUDE_CODE_DIALECT.runtime}`;
  const registrations = dialectRegistrations(CLAUDE_CODE_DIALECT, options.gateMatcher);
  return mergeHookSettings({}, 'managed settings', command, registrations).settings;
}

/** True when a parsed `.mcp.json` registers our server. */
function hasOurServer(doc: unknown): boolean {
  return isRecord(doc) && isRecord(doc.mcpServers) && isOurServer(doc.mcpServers[MCP_SERVER_NAME]);
}

/** True when our server in a parsed `.mcp.json` runs exactly this machine's `launcher`. */
function runsThisMachine(doc: unknown, launcher: string): boolean {
  if (!isRecord(doc) || !isRecord(doc.mcpServers)) return false;
  const current = doc.mcpServers[MCP_SERVER_NAME];
  return isOurServer(current) && JSON.stringify(current) === JSON.stringify(mcpServerEntry(launcher));
}

/** What init says about where its hooks' launcher comes from, and how to make it portable. */
function launcherNotes(
  launch: HookLaunch,
  env: ClaudeCodeEnv,
  settingsRel: string,
  mcpLeftOut: boolean,
  kept: boolean,
): string[] {
  if (launch.origin === 'machine' && kept) {
    return [
      `note: agent-continuity is neither on PATH nor installed in the project; ${settingsRel} has continuity's hooks with another launcher, left as they are: install the project's dependencies (\`npm install\`, with agent-continuity among them) so they run here`,
    ];
  }
  if (launch.origin === 'project') {
    return [
      `note: the hooks run the project's own installation (${launch.text}): a clone runs them once \`npm install\` has installed agent-continuity`,
    ];
  }
  if (launch.origin !== 'machine') return [];
  const local = settingsRel === env.dialect.localSettingsFile;
  const where = local
    ? `so they went into ${settingsRel} (this machine's, git-ignored), not ${env.dialect.settingsFile}`
    : `and ${settingsRel} now holds that path`;
  return [
    `note: agent-continuity is neither on PATH nor installed in the project, so the hooks run "${launch.text}" (this machine's path) ${where}${mcpLeftOut ? `, and ${MCP_JSON} gets no restate server` : ''}; to share them, \`npm i -D agent-continuity\` in the project and run init again`,
  ];
}

/** What taking our hooks and recorded rules out of one settings file leaves, and what becomes of the file. */
interface Strip {
  settings: Record<string, unknown>;
  hooksRemoved: string[];
  rulesRemoved: number;
  /** The file goes: init created it and nothing else is left in it. */
  deleted: boolean;
  /** Its directory goes too when init created it and it is then empty. */
  dirCreated: boolean;
}

/** Plans taking our hooks and the rules `installed` records out of `t` (pure but for nothing: reads only `t`). */
function stripPlan(t: Target, installed: Installed): Strip {
  const { settingsRel, doc, env } = t;
  const hooks = removeHookSettings(doc, settingsRel, env.dialect.runtime);
  const rules = unionRules(installed, dialectRules(env, t.project), installed.mcp);
  const unprotected = removeProtection(hooks.settings, rules);
  const cleaned = removeMcpSettings(unprotected.settings, rules.mcp);
  const seed = env.dialect.settingsSeed;
  const left = JSON.stringify(cleaned.settings);
  const deleted =
    (hooks.removed.length > 0 || cleaned.removed + unprotected.removed > 0) &&
    ((seed !== undefined && left === JSON.stringify(seed)) ||
      (left === '{}' && installed.created.includes(settingsRel)));
  return {
    settings: cleaned.settings,
    hooksRemoved: hooks.removed,
    rulesRemoved: cleaned.removed + unprotected.removed,
    deleted,
    dirCreated: installed.created.includes(dirname(settingsRel)),
  };
}

/** Writes what {@link stripPlan} planned: the file rewritten, or deleted with the directory init made. */
function applyStrip(t: Target, plan: Strip): void {
  if (plan.hooksRemoved.length === 0 && plan.rulesRemoved === 0) return;
  if (plan.deleted) {
    rmSync(t.settingsPath, { force: true });
    if (plan.dirCreated) rmEmptyDir(join(t.project, dirname(t.settingsRel)));
  } else writeJsonSettings(t.settingsPath, plan.settings, t.mode);
}

/** Removes a directory when it is empty; leaves it (and says nothing) otherwise. */
function rmEmptyDir(path: string): void {
  try {
    if (readdirSync(path).length === 0) rmdirSync(path);
  } catch {
    // gone already, or not ours to judge: left as it is
  }
}

/** Takes out exactly what init added, from each of `targets` (read and checked before any is written). */
function remove(targets: readonly Target[]): string[] {
  const first = targets[0]!;
  const { project, env } = first;
  const out: string[] = [];
  const installed = installedRules(project);
  const plans = targets.map((t) => stripPlan(t, installed));
  const mcpJsonPath = join(project, MCP_JSON);
  const mcpJson = registersMcp(env) ? readJsonSettings(mcpJsonPath, MCP_JSON) : undefined;
  const server = mcpJson?.exists ? removeMcpJson(mcpJson.doc) : undefined;
  targets.forEach((t, i) => {
    const plan = plans[i]!;
    const rel = t.settingsRel;
    if (plan.hooksRemoved.length === 0 && plan.rulesRemoved === 0) {
      // This machine's file, absent: nothing to say about it.
      if (t.exists || i === 0) out.push(`${rel}: no continuity hooks or rules; unchanged`);
      return;
    }
    applyStrip(t, plan);
    if (plan.deleted) out.push(`${rel}: deleted (init created it, and nothing else is in it)`);
    if (plan.hooksRemoved.length > 0)
      out.push(`${rel}: removed continuity hooks from ${plan.hooksRemoved.join(', ')}`);
    if (plan.rulesRemoved > 0) out.push(`${rel}: removed ${plan.rulesRemoved} continuity rule(s)`);
  });
  if (server?.removed) {
    if (server.empty) rmSync(mcpJsonPath, { force: true });
    else writeJsonSettings(mcpJsonPath, server.doc, mcpJson!.mode);
    out.push(
      `${MCP_JSON}: removed the continuity MCP server${server.empty ? ' (the file, left empty)' : ''}`,
    );
  }
  const installedPath = join(project, INSTALLED_FILE);
  if (existsSync(installedPath))
    writeFileAtomic(installedPath, `${JSON.stringify(NOTHING_INSTALLED, null, 2)}\n`);
  out.push(PROJECT_FILES_KEPT);
  return out;
}
