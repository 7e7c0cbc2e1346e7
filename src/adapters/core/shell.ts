/**
 * A small, conservative reading of a POSIX shell command for the gate's Bash inspection: the
 * simple commands it runs, each as its words with quotes and backslashes removed, and whether a
 * word holds an expansion (`$x`, `${x}`, `$(…)`, backticks) that the shell fills in at run time.
 * Pure; no I/O.
 *
 * It is not a shell. It answers the gate's questions ("which program does each simple command
 * run?", "is a program chosen at run time?") and says `uncertain` whenever it cannot read a part
 * with certainty (an unterminated quote or substitution, a here-document whose body expands), so
 * the gate can lean toward refusing. The contents of `$(…)` and backticks are read as commands of
 * their own, and the word they stand in is marked dynamic.
 */

/** One word of a simple command. */
export interface ShellWord {
  /** The word as the shell passes it on, quotes and backslashes removed (expansions left as written). */
  text: string;
  /** True when the word holds an expansion outside single quotes: the shell chooses its text at run time. */
  dynamic: boolean;
  /** True for the target of a redirection (`> file`), which is not an argument. */
  redirect?: boolean;
}

/** A command read into simple commands. */
export interface ShellReading {
  /** The simple commands, in order (separated by `;`, `&`, `|`, newlines, parentheses, braces-free). */
  commands: ShellWord[][];
  /** True when some part could not be read with certainty. */
  uncertain: boolean;
}

const SEPARATORS = ';&|\n()';
const BLANKS = ' \t\r';

/** Index of the `)` closing the `$(` whose `(` is at `open`, or -1. Quotes and nesting respected. */
function closingParen(s: string, open: number): number {
  let depth = 0;
  for (let i = open; i < s.length; i++) {
    const c = s[i];
    if (c === '\\') i++;
    else if (c === "'") {
      i = s.indexOf("'", i + 1);
      if (i === -1) return -1;
    } else if (c === '"') {
      for (i++; i < s.length && s[i] !== '"'; i++) if (s[i] === '\\') i++;
      if (i >= s.length) return -1;
    } else if (c === '(') depth++;
    else if (c === ')' && --depth === 0) return i;
  }
  return -1;
}

/** Index of the backtick closing the one at `open`, or -1. */
function closingBacktick(s: string, open: number): number {
  for (let i = open + 1; i < s.length; i++) {
    if (s[i] === '\\') i++;
    else if (s[i] === '`') return i;
  }
  return -1;
}

/** Reads `command` into simple commands and their words. */
export function readShell(command: string): ShellReading {
  const out: ShellReading = { commands: [], uncertain: false };
  readInto(command, out, 0);
  return out;
}

/** Substitutions nested deeper than this are not read: the reading is `uncertain`. */
export const MAX_SUBSTITUTION_DEPTH = 32;

