/**
 * `continuity init codex`: merges the adapter's hooks into Codex's `hooks.json` and **trusts
 * them** in `config.toml`, adds `.continuity/` to the project's `.gitignore` and creates the task
 * record template. `--remove` takes out exactly our hooks and our trust entries and keeps
 * everyone else's.
 *
 * Where (docs/codex.md):
 * - default: `$CODEX_HOME/hooks.json` (`~/.codex`), so the hooks run for every project; they act
 *   only where a `.continuity/` directory exists at or above the session's working directory;
 * - `--project-hooks`: `<project>/.codex/hooks.json`, which Codex loads only for a project the
 *   user trusts (`[projects."<path>"] trust_level = "trusted"`, or `codex exec --trust`); init does
 *   not trust the project for you.
 *
 * Trust: Codex 0.171.0 runs a hook only when `$CODEX_HOME/config.toml` holds its `trusted_hash`
 * (./trust.ts), and skips it silently otherwise. Init writes one `[hooks.state."<key>"]` table per
 * hook of ours, so they run without a further step; the keys name the hook's position, so init
 * also moves the trust entries of hooks that `--remove` shifts down. Review what is trusted with
 * `codex app-server`'s `hooks/list`, or in the TUI's hooks view.
 *
 * Idempotent: our hooks (a command running `hook codex`) are left as they are unless `--command`
 * names another launcher, which rewrites their command (and their trust hash).
 */
import { chmodSync, existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { InputError } from '../../decision/problems.js';
import {
  type HookGroupMerge,
  type HookGroups,
  hookMergeLines,
  mergeHookGroups,
} from '../core/hook-groups.js';
import { onPath } from '../core/process.js';
import {
  ensureProjectFiles,
  hookLauncher,
  nextStepLine,
  notOnPathNote,
  PROJECT_FILES_KEPT,
} from '../core/project.js';
import { ensureDir, isRecord, writeFileAtomic } from '../core/state.js';
import { CODEX_CONFIG_FILE, CODEX_HOOKS_FILE, DEFAULT_GATED_TOOLS, resolveCodexEnv } from './config.js';
import { editTrust, parseConfigToml, trustedHashes } from './toml.js';
import { type HookHandler, trustedHash, trustKey } from './trust.js';

/** Recognizes the adapter's hooks in an existing hooks file, whatever launcher they use. */
const OURS = /\bhook\s+codex\b/;

/** One hook registration the adapter wants (the core's HookGroupRegistration, in Codex's terms). */
export interface CodexHookRegistration {
  event: string;
  /** Codex matcher (a regex on the tool name); omitted for events that match everything. */
  matcher?: string;
  /** Seconds before Codex gives up on the hook. */
  timeout: number;
  /** Why it is there (printed by init). */
  purpose: string;
}

/**
 * The registrations. Timeouts are ceilings: a hook that times out fails open (the tool runs), so
 * the gate gets room for a loaded machine; the recording hooks give up by themselves after
 * `CONTINUITY_HOOK_DEADLINE_MS`. SessionEnd is not used (Codex gives it 1 s).
 */
export function codexHookRegistrations(gateMatcher: string): CodexHookRegistration[] {
  return [
    { event: 'PreToolUse', matcher: gateMatcher, timeout: 30, purpose: 'write gate' },
    { event: 'PreCompact', timeout: 30, purpose: 'pre capture of the task record' },
    { event: 'PostCompact', timeout: 30, purpose: 'confirms a compaction' },
    {
      event: 'SessionStart',
      timeout: 30,
      purpose: 'current session; confirms a compaction and asks for the restatement (again on resume)',
    },
    { event: 'PostToolUse', timeout: 10, purpose: 'activity: working' },
    { event: 'UserPromptSubmit', timeout: 10, purpose: 'activity: working' },
    { event: 'PermissionRequest', timeout: 10, purpose: 'activity: waiting_human' },
    { event: 'Stop', timeout: 10, purpose: 'activity: idle' },
  ];
}

/** Options of `continuity init codex`. */
export interface CodexInitOptions {
  /** Project directory. */
  project: string;
  /** Codex's home (`config.toml`, and `hooks.json` by default). Default `CODEX_HOME`, else `~/.codex`. */
  codexHome?: string;
  /** Write the hooks into `<project>/.codex/hooks.json` instead of `$CODEX_HOME/hooks.json`. */
  projectHooks?: boolean;
  /** Launcher of the hook command, e.g. `node /path/to/bin/continuity.js`; rewrites ours when it differs. */
  command?: string;
  /** Tools the gate checks (the PreToolUse matcher). Default `Bash|apply_patch`. */
  gateMatcher?: string;
  /** Take out exactly what init added. */
  remove?: boolean;
  env?: NodeJS.ProcessEnv;
}

type Group = Record<string, unknown> & { hooks: unknown[] };
type Hooks = HookGroups;

function isOurs(h: unknown): boolean {
  return isRecord(h) && h.type === 'command' && typeof h.command === 'string' && OURS.test(h.command);
}

/** Reads and checks a hooks.json document: `{ hooks: { <Event>: [ { matcher?, hooks: [...] } ] } }`. */
// Stricter than Claude Code's hooksOf on purpose: every group's handlers are walked for their trust keys.
function hooksOf(doc: unknown, source: string): { file: Record<string, unknown>; hooks: Hooks } {
  if (!isRecord(doc)) throw new InputError(source, [{ path: '(root)', message: 'expected a JSON object' }]);
  const raw = doc.hooks ?? {};
  if (!isRecord(raw))
    throw new InputError(source, [{ path: 'hooks', message: 'expected an object of event → hook groups' }]);
  const hooks: Hooks = {};
  for (const [event, groups] of Object.entries(raw)) {
    if (!Array.isArray(groups))
      throw new InputError(source, [{ path: `hooks.${event}`, message: 'expected an array of hook groups' }]);
    groups.forEach((g, i) => {
      if (!isRecord(g) || !Array.isArray(g.hooks))
        throw new InputError(source, [
          { path: `hooks.${event}[${i}].hooks`, message: 'expected an array of hook handlers' },
        ]);
    });
    hooks[event] = groups;
  }
  return { file: { ...doc }, hooks };
}

/** The trust entries of our handlers in `hooks`: key → hash. */
export function ourTrust(hooks: Hooks, sourceFile: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const [event, groups] of Object.entries(hooks)) {
    groups.forEach((g, gi) => {
      const group = g as Group;
      const matcher = typeof group.matcher === 'string' ? group.matcher : undefined;
      group.hooks.forEach((h, hi) => {
        if (isOurs(h))
          out.set(trustKey(sourceFile, event, gi, hi), trustedHash(event, matcher, h as HookHandler));
      });
    });
  }
  return out;
}

