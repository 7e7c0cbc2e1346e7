/**
 * What `continuity init <runtime>` does in the project for every runtime besides registering its
 * hooks or plugin: `.continuity/` into the project's `.gitignore` (the task record holds raw
 * decision values) and the task record template; a JSON settings file read and rewritten without
 * losing anyone else's keys; and where this installation (`bin/continuity.js`, `dist/`) is, for
 * hooks and plugins that run from it. Runtime-neutral: each runtime's init decides which file it
 * edits and what goes in it. Never loaded by a gate's fast path.
 */
import { chmodSync, existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { delimiter, dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InputError } from '../../decision/problems.js';
import { DEFAULT_TASK_RECORD, PROJECT_STATE_DIR } from './config.js';
import { findOnPath, shellWord } from './process.js';
import { ensureDir, writeFileAtomic } from './state.js';
import { taskRecordTemplate } from './task-record.js';

const GITIGNORE_LINE = `${PROJECT_STATE_DIR}/`;

/** Adds `.continuity/` to a `.gitignore`'s text (pure); `undefined` when it is already ignored. */
export function gitignoreWith(text: string | undefined): string | undefined {
  const lines = (text ?? '').split(/\r?\n/).map((l) => l.trim());
  if (lines.some((l) => ['.continuity', '.continuity/', '/.continuity', '/.continuity/'].includes(l))) {
    return undefined;
  }
  const base = text ?? '';
  const sep = base.length === 0 || base.endsWith('\n') ? '' : '\n';
  return `${base}${sep}# agent-continuity: the task record holds raw decision values\n${GITIGNORE_LINE}\n`;
}

/**
 * Adds `path` (project-relative, e.g. `.claude/settings.local.json`) to a `.gitignore`'s text
 * (pure); `undefined` when that exact line is already there.
 */
export function gitignoreWithPath(text: string | undefined, path: string, why: string): string | undefined {
  const line = `/${path.replace(/^\/+/, '')}`;
  const lines = (text ?? '').split(/\r?\n/).map((l) => l.trim());
  if (lines.includes(line) || lines.includes(line.slice(1))) return undefined;
  const base = text ?? '';
  const sep = base.length === 0 || base.endsWith('\n') ? '' : '\n';
  return `${base}${sep}# agent-continuity: ${why}\n${line}\n`;
}

/**
 * Keeps a machine's own settings file out of the repository: `path` into the project's
 * `.gitignore` (created, or appended once; its mode kept). Returns the lines init prints.
 */
export function ensureIgnored(project: string, path: string, why: string): string[] {
  const gitignore = join(project, '.gitignore');
  const next = gitignoreWithPath(
    existsSync(gitignore) ? readFileSync(gitignore, 'utf8') : undefined,
    path,
    why,
  );
  if (next === undefined) return [];
  const gMode = existsSync(gitignore) ? statSync(gitignore).mode & 0o777 : 0o644;
  writeFileAtomic(gitignore, next);
  chmodSync(gitignore, gMode);
  return [`.gitignore: added /${path} (${why})`];
}

/** The root of this installation (the directory holding `bin/` and `dist/`), from `src/` or `dist/`. */
export function packageRoot(): string {
  return resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
}

/** This checkout's `bin/continuity.js`, absolute. */
export function binPath(): string {
  return join(packageRoot(), 'bin', 'continuity.js');
}

/**
 * The launcher a hook command starts with: the user's `--command`, else `continuity` when it is
 * on PATH, else this checkout's bin run by `node`, as one shell word (the runtimes run hook
 * commands through a shell, and a checkout path may hold a space or a quote).
 */
export function hookLauncher(explicit: string | undefined, onPathNow: boolean): string {
  return explicit || (onPathNow ? 'continuity' : machineLauncher());
}

/** This installation's bin run by `node`, by its absolute path: what only this machine can run. */
export function machineLauncher(): string {
  return `node ${shellWord(binPath())}`;
}

/** The package's command as `npm install` links it into a project (`node_modules/.bin/continuity`). */
export const PROJECT_BIN = 'node_modules/.bin/continuity';

/**
 * Where a hook's launcher comes from, which decides whether it may go into a committed file:
 * the user's `--command` (`explicit`), `continuity` on PATH (`path`), the project's own
 * installation through the runtime's project variable (`project`: any clone runs it after
 * `npm install`), or this installation's absolute path (`machine`: only this machine has it).
 */
export type LauncherOrigin = 'explicit' | 'path' | 'project' | 'machine';

/** A hook launcher and where it comes from. */
export interface HookLaunch {
  origin: LauncherOrigin;
  /** The start of the hook command (`continuity`, `"$CLAUDE_PROJECT_DIR"/node_modules/.bin/continuity`, `node /abs/bin/continuity.js`). */
  text: string;
}

function realOrUndefined(path: string): string | undefined {
  try {
    return realpathSync.native(path);
  } catch {
    return undefined;
  }
}

/**
 * Chooses the launcher of the hooks init writes, portable first: the user's `--command`; else
 * `continuity` when `path` has one that is this installation (a `node_modules/.bin` directory on
 * it is left out: `npx`/`npm exec` put the project's there, and the runtime's hooks do not have
 * it); else, when the project's `node_modules/.bin/continuity` is this installation and the
 * runtime names the project in a variable its hooks get (`projectDirVar`, e.g.
 * `CLAUDE_PROJECT_DIR`), that command under the variable (`"$CLAUDE_PROJECT_DIR"/…`, which the
 * hook's shell expands whatever the working directory); else this installation's bin by absolute path.
 */
export function chooseHookLauncher(options: {
  explicit?: string;
  project: string;
  path: string;
  projectDirVar?: string;
  /** The runtime puts the directory in, shell-quoted, for `$projectDirVar` (Gemini CLI): left unquoted. */
  projectDirQuoted?: boolean;
}): HookLaunch {
  const explicit = options.explicit?.trim();
  if (explicit) return { origin: 'explicit', text: explicit };
  const self = realOrUndefined(binPath());
  const npmBin = `${sep}node_modules${sep}.bin`;
  const globalPath = options.path
    .split(delimiter)
    .filter((d) => !resolve(d || '.').endsWith(npmBin))
    .join(delimiter);
  const found = findOnPath('continuity', globalPath);
  if (self && found && realOrUndefined(found) === self) return { origin: 'path', text: 'continuity' };
  const variable = options.projectDirVar;
  if (
    self &&
    variable &&
    /^[A-Za-z_][A-Za-z0-9_]*$/.test(variable) &&
    realOrUndefined(join(options.project, PROJECT_BIN)) === self
  ) {
    const ref = options.projectDirQuoted ? `$${variable}` : `"$${variable}"`;
    return { origin: 'project', text: `${ref}/${PROJECT_BIN}` };
  }
  return { origin: 'machine', text: machineLauncher() };
}

/** What `init --remove` says of the project files init made: they stay (the task record is the user's). */
export const PROJECT_FILES_KEPT = `${GITIGNORE_LINE} and its .gitignore line are left as they are (the task record is yours); delete them if you no longer need them`;

/**
 * What init says about human authority: an approval counts only when signed with the approver
 * key, and the task record only holds against the agent once sealed (docs/security.md).
 */
export const SEAL_STEP_LINE =
  'seal: once the task record is filled in, run `continuity key init` (once) and `continuity task seal` yourself, in a terminal: approvals and task record changes then need your passphrase';

/** The last lines init prints: sealing, then what to run next, `binary` being the agent the user starts. */
export function nextStepLine(binary: string): string {
  return `${SEAL_STEP_LINE}\nnext: start a local receiver with \`continuity serve\` (optional: spans are spooled until one answers), then run ${binary} in this project`;
}

/** What init notes when its hooks run this checkout's bin because `continuity` is not on PATH. */
export function notOnPathNote(): string {
  return `note: \`continuity\` is not on PATH, so the hooks run "node ${binPath()}"; the agent is told to restate with the same command`;
}

/**
 * Adds `.continuity/` to the project's `.gitignore` (created, or appended once; its mode kept) and
 * creates the task record template unless a task record exists. Returns the lines init prints.
 */
export function ensureProjectFiles(project: string): string[] {
  const out: string[] = [];
  const gitignore = join(project, '.gitignore');
  const next = gitignoreWith(existsSync(gitignore) ? readFileSync(gitignore, 'utf8') : undefined);
  if (next === undefined) out.push(`.gitignore: already ignores ${GITIGNORE_LINE}`);
  else {
    const gMode = existsSync(gitignore) ? statSync(gitignore).mode & 0o777 : 0o644;
    writeFileAtomic(gitignore, next);
    chmodSync(gitignore, gMode);
    out.push(`.gitignore: added ${GITIGNORE_LINE} (the task record holds raw decision values)`);
  }
  const taskPath = join(project, DEFAULT_TASK_RECORD);
  const taskRel = relative(project, taskPath);
  if (existsSync(taskPath)) {
    out.push(`${taskRel}: exists, left as it is`);
  } else {
    writeFileAtomic(taskPath, taskRecordTemplate());
    out.push(
      `${taskRel}: created from the template; fill in 3 to 7 decisions of the current task and delete the "template" line`,
    );
  }
  return out;
}

/**
 * Reads a JSON settings file for rewriting: its document (`{}` when there is no file or it is
 * empty), its mode and whether it exists. A file that is not JSON is an {@link InputError} naming
 * `rel`: init then writes nothing.
 */
export function readJsonSettings(path: string, rel: string): { doc: unknown; mode: number; exists: boolean } {
  if (!existsSync(path)) return { doc: {}, mode: 0o644, exists: false };
  const text = readFileSync(path, 'utf8');
  const mode = statSync(path).mode & 0o777;
  try {
    return { doc: text.trim() === '' ? {} : JSON.parse(text), mode, exists: true };
  } catch (e) {
    throw new InputError(rel, [
      { path: '(root)', message: `invalid JSON (${(e as Error).message}); fix it, nothing was changed` },
    ]);
  }
}

/** Writes a JSON settings file atomically (two-space indent), keeping `mode`. */
export function writeJsonSettings(path: string, doc: unknown, mode: number): void {
  ensureDir(dirname(path));
  writeFileAtomic(path, `${JSON.stringify(doc, null, 2)}\n`);
  chmodSync(path, mode);
}
