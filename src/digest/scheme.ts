/**
 * The scheme part of a digest string. Separate from digest.ts, which loads the normalizer
 * (canonicalize): the classifier, and with it the span processor, needs only this.
 */

/** The scheme of a digest: what must match before two digests can be compared. */
export function digestScheme(digest: string): string {
  // indexOf/slice rather than split: the classifier calls this twice per decision.
  const first = digest.indexOf(':');
  if (first === -1) return digest;
  if (digest.slice(0, first) !== 'hmac-sha256') return digest.slice(0, first);
  const second = digest.indexOf(':', first + 1);
  return second === -1 ? digest : digest.slice(0, second);
}
