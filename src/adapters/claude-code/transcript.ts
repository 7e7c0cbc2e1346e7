/**
 * Context fill from Claude Code's session transcript, read locally and only for numbers: the
 * path is never stored or sent, and nothing but token counts leaves this module.
 *
 * What 2.1.328 writes (measured, docs/claude-code.md):
 * - every assistant reply is a `{"type":"assistant","message":{"usage":{…}}}` line; the last
 *   reply's `input_tokens + cache_creation_input_tokens + cache_read_input_tokens + output_tokens`
 *   is the context fill the compaction starts from (the same number the compaction later reports
 *   as `preTokens`), so it is read at PreCompact;
 * - a compaction appends `{"type":"system","subtype":"compact_boundary","timestamp":…,
 *   "compactMetadata":{"preTokens":…,"postTokens":…}}`, but only **after** PostCompact: no hook of
 *   the compaction itself (PreCompact, SessionStart(compact), PostCompact, InstructionsLoaded)
 *   sees it. The next hooks do (SessionStart(resume), Stop, UserPromptSubmit, PostToolUse), so
 *   the adapter reads it there while the current boundary still lacks its numbers.
 *
 * Only the transcript's tail is read (at most {@link TAIL_BYTES}), so a long session costs the
 * same as a short one.
 */
import { isCount } from '../core/boundary.js';
import type { TokenCounts } from '../core/events.js';
import { tailLines } from '../core/recording.js';

export { TAIL_BYTES } from '../core/recording.js';

function parse(line: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(line) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function num(o: Record<string, unknown>, key: string): number {
  const v = o[key];
  return isCount(v) ? v : 0;
}

/** The context fill of the last assistant reply in the transcript, or undefined. Never throws. */
export function lastReplyTokens(path: string): number | undefined {
  const lines = tailLines(path);
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]!;
    if (!line.includes('"assistant"') || !line.includes('"usage"')) continue;
    const rec = parse(line);
    const usage = (rec?.message as Record<string, unknown> | undefined)?.usage;
    if (rec?.type !== 'assistant' || !usage || typeof usage !== 'object') continue;
    const u = usage as Record<string, unknown>;
    const total =
      num(u, 'input_tokens') +
      num(u, 'cache_creation_input_tokens') +
      num(u, 'cache_read_input_tokens') +
      num(u, 'output_tokens');
    return total > 0 ? total : undefined;
  }
  return undefined;
}

/**
 * The numbers of the latest `compact_boundary` record written at or after `sinceMs`, or
 * undefined when there is none yet. Never throws.
 */
export function compactBoundaryTokens(path: string, sinceMs: number): TokenCounts | undefined {
  const lines = tailLines(path);
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]!;
    if (!line.includes('"compact_boundary"')) continue;
    const rec = parse(line);
    if (rec?.type !== 'system' || rec.subtype !== 'compact_boundary') continue;
    const at = typeof rec.timestamp === 'string' ? Date.parse(rec.timestamp) : Number.NaN;
    if (!(at >= sinceMs)) return undefined; // the latest compaction recorded is an older one
    const meta = rec.compactMetadata as Record<string, unknown> | undefined;
    if (!meta) return undefined;
    const out: TokenCounts = {};
    if (isCount(meta.preTokens)) out.before = meta.preTokens;
    if (isCount(meta.postTokens)) out.after = meta.postTokens;
    return out;
  }
  return undefined;
}
