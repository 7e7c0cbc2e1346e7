/**
 * Where a restatement came from: `context` (the agent's own context after the compaction) or
 * `record` (it read the task record, the configuration or the ledger in this boundary first). The
 * tool hooks see every tool the agent runs after it ran (Claude Code's `PostToolUse`, matcher
 * `*`); one that read the record marks the session's current boundary, and the restatement
 * recorded next reads the mark. A read the runtime denied never ran, so it marks nothing.
 *
 * How a read is recognised:
 * - a file tool (Read, Grep, Glob, …) by its target paths: inside `.continuity/` or the state
 *   directory, the task record or the ledger, lexically, through a symbolic link, or as the same
 *   file (device and inode: a hard link under a harmless name);
 * - a shell command by its text (the gate's reading of it: it names `.continuity/`, the ledger
 *   or the state directory) and by its words that name an existing file with one of those inodes.
 *   This is best effort: a command that builds the path at run time is not seen. The boundary
 *   that holds is the runtime's (Claude Code's `Read` deny rules and the sandbox's `denyRead`
 *   on `.continuity/`, which `continuity init` writes): with them the agent cannot read the record
 *   at all, and provenance tells an unprotected setup's "restored" from "survived".
 *
 * Policy (docs/security.md): provenance never changes a classification. A boundary restated
 * from the record is still `preserved` when the values match (the agent now holds the right
 * values, so the gate lets it write), and it is recorded as such on the post snapshot, the post
 * span (`continuity.restatement.provenance`) and the page, so that what survived the summary
 * and what was restored from the record are counted apart.
 */
import { statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import type { Provenance } from '../../ledger/types.js';
import type { AdapterConfig } from './config.js';
import { inspectBashCommand, inspectTargetPath, protectedPaths } from './gate.js';
import { readShell } from './shell.js';
import { createMarker, type GateState, markerFile, readGateState, type StateDir } from './state.js';

/** The marker a read of the record leaves on the session's current boundary. */
export const RECORD_READ_MARKER = 'record-read';

/** A tool that ran, as far as provenance is concerned. */
export interface ToolRan {
  /** A shell command's text (inspected, never stored). */
  command?: string;
  /** A file tool's target paths: `file_path`, a search's `path`, a glob pattern (never stored). */
  paths: readonly string[];
}

/** Most shell words looked up by inode (a command naming more is judged by its text alone). */
const MAX_WORDS = 64;

/** Device and inode of the files whose reading makes a restatement `record`. */
function protectedInodes(config: AdapterConfig): Set<string> {
  const out = new Set<string>();
  for (const f of [config.taskRecordPath, config.env.ledgerPath]) {
    try {
      const st = statSync(f);
      if (st.isFile()) out.add(`${st.dev}:${st.ino}`);
    } catch {
      // Not there: nothing to recognise.
    }
  }
  return out;
}

function sameInode(path: string, inodes: ReadonlySet<string>): boolean {
  if (inodes.size === 0) return false;
  try {
    const st = statSync(path);
    return st.isFile() && inodes.has(`${st.dev}:${st.ino}`);
  } catch {
    return false;
  }
}

/** The part of a glob pattern before its first wildcard (`.continuity/*.json` → `.continuity/`). */
function globBase(pattern: string): string {
  const at = pattern.search(/[*?[{]/);
  return at === -1 ? pattern : pattern.slice(0, at);
}

/**
 * True when the tool read (or may have read) the task record, the configuration or the ledger.
 * `cwd` resolves relative paths (the session's working directory). Never throws.
 */
export function readTheRecord(tool: ToolRan, config: AdapterConfig, cwd: string): boolean {
  try {
    const paths = protectedPaths(config);
    const inodes = protectedInodes(config);
    const task = resolve(config.taskRecordPath);
    const touches = (p: string) => {
      if (p === '') return false;
      const abs = isAbsolute(p) ? p : resolve(cwd, p);
      const where = inspectTargetPath(abs, cwd, paths);
      const record = where === 'touches_evidence' || where === 'touches_task_record';
      return record || abs === task || sameInode(abs, inodes);
    };
    if (tool.paths.some((p) => touches(p) || touches(globBase(p)))) return true;
    if (tool.command === undefined) return false;
    const kind = inspectBashCommand(tool.command, paths);
    if (kind === 'touches_evidence' || kind === 'touches_task_record') return true;
    const words = readShell(tool.command)
      .commands.flat()
      .slice(0, MAX_WORDS * 4);
    let looked = 0;
    for (const w of words) {
      if (w.dynamic || w.text.startsWith('-') || w.text.length > 4096) continue;
      if (++looked > MAX_WORDS) break;
      if (sameInode(isAbsolute(w.text) ? w.text : resolve(cwd, w.text), inodes)) return true;
    }
    return false;
  } catch {
    return false;
  }
}

/**
 * Marks the session's current boundary (the gate state's) as "the record was read". Nothing when
 * no compaction is confirmed yet: a read before it is part of the context being summarised.
 * Returns true when a mark was made now or before.
 */
export function noteRecordRead(
  state: StateDir,
  sessionId: string,
  gate: () => GateState | undefined = () => readGateState(state, sessionId),
): boolean {
  const b = gate()?.boundary;
  if (!b) return false;
  createMarker(markerFile(state, sessionId, b.id, RECORD_READ_MARKER));
  return true;
}

/** The provenance of a restatement of `boundaryId` recorded now. */
export function restatementProvenance(state: StateDir, sessionId: string, boundaryId: string): Provenance {
  try {
    statSync(markerFile(state, sessionId, boundaryId, RECORD_READ_MARKER));
    return 'record';
  } catch {
    return 'context';
  }
}