/** What merging did. */
export type CodexMergeResult = HookGroupMerge<CodexHookRegistration>;

/**
 * Merges the registrations into a hooks document's `hooks` (pure): ours are appended after
 * everyone else's groups, so no other hook changes position (its trust key stays valid).
 */
export function mergeCodexHooks(
  hooks: Hooks,
  command: string,
  registrations: readonly CodexHookRegistration[],
  rewrite: boolean,
): CodexMergeResult {
  return mergeHookGroups(hooks, command, registrations, rewrite, isOurs);
}

// Not the core's merge counterpart: a removal shifts other hooks' positions, hence their trust keys.
/**
 * Takes out exactly our handlers (pure). A group left empty goes, and so does an event left with
 * none. `moved` maps the trust key of every other handler whose position changed to its new key.
 */
export function removeCodexHooks(
  hooks: Hooks,
  sourceFile: string,
): { hooks: Hooks; removed: string[]; moved: Map<string, string> } {
  const out: Hooks = {};
  const removed = new Set<string>();
  const moved = new Map<string, string>();
  for (const [event, groups] of Object.entries(hooks)) {
    const kept: unknown[] = [];
    groups.forEach((g, gi) => {
      const group = g as Group;
      const keep = group.hooks.filter((h) => !isOurs(h));
      if (keep.length < group.hooks.length) removed.add(event);
      if (keep.length === 0) return;
      const ngi = kept.length;
      let nhi = 0;
      group.hooks.forEach((h, hi) => {
        if (isOurs(h)) return;
        const from = trustKey(sourceFile, event, gi, hi);
        const to = trustKey(sourceFile, event, ngi, nhi++);
        if (from !== to) moved.set(from, to);
      });
      kept.push(keep.length === group.hooks.length ? group : { ...group, hooks: keep });
    });
    if (kept.length > 0) out[event] = kept;
  }
  return { hooks: out, removed: [...removed], moved };
}

function readText(path: string): { text: string | undefined; mode: number } {
  if (!existsSync(path)) return { text: undefined, mode: 0o600 };
  return { text: readFileSync(path, 'utf8'), mode: statSync(path).mode & 0o777 };
}

function parseHooksFile(text: string | undefined, source: string): unknown {
  if (text === undefined || text.trim() === '') return {};
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw new InputError(source, [
      { path: '(root)', message: `invalid JSON (${(e as Error).message}); fix it, nothing was changed` },
    ]);
  }
}

function writeWithMode(path: string, text: string, mode: number): void {
  ensureDir(dirname(path));
  writeFileAtomic(path, text);
  // writeFileAtomic creates 0600; keep the mode a file had (a new file stays 0600).
  chmodSync(path, mode);
}

