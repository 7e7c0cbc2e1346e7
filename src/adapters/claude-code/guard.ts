/**
 * What the gate looks for in a tool call besides the continuity state, pure and lean:
 *
 * - an agent running `continuity approve` (approvals come from a human, in the human's terminal);
 * - an agent touching the evidence (the ledger, keys, the adapter's state) or the task record;
 * - the one Bash command the gate always lets through: a plain `continuity observe` or
 *   `continuity status` invocation, since restating the decisions is how a blocked agent unblocks.
 *
 * This is a guard against drift and honest mistakes, not a sandbox: the agent runs as the same OS
 * user and a determined one can reach the files by other means. The ledger's chain key makes such
 * an edit visible to `continuity ledger verify`.
 */
import { isAbsolute, relative, resolve, sep } from 'node:path';

/** How a Bash command relates to continuity. */
export type BashCommandKind =
  /** A `continuity approve` invocation somewhere in the command. */
  | 'approve'
  /** Exactly one `continuity observe|status|ledger verify` invocation, nothing else. */
  | 'continuity_readonly'
  /** Mentions the ledger, a key, or the adapter's state directory. */
  | 'touches_evidence'
  /** Mentions the project's `.continuity/` directory (task record, configuration). */
  | 'touches_task_record'
  | 'other';

/** Paths the guard protects. */
export interface ProtectedPaths {
  /** The state root (ledger default, adapter state, spool). */
  stateRoot: string;
  /** Extra files: a ledger outside the state root, key files. */
  files: readonly string[];
  /** The project's `.continuity/` directory. */
  projectStateDir: string;
}

// `continuity`, `continuity.js`, a path ending in either, or this package's compiled entry point.
const CLI_TOKEN = String.raw`(?:[^\s;&|'"]*\/)?(?:continuity(?:\.js)?|dist\/cli\/main\.js)`;
const APPROVE = new RegExp(
  String.raw`(?:^|[\s;&|(\x60'"])${CLI_TOKEN}['"]?(?:\s+[^\s;&|]+)*?\s+['"]?approve(?:['"]|\s|$|[;&|)])`,
);
// Environment variables that hold or name keys.
const KEY_VARIABLES = /CONTINUITY_(?:DIGEST|CHAIN)_KEY/;

const LAUNCHER = String.raw`(?:npx(?:\s+(?:--no-install|--yes|-y|--offline))*\s+|node\s+)?`;
const READONLY_HEAD = new RegExp(
  String.raw`^\s*${LAUNCHER}(?:[^\s;&|<>$\x60()'"]*\/)?continuity(?:\.js)?\s+(?:observe|status|ledger\s+verify)(?:\s|$)`,
);

/**
 * True when `line` has no shell syntax that could run a second command or expand anything:
 * outside single quotes no `; & | < > $ \` ( )` and no backslash; inside double quotes no `$`,
 * backtick or backslash. Quotes must balance.
 */
function isPlainWords(line: string): boolean {
  let quote: "'" | '"' | null = null;
  for (const ch of line) {
    if (quote === "'") {
      if (ch === "'") quote = null;
      continue;
    }
    if (quote === '"') {
      if (ch === '"') quote = null;
      else if (ch === '$' || ch === '`' || ch === '\\') return false;
      continue;
    }
    if (ch === "'" || ch === '"') quote = ch;
    else if (';&|<>$`()\\\n\r'.includes(ch)) return false;
  }
  return quote === null;
}

/**
 * True when `command` is exactly one read-only or restating `continuity` invocation: `observe`,
 * `status` or `ledger verify`, optionally fed by one quoted here-document (`<<'EOF'` … `EOF`,
 * whose body the shell does not expand), and nothing else.
 */
export function isContinuityReadonly(command: string): boolean {
  const text = command.replace(/\s+$/, '');
  const newline = text.indexOf('\n');
  const first = newline === -1 ? text : text.slice(0, newline);
  const heredoc = /\s<<-?\s*(['"])([A-Za-z_][A-Za-z0-9_]*)\1\s*$/.exec(first);
  let words = first;
  if (heredoc) {
    words = first.slice(0, heredoc.index);
    const lines = text.slice(newline === -1 ? text.length : newline + 1).split('\n');
    // The terminator must be the last line: nothing may follow the here-document.
    const last = lines.pop();
    if (newline === -1 || last === undefined || last.replace(/^\t+/, '') !== heredoc[2]) return false;
    if (lines.some((l) => l.replace(/^\t+/, '') === heredoc[2])) return false;
  } else if (newline !== -1) {
    return false;
  }
  return READONLY_HEAD.test(words) && isPlainWords(words);
}

function mentionsPath(command: string, path: string): boolean {
  return path.length > 1 && command.includes(path);
}

/** Classifies a Bash command for the gate. */
export function inspectBashCommand(command: string, paths: ProtectedPaths): BashCommandKind {
  if (APPROVE.test(command)) return 'approve';
  if (isContinuityReadonly(command)) return 'continuity_readonly';
  if (
    KEY_VARIABLES.test(command) ||
    mentionsPath(command, paths.stateRoot) ||
    /agent-continuity\/(?:ledger|claude-code|keys?)/.test(command) ||
    paths.files.some((f) => mentionsPath(command, f))
  ) {
    return 'touches_evidence';
  }
  if (/(?:^|[\s'"=/])\.continuity(?:\/|\s|$|['"])/.test(command)) return 'touches_task_record';
  return 'other';
}

function inside(dir: string, path: string): boolean {
  const rel = relative(dir, path);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

/** Where a file-writing tool's target lies: in the evidence, in `.continuity/`, or elsewhere. */
export function inspectTargetPath(
  filePath: string,
  projectDir: string,
  paths: ProtectedPaths,
): 'touches_evidence' | 'touches_task_record' | 'other' {
  const target = resolve(projectDir, filePath);
  if (inside(paths.stateRoot, target) || paths.files.some((f) => resolve(f) === target)) {
    return 'touches_evidence';
  }
  if (inside(paths.projectStateDir, target)) return 'touches_task_record';
  return 'other';
}