function readInto(s: string, out: ShellReading, depth: number): void {
  if (depth > MAX_SUBSTITUTION_DEPTH) {
    out.uncertain = true;
    return;
  }
  let current: ShellWord[] = [];
  let text = '';
  let dynamic = false;
  let quoted = false;
  let inWord = false;
  let redirectNext = false;
  let heredocNext: { strip: boolean } | null = null;
  const heredocs: Array<{ delimiter: string; expands: boolean; strip: boolean }> = [];

  const endWord = () => {
    if (!inWord) return;
    if (heredocNext) {
      heredocs.push({ delimiter: text, expands: !quoted, strip: heredocNext.strip });
      heredocNext = null;
    } else {
      current.push(redirectNext ? { text, dynamic, redirect: true } : { text, dynamic });
      redirectNext = false;
    }
    text = '';
    dynamic = false;
    quoted = false;
    inWord = false;
  };
  const endCommand = () => {
    endWord();
    if (current.length > 0) out.commands.push(current);
    current = [];
  };
  /** A substitution `s[from..to)`: its contents are commands; the word it stands in is dynamic. */
  const substitution = (from: number, to: number) => {
    const saved = current;
    current = [];
    readInto(s.slice(from, to), out, depth + 1);
    current = saved;
    text += '$(…)';
    dynamic = true;
    inWord = true;
  };

  let i = 0;
  const n = s.length;
  while (i < n) {
    const ch = s[i]!;
    if (ch === "'") {
      const close = s.indexOf("'", i + 1);
      if (close === -1) {
        out.uncertain = true;
        endCommand();
        return;
      }
      text += s.slice(i + 1, close);
      inWord = quoted = true;
      i = close + 1;
    } else if (ch === '"') {
      inWord = quoted = true;
      let j = i + 1;
      for (; j < n && s[j] !== '"'; j++) {
        const c = s[j]!;
        if (c === '\\' && j + 1 < n && '$`"\\\n'.includes(s[j + 1]!)) {
          if (s[j + 1] !== '\n') text += s[j + 1];
          j++;
        } else if (c === '$' && s[j + 1] === '(') {
          const close = closingParen(s, j + 1);
          if (close === -1) {
            out.uncertain = true;
            endCommand();
            return;
          }
          substitution(j + 2, close);
          j = close;
        } else if (c === '`') {
          const close = closingBacktick(s, j);
          if (close === -1) {
            out.uncertain = true;
            endCommand();
            return;
          }
          substitution(j + 1, close);
          j = close;
        } else {
          if (c === '$') dynamic = true;
          text += c;
        }
      }
      if (j >= n) {
        out.uncertain = true;
        endCommand();
        return;
      }
      i = j + 1;
    } else if (ch === '\\') {
      if (i + 1 < n && s[i + 1] !== '\n') {
        text += s[i + 1];
        inWord = quoted = true;
      }
      i += 2;
    } else if (ch === '#' && !inWord) {
      const eol = s.indexOf('\n', i);
      i = eol === -1 ? n : eol;
    } else if (ch === '$' && s[i + 1] === '(') {
      const close = closingParen(s, i + 1);
      if (close === -1) {
        out.uncertain = true;
        endCommand();
        return;
      }
      substitution(i + 2, close);
      i = close + 1;
    } else if (ch === '`') {
      const close = closingBacktick(s, i);
      if (close === -1) {
        out.uncertain = true;
        endCommand();
        return;
      }
      substitution(i + 1, close);
      i = close + 1;
    } else if (ch === '$') {
      dynamic = inWord = true;
      text += ch;
      i++;
    } else if (ch === '<' || ch === '>') {
      // A file-descriptor number before the operator (`2>`) belongs to it.
      if (inWord && !quoted && /^\d+$/.test(text)) {
        text = '';
        inWord = false;
      }
      endWord();
      if (ch === '<' && s[i + 1] === '<' && s[i + 2] !== '<') {
        const strip = s[i + 2] === '-';
        heredocNext = { strip };
        i += strip ? 3 : 2;
        continue;
      }
      redirectNext = true;
      for (i++; i < n && '<>&|'.includes(s[i]!); i++);
    } else if (ch === '\n' && heredocs.length > 0) {
      endCommand();
      // Here-document bodies follow this line: data, unless an unquoted delimiter lets them expand.
      let pos = i + 1;
      for (const h of heredocs) {
        let found = false;
        while (pos < n) {
          const eol = s.indexOf('\n', pos);
          const line = s.slice(pos, eol === -1 ? n : eol);
          pos = eol === -1 ? n : eol + 1;
          if ((h.strip ? line.replace(/^\t+/, '') : line) === h.delimiter) {
            found = true;
            break;
          }
          if (h.expands && /[$`]/.test(line)) out.uncertain = true;
        }
        if (!found) out.uncertain = true;
      }
      heredocs.length = 0;
      i = pos;
    } else if (SEPARATORS.includes(ch)) {
      endCommand();
      i++;
    } else if (BLANKS.includes(ch)) {
      endWord();
      i++;
    } else {
      text += ch;
      inWord = true;
      i++;
    }
  }
  endCommand();
  if (heredocs.length > 0 || heredocNext) out.uncertain = true;
}
