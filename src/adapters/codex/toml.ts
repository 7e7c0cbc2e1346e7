/**
 * Editing the trust entries of Codex's `config.toml` without disturbing anything else in it
 * (pure): the user's comments, order and formatting stay as they are. The file is parsed with
 * smol-toml to read what is there and to check the result; the edit itself is textual, on the
 * `[hooks.state."<key>"]` tables only:
 *
 * - a key to trust whose table exists: its `trusted_hash` line is replaced (or added under the header);
 * - a key to trust with no table: a two-line table is appended at the end;
 * - a key to untrust: its `trusted_hash` line goes, and the header too when nothing else is left in the table.
 *
 * The result is parsed again and must hold exactly the requested hashes and nothing else changed
 * outside `hooks.state`; otherwise (a key defined inline, an inline `hooks` table, a file that is
 * not TOML) the edit is refused with an error naming the file and the key, and nothing is written.
 */
import { parse } from 'smol-toml';
import { InputError } from '../../decision/problems.js';
import { isRecord } from '../core/state.js';

/** The trust entries a config.toml holds: key → `trusted_hash` (only string values). */
export function trustedHashes(doc: Record<string, unknown>): Map<string, string> {
  const out = new Map<string, string>();
  const hooks = doc.hooks;
  const state = isRecord(hooks) ? hooks.state : undefined;
  if (!isRecord(state)) return out;
  for (const [k, v] of Object.entries(state)) {
    if (isRecord(v) && typeof v.trusted_hash === 'string') out.set(k, v.trusted_hash);
  }
  return out;
}

/** Parses config.toml text; throws {@link InputError} naming `source` when it is not TOML. */
export function parseConfigToml(text: string, source: string): Record<string, unknown> {
  try {
    return parse(text) as Record<string, unknown>;
  } catch (e) {
    const line = (e as { line?: number }).line;
    throw new InputError(source, [
      {
        path: line ? `line ${line}` : '(root)',
        message: 'not valid TOML; fix it, nothing was changed',
      },
    ]);
  }
}

function tomlString(s: string): string {
  // A TOML basic string: JSON's escapes are TOML's for everything a path holds.
  return JSON.stringify(s);
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The line index of the `[hooks.state."<key>"]` header, or -1. */
function headerLine(lines: string[], key: string): number {
  const basic = escapeRegExp(tomlString(key));
  const literal = key.includes("'") ? null : escapeRegExp(`'${key}'`);
  const re = new RegExp(
    String.raw`^\s*\[\s*hooks\s*\.\s*state\s*\.\s*(?:${basic}${literal ? `|${literal}` : ''})\s*\]\s*(?:#.*)?$`,
  );
  return lines.findIndex((l) => re.test(l));
}

/** The end (exclusive) of the table whose header is at `start`: the next header, or the end. */
function tableEnd(lines: string[], start: number): number {
  for (let i = start + 1; i < lines.length; i++) if (/^\s*\[/.test(lines[i]!)) return i;
  return lines.length;
}

const HASH_LINE = /^\s*trusted_hash\s*=/;

/** True when `a` and `b` agree on everything but the trust entries of `keys`. */
function sameOutside(
  a: Record<string, unknown>,
  b: Record<string, unknown>,
  keys: Iterable<string>,
): boolean {
  const skip = new Set(keys);
  const strip = (d: Record<string, unknown>) => {
    const c: Record<string, unknown> = { ...d };
    if (isRecord(c.hooks)) {
      const h: Record<string, unknown> = { ...c.hooks };
      if (isRecord(h.state)) {
        const st = Object.fromEntries(Object.entries(h.state).filter(([k]) => !skip.has(k)));
        if (Object.keys(st).length === 0) delete h.state;
        else h.state = st;
      }
      if (Object.keys(h).length === 0) delete c.hooks;
      else c.hooks = h;
    }
    return JSON.stringify(c, (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
  };
  return strip(a) === strip(b);
}

/**
 * Applies trust changes to config.toml text: `hash` a string trusts the key with it, `null`
 * untrusts it. Returns the new text (unchanged text when nothing changes). Throws
 * {@link InputError} naming `source` when the file cannot be edited safely.
 */
export function editTrust(text: string, changes: ReadonlyMap<string, string | null>, source: string): string {
  const before = parseConfigToml(text, source);
  const current = trustedHashes(before);
  const lines = text.split('\n');
  const appended: string[] = [];
  for (const [key, hash] of changes) {
    if ((current.get(key) ?? null) === hash) continue;
    const at = headerLine(lines, key);
    if (at === -1) {
      if (hash === null) continue; // nothing of ours to take out
      if (current.has(key) || hasStateEntry(before, key)) {
        throw new InputError(source, [
          {
            path: `hooks.state.${tomlString(key)}`,
            message:
              'is defined in a form init does not edit (not as its own [hooks.state."…"] table); set its trusted_hash yourself or make it a table, nothing was changed',
          },
        ]);
      }
      appended.push('', `[hooks.state.${tomlString(key)}]`, `trusted_hash = ${tomlString(hash)}`);
      continue;
    }
    const end = tableEnd(lines, at);
    const hashAt = lines.slice(at + 1, end).findIndex((l) => HASH_LINE.test(l));
    if (hash === null) {
      if (hashAt !== -1) lines.splice(at + 1 + hashAt, 1);
      const rest = lines
        .slice(at + 1, tableEnd(lines, at))
        .filter((l) => l.trim() !== '' && !/^\s*#/.test(l));
      if (rest.length === 0) {
        const stop = tableEnd(lines, at);
        lines.splice(at, stop - at);
        // Drop the blank line init put before the table, unless another table follows it.
        if (at > 0 && lines[at - 1]?.trim() === '' && (at === lines.length || lines[at]?.trim() === '')) {
          lines.splice(at - 1, 1);
        }
      }
    } else if (hashAt !== -1) {
      lines[at + 1 + hashAt] = `trusted_hash = ${tomlString(hash)}`;
    } else {
      lines.splice(at + 1, 0, `trusted_hash = ${tomlString(hash)}`);
    }
  }
  let out = lines.join('\n');
  // A table taken out at the end of the file takes the final line break with it: put it back.
  if (text.endsWith('\n') && out.length > 0 && !out.endsWith('\n')) out += '\n';
  if (appended.length > 0) {
    if (out.length > 0 && !out.endsWith('\n')) out += '\n';
    if (out.length === 0) appended.shift();
    out += `${appended.join('\n')}\n`;
  }
  if (out === text) return text;
  const after = parseConfigToml(out, source);
  const got = trustedHashes(after);
  for (const [key, hash] of changes) {
    if ((got.get(key) ?? null) !== hash) {
      throw new InputError(source, [
        {
          path: `hooks.state.${tomlString(key)}`,
          message:
            'could not be edited safely (the file defines hooks or hooks.state inline?); nothing was changed',
        },
      ]);
    }
  }
  if (!sameOutside(before, after, changes.keys())) {
    throw new InputError(source, [
      {
        path: 'hooks.state',
        message: 'editing the trust entries would change other settings; nothing was changed',
      },
    ]);
  }
  return out;
}

function hasStateEntry(doc: Record<string, unknown>, key: string): boolean {
  const hooks = doc.hooks;
  return isRecord(hooks) && isRecord(hooks.state) && key in hooks.state;
}
