/**
 * The default state directory, shared by the ledger and the hooks' state. Node built-ins only:
 * the write gate's fast path loads it on every tool call.
 */
import { homedir, userInfo } from 'node:os';
import { isAbsolute, join } from 'node:path';

/** The directory name inside the user's state directory. */
export const STATE_DIR_NAME = 'agent-continuity';

/**
 * The user's home directory: `HOME` when it is an absolute path, else the account's home from the
 * system (a relative `HOME` would put the state in whatever directory a process runs in).
 */
export function homeOf(env: NodeJS.ProcessEnv): string {
  if (env.HOME && isAbsolute(env.HOME)) return env.HOME;
  try {
    const home = userInfo().homedir;
    if (home && isAbsolute(home)) return home;
  } catch {
    // No passwd entry (some containers): fall through.
  }
  const fallback = homedir();
  return isAbsolute(fallback) ? fallback : '/';
}

/**
 * The default state directory, `$XDG_STATE_HOME/agent-continuity`, else
 * `~/.local/state/agent-continuity`; a relative `XDG_STATE_HOME` or `HOME` is ignored, so the
 * result is always absolute and never under the working directory.
 */
export function defaultStateDir(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env.XDG_STATE_HOME;
  const stateHome = xdg && isAbsolute(xdg) ? xdg : join(homeOf(env), '.local', 'state');
  return join(stateHome, STATE_DIR_NAME);
}
