/**
 * The leak guard: refuses, before anything is written, any string in a record that looks like an
 * absolute path, a secret or free text. The schemas already limit which fields exist; the guard
 * catches a leak that fits a field's shape (a token pasted as a session id, a home path as an
 * approval reference). Imports only the dependency-free id rules, so the lean write paths can use
 * it too.
 *
 * Heuristics, stated plainly: a string is refused when it
 * - holds white space or a control character (free text: prose, prompts, summaries);
 * - starts like an absolute path (`/`, `~`, `\`, `C:\`, `file:`) or holds a home directory
 *   segment (`/home/`, `/Users/`, `/root/`) outside an `http(s)://` URL;
 * - matches a known secret shape (`sk-…`, `ghp_…`, `github_pat_…`, `AKIA…`, `xox?-…`, a PEM
 *   header, a JWT, `AIza…`, `glpat-…`, `npm_…`, `password=`/`token=`-style assignments);
 * - holds a run of 24 or more token characters that mixes upper case, lower case and digits, has
 *   at least 3.5 bits of entropy per character and switches character class at 40% or more of
 *   adjacent pairs (random API keys; UUIDs, ULIDs and camelCase ids pass). About 4% of random
 *   24-character keys slip through this rule, fewer for longer ones: it is a net, not a proof.
 *   Runtimes' own id formats that this rule would refuse are accepted by their exact shape: an
 *   OpenCode id (`ses_` / `msg_` / `prt_` + 12 hex digits of time + 14 base62, 9 in 10 of which
 *   look random to it; opencode-ai 1.18.33).
 * Digests (`sha256:<hex>`) and timestamps never trip these rules by construction.
 */

import { SECRET_SHAPES } from '../decision/rules.js';

/** What kind of leak a string looks like. */
export type LeakKind = 'free_text' | 'absolute_path' | 'secret' | 'high_entropy' | 'too_long';

/** One refused string: where it is in the record and why. Never carries the string itself. */
export interface LeakProblem {
  /** Field path such as `decisions.scope.source`. */
  path: string;
  kind: LeakKind;
  message: string;
}

/** Longest string the guard accepts anywhere in a record. */
export const MAX_GUARDED_STRING = 512;

/** The secret shapes are defined once, with the id rules (`src/decision/rules.ts`). */
const SECRET_PATTERNS = SECRET_SHAPES;

// The secret shapes above in one pass (the case-sensitive ones, then the assignment), so a string
// that holds none, which is nearly every string, costs two regex tests instead of eleven.
const ANY_SECRET = new RegExp(
  SECRET_PATTERNS.filter(([r]) => !r.flags.includes('i'))
    .map(([r]) => r.source)
    .join('|'),
);
const ANY_SECRET_I = new RegExp(
  SECRET_PATTERNS.filter(([r]) => r.flags.includes('i'))
    .map(([r]) => r.source)
    .join('|'),
  'i',
);
// Digests and timestamps, the most common strings of a record, pass every rule by construction
// (no white space, no path start, no secret prefix, no mixed-case run): accepted at once.
const DIGEST_SHAPE = /^(?:sha256|hmac-sha256:[0-9a-f]{16}):[0-9a-f]{64}$/;
const TIMESTAMP_SHAPE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?Z$/;
const MIN_TOKEN_RUN = 24;

const WHITESPACE_OR_CONTROL = /[\s\u0000-\u001f\u007f-\u009f\u2028\u2029]/;
const ABSOLUTE_START = /^(?:[/~\\]|[A-Za-z]:[\\/]|file:)/i;
const HOME_SEGMENT = /(?:^|[/\\])(?:home|Users|root)[/\\]/;
const URL_START = /^https?:\/\//i;
const TOKEN_RUN = /[A-Za-z0-9+/=_-]{24,}/g;
/** Ids a runtime generates that look random by design, by their exact shape (see above). */
const RUNTIME_IDS = /^(?:ses|msg|prt)_[0-9a-f]{12}[0-9A-Za-z]{14}$/;

/** Shannon entropy of a string in bits per character. */
export function entropyBitsPerChar(s: string): number {
  const counts = new Map<string, number>();
  for (const c of s) counts.set(c, (counts.get(c) ?? 0) + 1);
  let h = 0;
  for (const n of counts.values()) {
    const p = n / s.length;
    h -= p * Math.log2(p);
  }
  return h;
}

