/**
 * The write gate, runtime-neutral: decides whether a consequential tool call may run, from the
 * session's latest confirmed compaction boundary, and answers `allow` | `ask` | `deny` with the
 * words to say (a runtime adapter translates the answer: Claude Code's `hookSpecificOutput`,
 * Codex's `deny` with a human-approval reason where the policy says `ask`).
 *
 * Fast path, taken for nearly every call: the configuration, one small cache file, a decision.
 * It loads no OpenTelemetry, zod or commander, so it starts about as fast as `node -e 0`. Only when
 * the cache is missing, says the write must wait, or was not derived from this gate's own ledger
 * file does it call the adapter's `rederive` (the ledger reader and the classifier) to re-derive
 * the state from the evidence (an approval recorded since, a new observation).
 *
 * **It never opens on evidence it did not read from the session's own ledger.** A cached state
 * with no objection counts only when it records the identity (device and inode) of the ledger
 * file this gate is configured with; anything else (a restatement classified against another
 * ledger, an older cache) is re-derived. When it cannot reach a verdict (no cache, and the ledger
 * cannot be read; a state it cannot confirm), it answers `ask`, never `allow`. A state the ledger
 * gives is kept even when the cache cannot be written.
 *
 * **The most severe answer wins**: the guard's (below) and the state's are both consulted, and
 * `deny` outranks `ask`, which outranks `allow`.
 *
 * A pre capture that no compaction confirmed (./boundary.ts) is not a boundary: the gate keeps
 * answering from the current confirmed boundary, so a lone or discarded pre never stops writes.
 *
 * `allow` means "no objection": a runtime adapter never turns it into a permission grant, so the
 * gate never bypasses the user's own permission rules.
 *
 * Besides the continuity state the gate looks for: an agent running `continuity approve`
 * (approvals come from a human, in the human's terminal); while a boundary is unresolved, a
 * command whose program is chosen at run time (it could be `continuity approve`); an agent
 * touching the evidence (the ledger, keys, the adapter's state, also through a symbolic link) or
 * the task record; and the one command it always lets through, a plain `continuity observe`,
 * `status` or `ledger verify` invocation on the configured ledger, since restating the decisions
 * is how a blocked agent unblocks. That is a guard against drift and honest mistakes, not a
 * sandbox: the agent runs as the same OS user and a determined one can reach the files by other
 * means (docs/security.md); the runtime's own protection (permission rules, a sandbox) and the
 * ledger's chain key make up the rest.
 */
import { realpathSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { AdapterConfig } from './config.js';
import { DEFAULT_CONFIG_FILE, PROJECT_STATE_DIR, policyVerdict } from './config.js';
import type { GateAnswer, GateCode, GateVerdict, ToolEvent } from './events.js';
import type { Voice } from './messages.js';
import { readShell, type ShellWord } from './shell.js';
import {
  cacheReplaceable,
  type GateBoundary,
  type GateState,
  isHealthy,
  ledgerUnchangedFor,
  readGateState,
  type StateDir,
} from './state.js';

// ── Guard ─────────────────────────────────────────────────────────────────────────────────────
/** How a Bash command relates to continuity. */
export type BashCommandKind =
  /** A `continuity approve` invocation somewhere in the command. */
  | 'approve'
  /** Exactly one `continuity observe|status|ledger verify` invocation on the configured ledger, nothing else. */
  | 'continuity_readonly'
  /** Mentions the ledger, a key, or the adapter's state directory. */
  | 'touches_evidence'
  /** Mentions the project's `.continuity/` directory (task record, configuration). */
  | 'touches_task_record'
  /** Names a settings file of the runtime that loads the continuity hooks (`.claude/settings.json`, …), or its directory. */
  | 'touches_runtime_config'
  /** Runs a program chosen at run time (a variable, a substitution, `eval`, a shell given code), which could be `continuity approve`. */
  | 'runtime_chosen'
  | 'other';

/** Paths the guard protects. */
export interface ProtectedPaths {
  /** The state root (ledger default, adapter state, spool). */
  stateRoot: string;
  /** Extra files: a ledger outside the state root, key files. */
  files: readonly string[];
  /** The project's `.continuity/` directory. */
  projectStateDir: string;
  /**
   * The runtime's settings files that load the continuity hooks, absolute; a directory ends in the
   * path separator ({@link AdapterConfig.runtimeConfig}). Default none.
   */
  runtimeConfig?: readonly string[];
}

// `continuity`, `continuity.js`, a path ending in either, or this package's compiled entry point.
const CLI_TOKEN = String.raw`(?:[^\s;&|'"]*\/)?(?:continuity(?:\.js)?|dist\/cli\/main\.js)`;
const APPROVE = new RegExp(
  String.raw`(?:^|[\s;&|(\x60'"])${CLI_TOKEN}['"]?(?:\s+[^\s;&|]+)*?\s+['"]?approve(?:['"]|\s|$|[;&|)])`,
);
/** A program word that is continuity itself (after quotes are removed). */
const CONTINUITY_PROGRAM = /(?:^|\/)(?:continuity(?:\.[cm]?js)?|dist\/cli\/main\.js)$/;
// Environment variables that hold or name keys.
const KEY_VARIABLES = /CONTINUITY_(?:DIGEST|CHAIN)_KEY/;

// `node` may be an absolute path (a launcher printed for a shell whose PATH differs from the hook's).
const LAUNCHER = String.raw`(?:npx(?:\s+(?:--no-install|--yes|-y|--offline))*\s+|(?:\/[^\s;&|<>$\x60()'"]*\/)?node\s+)?`;
const READONLY_HEAD = new RegExp(
  String.raw`^\s*${LAUNCHER}(?:[^\s;&|<>$\x60()'"]*\/)?continuity(?:\.js)?\s+(?:observe|status|ledger\s+verify)(?:\s|$)`,
);
/**
 * The options the always-allowed invocations may carry. Nothing that names another ledger, state
 * directory, project or key (`--ledger`, `--project`, `--chain-key-file`), and nothing that writes
 * (`status --receipt`): the exemption is for restating against the session's own evidence.
 */
const READONLY_OPTIONS: Readonly<Record<string, ReadonlySet<string>>> = {
  observe: new Set(['--session', '--decisions', '--decision', '--json']),
  status: new Set(['--session', '--json']),
  ledger: new Set(['--json']),
};

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
    // Brace expansion (`{--ledger,x}`), globs (a file named `--ledger=x` matched by `*`) and `~`
    // make words the text does not show: an option could appear after the check.
    else if ('{}*?[]~'.includes(ch)) return false;
  }
  return quote === null;
}

