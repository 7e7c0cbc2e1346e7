/**
 * RFC 3339 UTC timestamps, compared exactly (to the nanosecond) without a clock.
 */

/** `YYYY-MM-DDTHH:MM:SS[.fraction]Z`, upper-case T and Z, up to nanosecond precision. */
export const RFC3339_UTC_PATTERN = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?Z$/;

/**
 * Parses an RFC 3339 UTC timestamp into nanoseconds since the epoch, or `undefined` when the
 * text is not one (wrong form, or a calendar date that does not exist such as 2026-02-30).
 */
export function parseRfc3339Utc(text: string): bigint | undefined {
  // The same few times come again and again (every decision of a snapshot carries one, often the
  // same; each classification reads them and the boundary's): the last answer is kept.
  if (text === lastParsed.text) return lastParsed.ns;
  const ns = parse(text);
  lastParsed = { text, ns };
  return ns;
}

let lastParsed: { text: string; ns: bigint | undefined } = { text: '', ns: undefined };

function parse(text: string): bigint | undefined {
  if (!isRfc3339Utc(text)) return undefined;
  const y = digitsAt(text, 0, 4);
  const mo = digitsAt(text, 5, 2);
  const d = digitsAt(text, 8, 2);
  const h = digitsAt(text, 11, 2);
  const mi = digitsAt(text, 14, 2);
  const s = digitsAt(text, 17, 2);
  let ms: number;
  if (y >= 100) {
    ms = Date.UTC(y, mo - 1, d, h, mi, s);
  } else {
    // Date.UTC maps years 0-99 to 1900-1999; setUTCFullYear takes the year as written.
    const t = new Date(0);
    t.setUTCFullYear(y, mo - 1, d);
    t.setUTCHours(h, mi, s, 0);
    ms = t.getTime();
  }
  // `.fraction` runs from index 20 to the Z; scale it to nanoseconds.
  const fracDigits = text.length - 21;
  const nanos = fracDigits > 0 ? digitsAt(text, 20, fracDigits) * 10 ** (9 - fracDigits) : 0;
  return BigInt(ms) * 1_000_000n + BigInt(nanos);
}

/** The decimal number written by `n` ASCII digits of `text` from `start` (already validated). */
function digitsAt(text: string, start: number, n: number): number {
  let v = 0;
  for (let i = start; i < start + n; i++) v = v * 10 + text.charCodeAt(i) - 48;
  return v;
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31] as const;

/** Days in a month of the proleptic Gregorian calendar (RFC 3339 §5.7). */
function daysInMonth(year: number, month: number): number {
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1]!;
}

/** True when `text` is a valid RFC 3339 UTC timestamp (form and calendar). */
export function isRfc3339Utc(text: string): boolean {
  if (text === lastValid) return true;
  if (!checkRfc3339Utc(text)) return false;
  lastValid = text;
  return true;
}

/** The last text {@link isRfc3339Utc} found valid (most texts it sees are the one before). */
let lastValid = '2000-01-01T00:00:00Z';

function checkRfc3339Utc(text: string): boolean {
  // This runs for every timestamp validated and classified, so after the pattern test the fields
  // are read from their fixed positions and the calendar is checked by arithmetic (no captures,
  // no Date round trip).
  if (!RFC3339_UTC_PATTERN.test(text)) return false;
  const y = digitsAt(text, 0, 4);
  const mo = digitsAt(text, 5, 2);
  const d = digitsAt(text, 8, 2);
  return (
    mo >= 1 &&
    mo <= 12 &&
    d >= 1 &&
    d <= daysInMonth(y, mo) &&
    digitsAt(text, 11, 2) <= 23 &&
    digitsAt(text, 14, 2) <= 59 &&
    digitsAt(text, 17, 2) <= 59
  );
}

/** Formats a clock reading (milliseconds since the epoch) as RFC 3339 UTC. */
export function formatRfc3339Utc(epochMs: number): string {
  return new Date(epochMs).toISOString();
}
