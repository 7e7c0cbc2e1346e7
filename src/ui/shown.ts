/**
 * What the continuity page may print: digests, ids, names and times only. Every id that came in on
 * a span is checked again with the ledger's leak guard, so an id that looks like a path, a secret
 * or free text (a token pasted as a session id, a home path as an approval reference) is withheld
 * rather than shown; the page then refers to the session by a key derived from its id.
 */
import { createHash } from 'node:crypto';
import { checkString, type LeakKind } from '../ledger/guard.js';

/** An id as the page shows it: the id itself, or a marker naming why it is withheld. */
export type ShownId = string;

/** The marker shown in place of an id the guard refuses. */
export function withheldMarker(kind: LeakKind): string {
  return `(withheld: looks like ${kind.replace('_', ' ')})`;
}

/** The id when the leak guard accepts it, else the withheld marker. */
export function shownId(id: string): ShownId {
  const problem = checkString(id);
  return problem ? withheldMarker(problem.kind) : id;
}

/** True when {@link shownId} shows the id itself. */
export function isShowable(id: string): boolean {
  return checkString(id) === undefined;
}

/** The key a session is addressed by in the page's URLs: 16 hex of SHA-256 of its id. */
export function sessionKey(sessionId: string): string {
  return createHash('sha256').update(sessionId).digest('hex').slice(0, 16);
}
