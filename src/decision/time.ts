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
  const m = RFC3339_UTC_PATTERN.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, frac] = m;
  // setUTCFullYear, not Date.UTC: Date.UTC maps years 0-99 to 1900-1999.
  const back = new Date(0);
  back.setUTCFullYear(Number(y), Number(mo) - 1, Number(d));
  back.setUTCHours(Number(h), Number(mi), Number(s), 0);
  const ms = back.getTime();
  // The setters roll 2026-02-30 over to March; a round trip catches dates that do not exist.
  if (
    back.getUTCFullYear() !== Number(y) ||
    back.getUTCMonth() !== Number(mo) - 1 ||
    back.getUTCDate() !== Number(d) ||
    Number(h) > 23 ||
    Number(mi) > 59 ||
    Number(s) > 59
  ) {
    return undefined;
  }
  const nanos = BigInt((frac ?? '').padEnd(9, '0') || '0');
  return BigInt(ms) * 1_000_000n + nanos;
}

/** True when `text` is a valid RFC 3339 UTC timestamp. */
export function isRfc3339Utc(text: string): boolean {
  return parseRfc3339Utc(text) !== undefined;
}

/** Formats a clock reading (milliseconds since the epoch) as RFC 3339 UTC. */
export function formatRfc3339Utc(epochMs: number): string {
  return new Date(epochMs).toISOString();
}
