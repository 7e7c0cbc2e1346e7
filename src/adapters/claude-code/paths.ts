/**
 * Where the adapter keeps its own state, outside any repository working tree. Lean (the gate
 * imports it): `node:path`, `node:os` and `node:crypto` only.
 *
 * Layout under the state root (`CONTINUITY_STATE_DIR`, else `$XDG_STATE_HOME/agent-continuity`,
 * else `~/.local/state/agent-continuity`, the ledger's default directory too):
 *
 * ```
 * claude-code/sessions/<sha256(session id)>/gate.json      latest boundary state (derived cache)
 * claude-code/sessions/<sha256(session id)>/activity        latest activity state
 * claude-code/sessions/<sha256(session id)>/<boundary>.*    once-per-boundary markers
 * claude-code/projects/<sha256(project dir)>.json           the project's current session id
 * claude-code/spool/*.json                                  OTLP requests not yet delivered
 * ```
 *
 * File names are digests, so a hostile session id or directory name can never become a path.
 */
import { createHash } from 'node:crypto';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

/** Environment variable overriding the state root. */
export const STATE_DIR_ENV = 'CONTINUITY_STATE_DIR';

/** The state root shared with the ledger's default location. */
export function stateRoot(env: NodeJS.ProcessEnv = process.env): string {
  const explicit = env[STATE_DIR_ENV];
  if (explicit) return resolve(explicit);
  const xdg = env.XDG_STATE_HOME;
  const base = xdg ? resolve(xdg) : join(env.HOME ?? homedir(), '.local', 'state');
  return join(base, 'agent-continuity');
}

/** The adapter's directory under the state root. */
export function adapterDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(stateRoot(env), 'claude-code');
}

function key(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 32);
}

/** The directory of one session's derived state. */
export function sessionDir(sessionId: string, env: NodeJS.ProcessEnv = process.env): string {
  return join(adapterDir(env), 'sessions', key(sessionId));
}

/** The gate cache of one session: its latest boundary state. */
export function gateFile(sessionId: string, env: NodeJS.ProcessEnv = process.env): string {
  return join(sessionDir(sessionId, env), 'gate.json');
}

/** The latest activity state of one session. */
export function activityFile(sessionId: string, env: NodeJS.ProcessEnv = process.env): string {
  return join(sessionDir(sessionId, env), 'activity');
}

/** A once-per-boundary marker, e.g. `recorded` (boundary record written) or `injected`. */
export function markerFile(
  sessionId: string,
  boundaryId: string,
  what: string,
  env: NodeJS.ProcessEnv = process.env,
): string {
  return join(sessionDir(sessionId, env), `${key(boundaryId)}.${what}`);
}

/** The file naming the current session of a project directory (what `continuity observe` defaults to). */
export function projectFile(projectDir: string, env: NodeJS.ProcessEnv = process.env): string {
  return join(adapterDir(env), 'projects', `${key(resolve(projectDir))}.json`);
}

/** The spool of OTLP requests that could not be delivered yet. */
export function spoolDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(adapterDir(env), 'spool');
}
