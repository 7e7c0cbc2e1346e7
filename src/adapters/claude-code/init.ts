/**
 * `continuity init claude-code`: merges the adapter's hooks into `.claude/settings.json` and
 * creates the task record template. Idempotent: a hook already present (a command running
 * `hook claude-code`) is left as it is; the user's other hooks and settings are kept untouched.
 *
 * Settings shape (Claude Code): `hooks.<Event>[] = { matcher?, hooks: [{ type: "command",
 * command, timeout (seconds) }] }`.
 */
import { accessSync, chmodSync, constants, existsSync, readFileSync, statSync } from 'node:fs';
import { delimiter, join, relative } from 'node:path';
import { InputError } from '../../decision/problems.js';
import { DEFAULT_GATED_TOOLS, DEFAULT_TASK_RECORD, PROJECT_STATE_DIR } from './config.js';
import { ensureDir, isRecord, writeFileAtomic } from './state.js';
import { taskRecordTemplate } from './task-record.js';

/** The command each hook runs, unless `--command` gives another launcher. */
export const DEFAULT_HOOK_COMMAND = 'continuity hook claude-code';
/** Recognizes the adapter's hooks in an existing settings file, whatever launcher they use. */
const OURS = /\bhook\s+claude-code\b/;

/** One hook registration the adapter wants. */
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
 * takes tens of milliseconds); PreCompact gets the most room because it reads the task record,
 * appends to the ledger and exports, and a hook that times out only loses its own evidence.
 */
export function hookRegistrations(gateMatcher: string): HookRegistration[] {
  return [
    { event: 'PreToolUse', matcher: gateMatcher, timeout: 5, purpose: 'write gate' },
    { event: 'PreCompact', timeout: 15, purpose: 'pre snapshot of the task record' },
    { event: 'PostCompact', timeout: 10, purpose: 'boundary record' },
    { event: 'SessionStart', timeout: 10, purpose: 'current session; restatement request after compaction' },
    {
      event: 'InstructionsLoaded',
      matcher: 'compact',
      timeout: 10,
      purpose: 'restatement request after compaction',
    },
    { event: 'PostToolUse', matcher: '*', timeout: 5, purpose: 'activity: working' },
    { event: 'UserPromptSubmit', timeout: 5, purpose: 'activity: working' },
    { event: 'Notification', timeout: 5, purpose: 'activity: waiting_human' },
    { event: 'Stop', timeout: 5, purpose: 'activity: idle' },
  ];
}

/** What merging did. */
export interface MergeResult {
  settings: Record<string, unknown>;
  added: HookRegistration[];
  alreadyPresent: string[];
  /** Hook groups of the user's that were kept. */
  keptGroups: number;
}

/**
 * Merges the registrations into a parsed settings document (pure). Throws {@link InputError}
 * naming `source` and the field when the document's shape is not Claude Code's.
 */
export function mergeHookSettings(
  doc: unknown,
  source: string,
  command: string,
  registrations: readonly HookRegistration[],
): MergeResult {
  if (!isRecord(doc)) throw new InputError(source, [{ path: '(root)', message: 'expected a JSON object' }]);
  const settings: Record<string, unknown> = { ...doc };
  const hooksRaw = settings.hooks ?? {};
  if (!isRecord(hooksRaw))
    throw new InputError(source, [{ path: 'hooks', message: 'expected an object of event → hook groups' }]);
  const hooks: Record<string, unknown> = { ...hooksRaw };
  const added: HookRegistration[] = [];
  const alreadyPresent: string[] = [];
  let keptGroups = 0;
  for (const [event, groups] of Object.entries(hooks)) {
    if (!Array.isArray(groups)) {
      throw new InputError(source, [{ path: `hooks.${event}`, message: 'expected an array of hook groups' }]);
    }
    keptGroups += groups.filter(
      (g) => !(isRecord(g) && Array.isArray(g.hooks) && g.hooks.some(isOurs)),
    ).length;
  }
  for (const reg of registrations) {
    const groups = (hooks[reg.event] as unknown[] | undefined) ?? [];
    if (groups.some((g) => isRecord(g) && Array.isArray(g.hooks) && g.hooks.some(isOurs))) {
      alreadyPresent.push(reg.event);
      continue;
    }
    const group: Record<string, unknown> = {};
    if (reg.matcher !== undefined) group.matcher = reg.matcher;
    group.hooks = [{ type: 'command', command, timeout: reg.timeout }];
    hooks[reg.event] = [...groups, group];
    added.push(reg);
  }
  settings.hooks = hooks;
  return { settings, added, alreadyPresent, keptGroups };
}

