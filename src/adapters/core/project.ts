/**
 * What `continuity init <runtime>` does in the project for every runtime: `.continuity/` into
 * the project's `.gitignore` (the task record holds raw decision values) and the task record
 * template; and where this checkout's `bin/continuity.js` is, for hooks that run from it.
 */
import { chmodSync, existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_TASK_RECORD, PROJECT_STATE_DIR } from './config.js';
import { writeFileAtomic } from './state.js';
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

/** This checkout's `bin/continuity.js`, absolute. */
export function binPath(): string {
  return resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'bin', 'continuity.js');
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
