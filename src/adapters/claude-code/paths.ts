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
 * File names are hashes, so a hostile session id or directory name can never become a path. The
 * hash is a 128-bit FNV-1a, not SHA-256: the gate reads these files on every tool call and
 * `node:crypto` would cost it a third of a bare `node -e 0`. Nothing trusts the hash: the gate
 * cache records its session id and is ignored (re-derived from the ledger) when it does not match.
 */
import { join, resolve } from 'node:path';

/** Environment variable overriding the state root. */
export const STATE_DIR_ENV = 'CONTINUITY_STATE_DIR';

/** The state root shared with the ledger's default location. */
export function stateRoot(env: NodeJS.ProcessEnv = process.env): string {
  const explicit = env[STATE_DIR_ENV];
  if (explicit) return resolve(explicit);
  const xdg = env.XDG_STATE_HOME;
  const home = env.HOME ?? process.getBuiltinModule?.('node:os').homedir() ?? '.';
  const base = xdg ? resolve(xdg) : join(home, '.local', 'state');
  return join(base, 'agent-continuity');
}

/** The adapter's directory under the state root. */
export function adapterDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(stateRoot(env), 'claude-code');
}

// FNV-1a 32-bit offset bases of four independent lanes (the first is the standard one).
const LANES = [0x811c9dc5, 0x01000193 ^ 0x5bd1e995, 0x27d4eb2f, 0x165667b1];

/** 128-bit FNV-1a (four 32-bit lanes) of the UTF-16 code units of `text`, as 32 hex digits. */
export function fileKey(text: string): string {
  let out = '';
  for (const [lane, basis] of LANES.entries()) {
    let h = basis >>> 0;
    for (let i = 0; i < text.length; i++) {
      h ^= text.charCodeAt(i) + lane;
      h = Math.imul(h, 0x01000193) >>> 0;
    }
    out += h.toString(16).padStart(8, '0');
  }
  return out;
}

const key = fileKey;

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