/** True when the words after the continuity program carry only the options its subcommand allows. */
function onlyReadonlyOptions(words: readonly ShellWord[]): boolean {
  const at = words.findIndex((w) => CONTINUITY_PROGRAM.test(w.text));
  const sub = words[at + 1]?.text;
  const allowed = sub ? READONLY_OPTIONS[sub] : undefined;
  if (at === -1 || !allowed) return false;
  return words.slice(at + 2).every((w) => {
    if (w.text === '-' || !w.text.startsWith('-')) return true;
    return allowed.has(w.text.split('=', 1)[0]!);
  });
}

/**
 * True when `command` is exactly one read-only or restating `continuity` invocation: `observe`,
 * `status` or `ledger verify`, with only the options that keep it on the configured ledger and
 * project, optionally fed by one quoted here-document (`<<'EOF'` … `EOF`, whose body the shell
 * does not expand), and nothing else.
 */
export function isContinuityReadonly(command: string, launch?: LaunchTrust): boolean {
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
  if (!READONLY_HEAD.test(words) || !isPlainWords(words)) return false;
  const read = readShell(words);
  if (read.commands.length !== 1 || !onlyReadonlyOptions(read.commands[0]!)) return false;
  return launch === undefined || runsOwnBinary(read.commands[0]!, launch);
}

// ── The exempt command's program ──────────────────────────────────────────────────────────────
/**
 * What the exemption trusts as "this package's `continuity`": the hook's own script (what the
 * runtime started: `bin/continuity.js`, or a link to it on PATH), the PATH it resolves bare
 * names on, and this Node.
 */
export interface LaunchTrust {
  /** The script this hook process runs (`process.argv[1]`); undefined: nothing is trusted. */
  script: string | undefined;
  /** The PATH bare `continuity` and `node` are looked up on (the hook's). */
  path: string;
  /** This Node's executable (`process.execPath`). */
  execPath: string;
}

function realOrUndefined(path: string): string | undefined {
  try {
    return realpathSync.native(path);
  } catch {
    return undefined;
  }
}

/** The real path of the first executable `name` on `path`, or undefined. */
function realOnPath(name: string, path: string): string | undefined {
  for (const dir of path.split(':')) {
    if (!dir || !isAbsolute(dir)) continue;
    const real = realOrUndefined(join(dir, name));
    if (real && statSync(real, { throwIfNoEntry: false })?.isFile()) return real;
  }
  return undefined;
}

/**
 * True when the simple command runs exactly this package's binary: bare `continuity` when it
 * resolves on PATH to this hook's own script, an absolute path that resolves to it, or this Node
 * (bare `node` resolving to it, or its absolute path) running an absolute path that resolves to
 * it. Never a relative path (`./continuity`, `node ./continuity.js`: a prepared script in the
 * working directory), never a program of the same name elsewhere (`/tmp/x/continuity`).
 */