/** Runs init (or `--remove`) and returns the lines it prints. Nothing is written when a file is bad. */
export function runCodexInit(options: CodexInitOptions): string[] {
  const env = resolveCodexEnv(options.env ?? process.env);
  const project = resolve(options.project);
  const codexHome = options.codexHome ? resolve(options.codexHome) : env.codexHome;
  const hooksPath = options.projectHooks
    ? join(project, '.codex', CODEX_HOOKS_FILE)
    : join(codexHome, CODEX_HOOKS_FILE);
  const configPath = join(codexHome, CODEX_CONFIG_FILE);
  const hooksLabel = options.projectHooks ? `.codex/${CODEX_HOOKS_FILE}` : hooksPath;
  const hooksFile = readText(hooksPath);
  const configFile = readText(configPath);
  const { file, hooks } = hooksOf(parseHooksFile(hooksFile.text, hooksLabel), hooksLabel);
  const configText = configFile.text ?? '';
  parseConfigToml(configText, configPath); // a bad config.toml stops everything before any write
  const out: string[] = [];

  if (options.remove) {
    const before = ourTrust(hooks, hooksPath);
    const r = removeCodexHooks(hooks, hooksPath);
    const current = trustedHashes(parseConfigToml(configText, configPath));
    const changes = new Map<string, string | null>();
    for (const key of before.keys()) changes.set(key, null);
    // Another hook that moved up keeps its trust (or its lack of it) under its new key.
    const targets = new Set(r.moved.values());
    for (const [from, to] of r.moved) changes.set(to, current.get(from) ?? null);
    for (const from of r.moved.keys()) if (!targets.has(from)) changes.set(from, null);
    const nextConfig = editTrust(configText, changes, configPath);
    const nextHooks = `${JSON.stringify(withHooks(file, r.hooks), null, 2)}\n`;
    if (r.removed.length > 0) {
      writeWithMode(hooksPath, nextHooks, hooksFile.mode);
      out.push(`${hooksLabel}: removed continuity hooks from ${r.removed.join(', ')}`);
    } else out.push(`${hooksLabel}: no continuity hooks; unchanged`);
    if (nextConfig !== configText) {
      writeWithMode(configPath, nextConfig, configFile.mode);
      out.push(`${configPath}: removed the trust entries of continuity's hooks`);
    }
    out.push(PROJECT_FILES_KEPT);
    return out;
  }

  const explicit = options.command?.trim();
  const onPathNow = onPath('continuity', env.path);
  const launcherText = hookLauncher(explicit, onPathNow);
  const command = `${launcherText} hook codex`;
  const merged = mergeCodexHooks(
    hooks,
    command,
    codexHookRegistrations(options.gateMatcher ?? DEFAULT_GATED_TOOLS.join('|')),
    Boolean(explicit),
  );
  const before = ourTrust(hooks, hooksPath);
  const after = ourTrust(merged.hooks, hooksPath);
  const changes = new Map<string, string | null>();
  for (const key of before.keys()) if (!after.has(key)) changes.set(key, null);
  for (const [key, hash] of after) changes.set(key, hash);
  const current = trustedHashes(parseConfigToml(configText, configPath));
  const newlyTrusted = [...after].filter(([k, h]) => current.get(k) !== h).length;
  const nextConfig = editTrust(configText, changes, configPath);
  const hooksChanged = merged.added.length > 0 || merged.rewritten.length > 0 || merged.upgraded.length > 0;

  // Trust first: a trusted hook that is not there yet is nothing; a hook there but untrusted is skipped silently.
  if (nextConfig !== configText) writeWithMode(configPath, nextConfig, configFile.mode);
  if (hooksChanged)
    writeWithMode(hooksPath, `${JSON.stringify(withHooks(file, merged.hooks), null, 2)}\n`, hooksFile.mode);
  out.push(...hookMergeLines(hooksLabel, merged, command));
  if (!hooksChanged) out.push(`${hooksLabel}: unchanged`);
  out.push(
    newlyTrusted > 0
      ? `${configPath}: trusted ${newlyTrusted} continuity hook(s) ([hooks.state."…"] trusted_hash), so Codex runs them without asking; review them with codex app-server hooks/list or the TUI's hooks view`
      : `${configPath}: continuity's hooks already trusted`,
  );
  out.push(...ensureProjectFiles(project));
  if (options.projectHooks) {
    out.push(
      `note: Codex loads .codex/hooks.json only for a trusted project: trust ${project} in the TUI or with \`codex exec --trust\` (init does not do it for you)`,
    );
  }
  if (!explicit && !onPathNow) {
    out.push(notOnPathNote());
  }
  out.push(nextStepLine('codex'));
  return out;
}

function withHooks(file: Record<string, unknown>, hooks: Hooks): Record<string, unknown> {
  const out = { ...file };
  if (Object.keys(hooks).length > 0) out.hooks = hooks;
  else delete out.hooks;
  return out;
}