function isOurs(h: unknown): boolean {
  return isRecord(h) && typeof h.command === 'string' && OURS.test(h.command);
}

/** True when an executable named `name` is on `PATH`. */
export function onPath(name: string, env: NodeJS.ProcessEnv): boolean {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    try {
      accessSync(join(dir, name), constants.X_OK);
      return true;
    } catch {
      // Not in this directory.
    }
  }
  return false;
}

/** Options of `continuity init claude-code`. */
export interface InitOptions {
  /** Project directory. Default the working directory. */
  project: string;
  /** Settings file, relative to the project. Default `.claude/settings.json`. */
  settings?: string;
  /** Launcher of the hook command, e.g. `node /path/to/bin/continuity.js`. Default `continuity`. */
  command?: string;
  /** Tools the gate checks (the PreToolUse matcher). Default Edit|Write|MultiEdit|NotebookEdit|Bash. */
  gateMatcher?: string;
  env?: NodeJS.ProcessEnv;
}

/** Runs init and returns the lines it prints. */
export function runInit(options: InitOptions): string[] {
  const env = options.env ?? process.env;
  const project = options.project;
  const settingsRel = options.settings ?? join('.claude', 'settings.json');
  const settingsPath = join(project, settingsRel);
  const launcher = options.command?.trim() || 'continuity';
  const command = `${launcher} hook claude-code`;
  const gateMatcher = options.gateMatcher ?? DEFAULT_GATED_TOOLS.join('|');
  const out: string[] = [];

  let doc: unknown = {};
  let mode = 0o644;
  if (existsSync(settingsPath)) {
    const text = readFileSync(settingsPath, 'utf8');
    mode = statSync(settingsPath).mode & 0o777;
    try {
      doc = text.trim() === '' ? {} : JSON.parse(text);
    } catch (e) {
      throw new InputError(settingsRel, [
        { path: '(root)', message: `invalid JSON (${(e as Error).message}); fix it, nothing was changed` },
      ]);
    }
  }
  const merged = mergeHookSettings(doc, settingsRel, command, hookRegistrations(gateMatcher));
  if (merged.added.length > 0) {
    ensureDir(join(project, '.claude'));
    writeFileAtomic(settingsPath, `${JSON.stringify(merged.settings, null, 2)}\n`);
    chmodSync(settingsPath, mode);
    for (const r of merged.added) {
      out.push(
        `${settingsRel}: added ${r.event}${r.matcher ? ` (matcher ${r.matcher})` : ''}, timeout ${r.timeout} s: ${r.purpose}`,
      );
    }
  }
  if (merged.alreadyPresent.length > 0) {
    out.push(`${settingsRel}: already configured: ${merged.alreadyPresent.join(', ')} (left as they are)`);
  }
  if (merged.keptGroups > 0) out.push(`${settingsRel}: kept ${merged.keptGroups} hook group(s) of your own`);
  if (merged.added.length === 0) out.push(`${settingsRel}: unchanged`);

  const taskPath = join(project, DEFAULT_TASK_RECORD);
  const taskRel = relative(project, taskPath);
  if (existsSync(taskPath)) {
    out.push(`${taskRel}: exists, left as it is`);
  } else {
    ensureDir(join(project, PROJECT_STATE_DIR));
    writeFileAtomic(taskPath, taskRecordTemplate());
    out.push(
      `${taskRel}: created from the template; fill in 3 to 7 decisions of the current task and delete the "template" line`,
    );
  }
  if (!options.command && !onPath('continuity', env)) {
    out.push(
      'warning: `continuity` is not on PATH, so the hooks cannot run yet: run `npm link` in the agent-continuity checkout, ' +
        'or run init again with --command "node /path/to/agent-continuity/bin/continuity.js"',
    );
  }
  out.push(
    'next: start a local receiver with `continuity serve` (optional: spans are spooled until one answers), then run claude in this project',
  );
  return out;
}