function runsOwnBinary(words: readonly ShellWord[], launch: LaunchTrust): boolean {
  const self = launch.script && isAbsolute(launch.script) ? realOrUndefined(launch.script) : undefined;
  if (!self) return false;
  const w = words.filter((x) => !x.redirect).map((x) => x.text);
  const [program, script] = w;
  if (program === undefined) return false;
  const resolveProgram = (word: string) =>
    isAbsolute(word) ? realOrUndefined(word) : word.includes('/') ? undefined : realOnPath(word, launch.path);
  if (basename(program) === 'node') {
    // Bare `node` is the one on the hook's PATH; an absolute one must be that one or this Node.
    const node = resolveProgram(program);
    const nodes = [realOnPath('node', launch.path), realOrUndefined(launch.execPath)];
    return (
      node !== undefined &&
      nodes.includes(node) &&
      script !== undefined &&
      isAbsolute(script) &&
      realOrUndefined(script) === self
    );
  }
  return resolveProgram(program) === self;
}

// Words that may stand before a simple command's program without being it.
const RESERVED = new Set(['!', '{', '}', 'if', 'then', 'else', 'elif', 'do', 'while', 'until', 'time']);
// Programs that run the command they are given as arguments (their options are skipped too).
const WRAPPERS = new Set([
  'command',
  'builtin',
  'exec',
  'nohup',
  'env',
  'sudo',
  'doas',
  'nice',
  'setsid',
  'stdbuf',
  'timeout',
  'npx',
  'bunx',
  'node',
]);
// Programs that run text they are given as a command: what they run is chosen at run time.
const EVALUATORS = new Set(['eval', 'source', '.', 'xargs', 'parallel', 'watch']);
const SHELLS = new Set(['sh', 'bash', 'zsh', 'dash', 'ksh', 'mksh', 'fish', 'busybox', 'su']);
const INTERPRETERS = new Set([
  'python',
  'python3',
  'perl',
  'ruby',
  'php',
  'deno',
  'bun',
  'node',
  'osascript',
  'pwsh',
]);
// An interpreter's option for code given inline.
const INLINE_CODE = /^-(?:c|e|E|p|r|-eval|-print|Command|command)$/;

/** The word a simple command runs, after assignments, reserved words and wrappers; with the words after it. */
function programOf(words: readonly ShellWord[]): { program: ShellWord; args: ShellWord[] } | undefined {
  const w = words.filter((x) => !x.redirect);
  let i = 0;
  while (i < w.length) {
    const t = w[i]!.text;
    if (RESERVED.has(t) || (/^[A-Za-z_][A-Za-z0-9_]*=/.test(t) && !w[i]!.dynamic)) {
      i++;
      continue;
    }
    const name = basename(t);
    if (!w[i]!.dynamic && WRAPPERS.has(name)) {
      // `node script.js`: the script is the program, unless node is given code inline (below).
      if (name === 'node' && w.slice(i + 1).some((x) => INLINE_CODE.test(x.text))) break;
      i++;
      while (i < w.length && (w[i]!.text.startsWith('-') || /^\d/.test(w[i]!.text))) i++;
      continue;
    }
    break;
  }
  const program = w[i];
  return program ? { program, args: w.slice(i + 1) } : undefined;
}

/** True when a simple command's program is chosen at run time, or is a shell or evaluator given code. */
function chosenAtRunTime(words: readonly ShellWord[]): boolean {
  const p = programOf(words);
  if (!p) return false;
  if (p.program.dynamic) return true;
  const name = basename(p.program.text);
  if (EVALUATORS.has(name) || SHELLS.has(name)) return true;
  return INTERPRETERS.has(name) && p.args.some((a) => INLINE_CODE.test(a.text));
}

/**
 * True when a simple command whose program is chosen at run time is handed the word `approve`
 * (`c=continuity; $c approve`, `eval "… approve"`, `bash -c '… approve'`): it could be
 * `continuity approve`, so it is refused as one whatever the state.
 */
function mayRunApprove(words: readonly ShellWord[]): boolean {
  return chosenAtRunTime(words) && words.some((w) => /approve/i.test(w.text));
}

/** True when a simple command runs continuity's `approve` (quotes and backslashes removed first). */
function runsApprove(words: readonly ShellWord[]): boolean {
  const p = programOf(words);
  return !!p && CONTINUITY_PROGRAM.test(p.program.text) && p.args.some((a) => a.text === 'approve');
}

function mentionsPath(command: string, path: string): boolean {
  return path.length > 1 && command.includes(path);
}

/** What the guard finds in a Bash command: its kind, and whether a program in it is chosen at run time. */
interface BashFindings {
  kind: Exclude<BashCommandKind, 'runtime_chosen'>;
  runtimeChosen: boolean;
}