function charClass(c: string): number {
  if (c >= 'A' && c <= 'Z') return 1;
  if (c >= 'a' && c <= 'z') return 2;
  if (c >= '0' && c <= '9') return 3;
  return 0;
}

/**
 * Share of adjacent letter/digit pairs that switch class (upper, lower, digit). Random base62 or
 * base64 switches about 60% of the time; camelCase words and numbers switch only at word
 * boundaries (about 30%), which is what keeps readable ids like `AcmePaymentsRelease2026` apart
 * from keys.
 */
function classSwitchRate(s: string): number {
  let pairs = 0;
  let switches = 0;
  for (let i = 1; i < s.length; i++) {
    const a = charClass(s[i - 1]!);
    const b = charClass(s[i]!);
    if (a && b) {
      pairs++;
      if (a !== b) switches++;
    }
  }
  return pairs === 0 ? 0 : switches / pairs;
}

function looksRandom(run: string): boolean {
  return (
    /[A-Z]/.test(run) &&
    /[a-z]/.test(run) &&
    /[0-9]/.test(run) &&
    entropyBitsPerChar(run) >= 3.5 &&
    classSwitchRate(run) >= 0.4
  );
}

/** Checks one string; returns why it is refused, or undefined when it is acceptable. */
export function checkString(s: string): { kind: LeakKind; message: string } | undefined {
  if (s.length > MAX_GUARDED_STRING) {
    return { kind: 'too_long', message: `longer than ${MAX_GUARDED_STRING} characters` };
  }
  if (s.length === 71 || s.length === 93 ? DIGEST_SHAPE.test(s) : s.length <= 30 && TIMESTAMP_SHAPE.test(s)) {
    return undefined;
  }
  if (WHITESPACE_OR_CONTROL.test(s)) {
    return {
      kind: 'free_text',
      message: 'looks like free text (white space); store an identifier or a digest',
    };
  }
  if (ABSOLUTE_START.test(s) || (!URL_START.test(s) && HOME_SEGMENT.test(s))) {
    return { kind: 'absolute_path', message: 'looks like an absolute path; store an identifier instead' };
  }
  if (ANY_SECRET.test(s) || ANY_SECRET_I.test(s)) {
    for (const [pattern, what] of SECRET_PATTERNS) {
      if (pattern.test(s)) return { kind: 'secret', message: `looks like ${what}; never store secrets` };
    }
  }
  if (s.length < MIN_TOKEN_RUN) return undefined;
  if (RUNTIME_IDS.test(s)) return undefined;
  for (const run of s.match(TOKEN_RUN) ?? []) {
    if (looksRandom(run)) {
      return {
        kind: 'high_entropy',
        message: 'holds a long random-looking token (possible secret); use a keyed digest or an opaque id',
      };
    }
  }
  return undefined;
}

// The field path is built only for a string that is refused: most records have none.
type PathPart = string | number;

function formatPath(parts: readonly PathPart[]): string {
  let out = '';
  for (const p of parts) out = typeof p === 'number' ? `${out}[${p}]` : out === '' ? p : `${out}.${p}`;
  return out;
}

function walk(value: unknown, parts: PathPart[], out: LeakProblem[]): void {
  if (typeof value === 'string') {
    const p = checkString(value);
    if (p) out.push({ path: formatPath(parts), ...p });
    return;
  }
  if (value === null || typeof value !== 'object') return;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      parts.push(i);
      walk(value[i], parts, out);
      parts.pop();
    }
    return;
  }
  for (const k of Object.keys(value)) {
    parts.push(k);
    const p = checkString(k);
    if (p) out.push({ path: formatPath(parts), ...p });
    walk((value as Record<string, unknown>)[k], parts, out);
    parts.pop();
  }
}

/**
 * Checks every string (keys included) of a record. Returns the problems, empty when the record
 * may be written. The problems name field paths, never the refused text.
 */
export function guardRecord(record: unknown): LeakProblem[] {
  const out: LeakProblem[] = [];
  walk(record, [], out);
  return out;
}
