/** Types of scripts/install-lock.js (plain JavaScript, shared by the stack's build and the tests' peers). */
export interface LockTiming {
  /** A lock older than this is taken over, ms. Default 20 minutes. */
  staleMs?: number;
  /** How often a live lock is looked at again, ms. Default 250. */
  pollMs?: number;
}
export declare function withLock<T>(lock: string, fn: () => T | Promise<T>, timing?: LockTiming): Promise<T>;
export declare function fillOnce(
  dir: string,
  file: string | undefined,
  fill: (tmp: string) => void,
  timing?: LockTiming,
): Promise<number | null>;