function bashFindings(command: string, paths: ProtectedPaths, launch?: LaunchTrust): BashFindings {
  const read = readShell(command);
  const runtimeChosen = read.uncertain || read.commands.some(chosenAtRunTime);
  const found = (kind: BashFindings['kind']) => ({ kind, runtimeChosen });
  if (
    APPROVE.test(command) ||
    read.commands.some((c) => runsApprove(c) || mayRunApprove(c)) ||
    (read.uncertain && /approve/i.test(command))
  ) {
    return found('approve');
  }
  // The words as the shell passes them on, so `"/a/"b` is seen as `/a/b`.
  const unquoted = read.commands.map((c) => c.map((w) => w.text).join(' ')).join('\n');
  const protectedNames = [paths.stateRoot, ...paths.files].flatMap((p) => {
    const real = realTarget(p);
    return real === p ? [p] : [p, real];
  });
  if (
    KEY_VARIABLES.test(command) ||
    /agent-continuity\/(?:ledger|claude-code|keys?)/.test(command) ||
    /agent-continuity\/(?:ledger|claude-code|keys?)/.test(unquoted) ||
    protectedNames.some((f) => mentionsPath(command, f) || mentionsPath(unquoted, f))
  ) {
    return found('touches_evidence');
  }
  if (isContinuityReadonly(command, launch)) return { kind: 'continuity_readonly', runtimeChosen: false };
  const taskRecord = /(?:^|[\s'"=/])\.continuity(?:\/|\s|$|['"])/;
  if (taskRecord.test(command) || taskRecord.test(unquoted)) return found('touches_task_record');
  const runtime = mayNameRuntimeConfig(paths, command, unquoted) ? runtimeConfigPattern(paths) : undefined;
  if (runtime && (runtime.test(command) || runtime.test(unquoted))) return found('touches_runtime_config');
  return found('other');
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * True when the command's text holds the name of a runtime settings file, of a directory entry or
 * of the directory holding one: only then are their spellings (links resolved, a few system calls
 * on the fast path) built. A file reached through a link of another name is named by its link.
 */
function mayNameRuntimeConfig(paths: ProtectedPaths, command: string, unquoted: string): boolean {
  for (const entry of paths.runtimeConfig ?? []) {
    const abs = entry.endsWith(sep) ? entry.slice(0, -1) : entry;
    for (const name of [basename(abs), basename(dirname(abs))]) {
      if (name && (command.includes(name) || unquoted.includes(name))) return true;
    }
  }
  return false;
}

/**
 * The spellings of the runtime's settings files a command may name: each file (or directory entry,
 * and anything in it) as the project names it (`.claude/settings.json`, `.mcp.json`,
 * `.github/hooks/x.json`), outside the project by its last two components (`.codex/hooks.json`,
 * whatever the home), and by its absolute and real paths; and the directory holding each one as a
 * word of its own (`rm -rf .claude`, `mv .codex x`), unless that is the project itself.
 * Undefined when there are none.
 */
function runtimeConfigPattern(paths: ProtectedPaths): RegExp | undefined {
  const entries = paths.runtimeConfig ?? [];
  if (entries.length === 0) return undefined;
  const project = dirname(paths.projectStateDir);
  const projects = new Set([project, realTarget(project)]);
  const files = new Set<string>();
  const trees = new Set<string>();
  const holders = new Set<string>();
  const inProject = (abs: string) => {
    const rel = relative(project, abs);
    return rel !== '' && rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel) ? rel : undefined;
  };
  const tail = (abs: string, n: number) => abs.split(sep).slice(-n).join('/');
  for (const entry of entries) {
    const isDir = entry.endsWith(sep);
    const abs = isDir ? entry.slice(0, -1) : entry;
    const set = isDir ? trees : files;
    const holder = isDir ? abs : dirname(abs);
    set.add(inProject(abs) ?? tail(abs, 2));
    if (!projects.has(holder)) holders.add(inProject(holder) ?? tail(holder, 1));
    // Absolute spellings, lexical and real (a link named elsewhere adds no short spelling).
    for (const p of new Set([abs, realTarget(abs)])) set.add(p);
    for (const h of new Set([holder, realTarget(holder)])) if (!projects.has(h)) holders.add(h);
  }
  const before = String.raw`(?:^|[\s'"\x60=:;&|(<>/])`;
  const end = String.raw`(?=$|[\s'"\x60;&|)<>])`;
  const alt = (set: Set<string>) => [...set].map(escapeRegExp).join('|') || '(?!)';
  return new RegExp(
    `${before}(?:(?:${alt(files)})${end}|(?:${alt(trees)})(?:/[^\\s'"\x60;&|)<>]*)?${end}|(?:${alt(holders)})/?${end})`,
  );
}

/**
 * Classifies a Bash command for the gate. With `launch`, `continuity_readonly` also needs the
 * command's program to be this package's own binary ({@link LaunchTrust}); without it the
 * classification reads the text only (the gate always passes it).
 */
export function inspectBashCommand(
  command: string,
  paths: ProtectedPaths,
  launch?: LaunchTrust,
): BashCommandKind {
  const f = bashFindings(command, paths, launch);
  return f.kind === 'other' && f.runtimeChosen ? 'runtime_chosen' : f.kind;
}

function inside(dir: string, path: string): boolean {
  const rel = relative(dir, path);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

/**
 * The real location `path` names, symbolic links resolved: its own real path when it exists,
 * else the real path of its nearest existing parent with the rest appended (where a new file
 * would be created). `..` is taken the way the kernel takes it, after the link before it.
 */
export function realTarget(path: string): string {
  let head = path;
  const rest: string[] = [];
  for (;;) {
    try {
      return join(realpathSync.native(head), ...rest.reverse());
    } catch {
      const up = dirname(head);
      if (up === head) return resolve(path);
      rest.push(basename(head));
      head = up;
    }
  }
}

/**
 * Where a file-writing tool's target lies: in the evidence, in `.continuity/`, in a settings file
 * of the runtime that loads the continuity hooks, or elsewhere. Links are followed.
 */
export function inspectTargetPath(
  filePath: string,
  projectDir: string,
  paths: ProtectedPaths,
): 'touches_evidence' | 'touches_task_record' | 'touches_runtime_config' | 'other' {
  const lexical = resolve(projectDir, filePath);
  // Not resolved first: `link/../x` is the parent of the link's target, as the kernel sees it.
  const real = realTarget(isAbsolute(filePath) ? filePath : `${projectDir}${sep}${filePath}`);
  const targets = lexical === real ? [lexical] : [lexical, real];
  const roots = (p: string) => {
    const r = realTarget(p);
    return r === p ? [p] : [p, r];
  };
  const state = roots(paths.stateRoot);
  const files = paths.files.flatMap((f) => roots(resolve(f)));
  if (targets.some((t) => state.some((s) => inside(s, t)) || files.includes(t))) return 'touches_evidence';
  const project = roots(paths.projectStateDir);
  if (targets.some((t) => project.some((p) => inside(p, t)))) return 'touches_task_record';
  // Resolving each entry's links costs a few system calls, on the fast path: a file entry is looked
  // at only when the target (or what it links to) has its name.
  const names = new Set(targets.map((t) => basename(t)));
  for (const entry of paths.runtimeConfig ?? []) {
    // A directory entry (ending in the separator) holds every file in it.
    const tree = entry.endsWith(sep);
    if (!tree && !names.has(basename(entry))) continue;
    for (const r of roots(tree ? entry.slice(0, -1) : entry)) {
      if (targets.some((t) => (tree ? inside(r, t) : t === r))) return 'touches_runtime_config';
    }
  }
  return 'other';
}

// ── Hard links ────────────────────────────────────────────────────────────────────────────────
/** A protected file's identity on disk, and what touching it means. */
interface ProtectedInode {
  dev: number;
  ino: number;
  nlink: number;
  /** `evidence` (ledger, its head, keys): denied; `task_record` (task record, configuration): asked. */
  what: 'evidence' | 'task_record';
}

/**
 * The files the guard knows by their inode as well as by their path: the configuration, the task
 * record, the ledger and its head, the key files. A hard link is the same inode under another
 * name, which no path comparison sees; the inode and its link count do.
 */
function protectedInodes(config: AdapterConfig): ProtectedInode[] {
  const e = config.env;
  const files: Array<[string, ProtectedInode['what']]> = [
    [e.configFile ?? join(config.projectDir, DEFAULT_CONFIG_FILE), 'task_record'],
    [config.taskRecordPath, 'task_record'],
    [e.ledgerPath, 'evidence'],
    [`${e.ledgerPath}.head`, 'evidence'],
  ];
  if (e.digestKeyFile) files.push([e.digestKeyFile, 'evidence']);
  if (e.chainKeyFile) files.push([e.chainKeyFile, 'evidence']);
  const out: ProtectedInode[] = [];
  for (const [path, what] of files) {
    const st = statOf(path);
    if (st?.isFile()) out.push({ dev: st.dev, ino: st.ino, nlink: st.nlink, what });
  }
  return out;
}

/** `stat` of `path`, links followed; undefined when it cannot be had (missing, a parent not a directory, …). */
function statOf(path: string): import('node:fs').Stats | undefined {
  try {
    return statSync(path, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

/** Most words of a command whose files the hard-link guard looks up. */
const MAX_WORDS_STATTED = 64;

/**
 * What the hard-link guard finds: a target that is a protected file under another name, or a
 * protected file with more than one name (a link made earlier, whatever it is called now). Looks
 * at the target of a file tool and at each word of a command that names an existing file.
 */
function hardLinkVerdict(tool: ToolEvent, config: AdapterConfig): Verdict | undefined {
  if (tool.kind !== 'file_write' && tool.kind !== 'command') return undefined;
  const inodes = protectedInodes(config);
  if (inodes.length === 0) return undefined;
  const candidates: string[] = [];
  if (tool.kind === 'file_write' && tool.filePath !== undefined) candidates.push(tool.filePath);
  if (tool.kind === 'command' && tool.command !== undefined) {
    for (const c of readShell(tool.command).commands) {
      for (const w of c) if (!w.dynamic && w.text.length > 0) candidates.push(w.text);
    }
  }
  for (const path of candidates.slice(0, MAX_WORDS_STATTED)) {
    const st = statOf(resolve(config.projectDir, path));
    const hit = st && inodes.find((p) => p.dev === st.dev && p.ino === st.ino);
    if (hit) {
      return hit.what === 'evidence'
        ? { verdict: 'deny', code: 'evidence_refused' }
        : { verdict: 'ask', code: 'hard_link_ask' };
    }
  }
  if (inodes.some((p) => p.nlink > 1)) return { verdict: 'ask', code: 'hard_link_ask' };
  return undefined;
}

// ── Decision ──────────────────────────────────────────────────────────────────────────────────
export type { GateAnswer, GateCode } from './events.js';

/**
 * Re-derives a session's gate state from the ledger (and the cache where it knows more, such as a
 * boundary just opened and not yet appended). Returns `undefined` when it can derive nothing for
 * the session, and throws when the ledger cannot be read. Loaded only on the slow path.
 */
export type Rederive = (sessionId: string, cached: GateState | undefined) => Promise<GateState | undefined>;

/** The paths the guard protects, from the resolved environment and configuration. */
export function protectedPaths(config: AdapterConfig): ProtectedPaths {
  const e = config.env;
  const files = [e.ledgerExplicit ? e.ledgerPath : undefined, e.digestKeyFile, e.chainKeyFile].filter(
    (f): f is string => typeof f === 'string' && f.length > 0,
  );
  return {
    stateRoot: e.stateRoot,
    files,
    projectStateDir: join(config.projectDir, PROJECT_STATE_DIR),
    runtimeConfig: config.runtimeConfig ?? [],
  };
}

function gated(tools: readonly string[], toolName: string | undefined): boolean {
  if (!toolName) return false;
  return tools.includes('*') || tools.includes(toolName);
}

/** A decision before its reason is worded (the words are loaded only when needed). */
type Verdict = { verdict: 'ask' | 'deny'; code: GateCode };

/** What the guard found, independent of the continuity state. */
interface Guarded {
  /** The guard's own answer, if any. */
  verdict?: Verdict;
  /** The always-allowed restating command. */
  continuityCommand?: boolean;
  /** A program chosen at run time: refused while a boundary is unresolved. */
  runtimeChosen?: boolean;
}

function guardDecision(tool: ToolEvent, config: AdapterConfig, launch: LaunchTrust): Guarded {
  const g = pathGuard(tool, config, launch);
  if (g.continuityCommand || g.verdict?.verdict === 'deny' || !config.gate.protectContinuityFiles) return g;
  const linked = hardLinkVerdict(tool, config);
  if (linked && (!g.verdict || SEVERITY[linked.verdict] > SEVERITY[g.verdict.verdict])) {
    return { ...g, verdict: linked };
  }
  return g;
}

function pathGuard(tool: ToolEvent, config: AdapterConfig, launch: LaunchTrust): Guarded {
  const paths = protectedPaths(config);
  const protect = config.gate.protectContinuityFiles;
  if (tool.kind === 'command') {
    if (tool.command === undefined) {
      return tool.truncated ? { verdict: { verdict: 'ask', code: 'uninspectable_ask' } } : {};
    }
    const f = bashFindings(tool.command, paths, launch);
    // Approvals come from a human: refused whatever the configuration says.
    if (f.kind === 'approve') return { verdict: { verdict: 'deny', code: 'approve_refused' } };
    if (f.kind === 'continuity_readonly') return { continuityCommand: true };
    const out: Guarded = f.runtimeChosen ? { runtimeChosen: true } : {};
    if (protect && f.kind === 'touches_evidence') out.verdict = { verdict: 'deny', code: 'evidence_refused' };
    else if (protect && f.kind === 'touches_task_record')
      out.verdict = { verdict: 'ask', code: 'task_record_ask' };
    else if (protect && f.kind === 'touches_runtime_config')
      out.verdict = { verdict: 'ask', code: 'runtime_config_ask' };
    else if (tool.truncated) out.verdict = { verdict: 'ask', code: 'uninspectable_ask' };
    return out;
  }
  if (tool.filePath !== undefined && protect) {
    const where = inspectTargetPath(tool.filePath, config.projectDir, paths);
    if (where === 'touches_evidence') return { verdict: { verdict: 'deny', code: 'evidence_refused' } };
    const task = config.taskRecordPath;
    if (
      where === 'touches_task_record' ||
      resolve(config.projectDir, tool.filePath) === task ||
      realTarget(resolve(config.projectDir, tool.filePath)) === realTarget(task)
    ) {
      return { verdict: { verdict: 'ask', code: 'task_record_ask' } };
    }
    if (where === 'touches_runtime_config')
      return { verdict: { verdict: 'ask', code: 'runtime_config_ask' } };
  }
  // A payload too large to read whole, or a multi-file edit whose targets could not be parsed, may
  // name any target: never without a human.
  if (tool.truncated && tool.kind === 'file_write')
    return { verdict: { verdict: 'ask', code: 'uninspectable_ask' } };
  return {};
}

/** What the gate needs besides the tool call. */
export interface GateContext {
  config: AdapterConfig;
  /** The runtime adapter's state directory. */
  state: StateDir;
  /** The slow path (ledger + classifier); called only when the cache is missing, blocks or is not this ledger's. */
  rederive: Rederive;
  /** How the words name tools and the launcher. */
  voice: Voice;
  /** Receives one line when the gate cannot read its state. */
  warn?: (line: string) => void;
  /**
   * The session's gate cache as this process already read it (the hook pipeline reads each state
   * file once, ./pipeline.ts). Default: read it now.
   */
  cached?: () => GateState | undefined;
  /**
   * What the always-allowed restatement command may run: this package's own binary. Without it
   * no shell command is exempt (an adapter whose agent restates through a tool of its own).
   */
  launch?: LaunchTrust;
}

/** No program is trusted: the restatement exemption is off. */
const NO_LAUNCH: LaunchTrust = { script: undefined, path: '', execPath: '' };

/** The session's state as far as the gate can establish it; `unknown` when it cannot. */
type SessionState = { known: true; boundary: GateBoundary | null } | { known: false; boundary?: never };

/**
 * A cached state the gate may act on without the ledger: one that objects (the ledger can only
 * relax it, and the gate looks there anyway), or one with no objection derived from this very
 * ledger file.
 */
function trustedCache(state: GateState | undefined, ledgerPath: string): boolean {
  const b = state?.boundary;
  if (state === undefined || b === undefined) return false;
  if (b !== null && !isHealthy(b.state)) return false;
  // No objection (a healthy boundary, or none): only as derived from this ledger, with nothing
  // recorded for the session since.
  const id = b === null ? state.ledgerId : b.ledgerId;
  return id !== undefined && ledgerUnchangedFor(id, ledgerPath, state.sessionId);
}

async function sessionState(sessionId: string, ctx: GateContext): Promise<SessionState> {
  const cached = ctx.cached ? ctx.cached() : readGateState(ctx.state, sessionId);
  // A cache with no objection counts only when this run could also have replaced it: one the
  // hooks cannot write may be missing the compaction they saw (it is re-derived from the ledger).
  if (trustedCache(cached, ctx.config.env.ledgerPath) && cacheReplaceable(ctx.state, sessionId)) {
    return { known: true, boundary: cached!.boundary };
  }
  let derived: GateState | undefined;
  try {
    derived = await ctx.rederive(sessionId, cached);
  } catch (e) {
    ctx.warn?.(`gate could not read the ledger (${(e as Error).message.split('\n')[0]})`);
  }
  if (derived) return { known: true, boundary: derived.boundary };
  // Nothing derived: a cached objection still stands; anything else is unknown.
  const b = cached?.boundary;
  if (b && !isHealthy(b.state)) return { known: true, boundary: b };
  return { known: false };
}

const SEVERITY: Readonly<Record<GateVerdict, number>> = { allow: 0, ask: 1, deny: 2 };

/**
 * Decides one tool call of `sessionId`. Never throws for a state it cannot read: it warns and,
 * not knowing whether a compaction is unresolved, asks.
 */
export async function decideGate(sessionId: string, tool: ToolEvent, ctx: GateContext): Promise<GateAnswer> {
  try {
    const answer = await decide(sessionId, tool, ctx);
    // A configuration that relaxes the gate was decided on with the strict defaults. Only when they
    // object can the relaxation matter, so only then is its seal checked (crypto, off the fast path).
    if (answer.verdict === 'allow' || !ctx.config.unsealed) return answer;
    return await (await import('./config-seal.js')).gateUnderSeal(answer, ctx.config, (config) =>
      decide(sessionId, tool, { ...ctx, config }),
    );
  } catch (e) {
    // A gate that fails on the way to a verdict (an input it cannot read, a file system error)
    // must not stay silent: silence is "no objection". It asks.
    ctx.warn?.(`gate failed (${(e as Error)?.message?.split('\n')[0] ?? String(e)}); asking`);
    return { verdict: 'ask', code: 'gate_failed', reason: GATE_FAILED_ASK };
  }
}

/**
 * The gate's answer for one call: the most severe answer over its tool events (deny > ask >
 * allow); an `allow` with a reason to allow outranks the default `not_gated`.
 */
export async function decideToolCall(
  sessionId: string,
  tools: readonly ToolEvent[],
  ctx: GateContext,
): Promise<GateAnswer> {
  let worst: GateAnswer = { verdict: 'allow', code: 'not_gated' };
  for (const e of tools) {
    const a = await decideGate(sessionId, e, ctx);
    if (
      SEVERITY[a.verdict] > SEVERITY[worst.verdict] ||
      (worst.code === 'not_gated' && a.verdict === 'allow')
    )
      worst = a;
    if (worst.verdict === 'deny') break;
  }
  return worst;
}

/** The reason of a gate that failed on its way to a verdict (inline: the messages may be what failed). */
const GATE_FAILED_ASK =
  'The continuity gate asks a human first: it failed while inspecting this tool call, so it cannot tell whether it is safe.';

async function decide(sessionId: string, tool: ToolEvent, ctx: GateContext): Promise<GateAnswer> {
  const { config } = ctx;
  const listed = gated(config.gate.tools, tool.toolName);
  if (!listed && tool.kind !== 'unknown') return { verdict: 'allow', code: 'not_gated' };
  // What the configuration says is unknown: anything but a read waits for a human.
  if (config.configProblem)
    return worded({ verdict: 'ask', code: 'config_unreadable' }, sessionId, ctx.voice);
  if (!listed) return decideUnknown(sessionId, ctx);
  const guard = guardDecision(tool, config, ctx.launch ?? NO_LAUNCH);
  if (guard.continuityCommand) return { verdict: 'allow', code: 'continuity_command' };
  // Nothing outranks a denial: the state need not be read.
  if (guard.verdict?.verdict === 'deny') return worded(guard.verdict, sessionId, ctx.voice);

  const s = await sessionState(sessionId, ctx);
  if (!s.known) {
    if (guard.runtimeChosen)
      return worded({ verdict: 'deny', code: 'runtime_chosen_refused' }, sessionId, ctx.voice);
    return worded({ verdict: 'ask', code: 'state_unknown' }, sessionId, ctx.voice);
  }
  const b = s.boundary;
  if (b && !isHealthy(b.state) && guard.runtimeChosen) {
    return worded({ verdict: 'deny', code: 'runtime_chosen_refused' }, sessionId, ctx.voice);
  }
  const state: GateVerdict = b ? policyVerdict(config.gate.policy, b.state, b.reason) : 'allow';
  const own = guard.verdict;
  if (own && SEVERITY[own.verdict] > SEVERITY[state]) return worded(own, sessionId, ctx.voice);
  if (state === 'allow') return { verdict: 'allow', code: b ? 'state_allows' : 'no_compaction' };
  return worded({ verdict: state, code: 'state_blocks' }, sessionId, ctx.voice, b ?? undefined);
}

/**
 * A tool the runtime's adapter does not know and the configuration does not list: it passes while
 * no boundary holds writes, and gets the unknown-tool policy (default `ask`) while one does, or
 * while the state cannot be read.
 */
async function decideUnknown(sessionId: string, ctx: GateContext): Promise<GateAnswer> {
  const policy = ctx.config.gate.unknownTools;
  if (policy === 'allow') return { verdict: 'allow', code: 'not_gated' };
  const s = await sessionState(sessionId, ctx);
  if (!s.known) return worded({ verdict: 'ask', code: 'state_unknown' }, sessionId, ctx.voice);
  const b = s.boundary;
  if (!b) return { verdict: 'allow', code: 'no_compaction' };
  if (policyVerdict(ctx.config.gate.policy, b.state, b.reason) === 'allow') {
    return { verdict: 'allow', code: 'state_allows' };
  }
  return worded({ verdict: policy, code: 'unknown_tool_held' }, sessionId, ctx.voice);
}

/** Words a decision; the messages module is loaded only here, off the fast path. */
async function worded(v: Verdict, sessionId: string, voice: Voice, b?: GateBoundary): Promise<GateAnswer> {
  const m = await import('./messages.js');
  const reasons: Partial<Record<GateCode, string>> = {
    approve_refused: m.APPROVE_REFUSED,
    evidence_refused: m.EVIDENCE_REFUSED,
    task_record_ask: m.TASK_RECORD_ASK,
    uninspectable_ask: m.UNINSPECTABLE_ASK,
    runtime_chosen_refused: m.RUNTIME_CHOSEN_REFUSED,
    state_unknown: m.STATE_UNKNOWN_ASK,
    unknown_tool_held: m.UNKNOWN_TOOL_HELD,
    config_unreadable: m.CONFIG_UNREADABLE_ASK,
    hard_link_ask: m.HARD_LINK_ASK,
    runtime_config_ask: m.RUNTIME_CONFIG_ASK,
  };
  const reason = b
    ? m.gateReason(m.boundaryView(sessionId, b), v.verdict, voice)
    : (reasons[v.code] ?? v.code);
  return { verdict: v.verdict, code: v.code, reason };
}
