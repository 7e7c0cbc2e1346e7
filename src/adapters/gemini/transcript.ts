/**
 * Gemini CLI's own record of a compaction: the session's conversation file, the JSON Lines file
 * every hook payload names as `transcript_path` (`~/.gemini/tmp/<project>/chats/session-….jsonl`).
 * Gemini CLI 0.61 has no post-compaction hook, and its `PreCompress` hook fires on every turn,
 * before the threshold check; when a compression is applied it restarts the chat on the
 * compressed history and rewrites the file's messages with one `{"$set":{"messages":[…]}}`
 * record, in which the summary is a user message holding the `<state_snapshot>`, answered by the
 * model message "Got it. Thanks for the additional context!" (recorded on the real binary,
 * docs/gemini-cli.md). A compression that fails (empty summary, inflated token count) rewrites
 * nothing.
 *
 * Later rewrites (a resumed session) restamp every message but keep its id, so the evidence is a
 * summary message id this session has not seen before: each id confirms at most one boundary.
 * Read locally, by the hook of the session that runs next, for ids only: the file also holds
 * prompts, summaries and tool payloads, which are never kept.
 *
 * Lean: node built-ins and the core's state module (the gate's bundle holds it).
 */
import { basename, dirname, isAbsolute } from 'node:path';
import type { CompactionEvidenceContext } from '../claude-code/config.js';
import { createMarker, markerFile } from '../core/state.js';
import { readTail } from '../core/tail.js';

/** How much of the file's tail is read: the compressed history's record is short and recent. */
export const TRANSCRIPT_TAIL_BYTES = 4 * 1024 * 1024;

/** The model's fixed answer to the summary in the compressed history (Gemini CLI 0.61). */
export const SUMMARY_ACK = 'Got it. Thanks for the additional context!';
const SNAPSHOT = '<state_snapshot>';

/** A conversation file path Gemini CLI writes: absolute, `chats/session-*.jsonl`. */
export function isGeminiTranscript(path: string | undefined): path is string {
  if (!path || !isAbsolute(path)) return false;
  return basename(dirname(path)) === 'chats' && /^session-[^/]*\.jsonl$/.test(basename(path));
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((p) =>
      typeof p === 'object' && p !== null && typeof (p as { text?: unknown }).text === 'string'
        ? (p as { text: string }).text
        : '',
    )
    .join('');
}

/**
 * The id and time of the summary in the latest rewritten history of the file text (pure): a user
 * message whose text starts with `<state_snapshot>`, followed by the model's fixed answer.
 */
export function latestSummary(text: string): { id: string; at?: string } | undefined {
  let found: { id: string; at?: string } | undefined;
  for (const line of text.split('\n')) {
    if (!line.includes('"$set"') || !line.includes(SUMMARY_ACK)) continue;
    let rec: unknown;
    try {
      rec = JSON.parse(line);
    } catch {
      continue; // the first line of a tail read, or a line being written
    }
    const messages = (rec as { $set?: { messages?: unknown } } | null)?.$set?.messages;
    if (!Array.isArray(messages)) continue;
    for (let i = 0; i + 1 < messages.length; i++) {
      const m = messages[i] as { id?: unknown; type?: unknown; content?: unknown; timestamp?: unknown };
      const next = messages[i + 1] as { type?: unknown; content?: unknown };
      if (m?.type !== 'user' || typeof m.id !== 'string' || next?.type !== 'gemini') continue;
      if (!textOf(m.content).trimStart().startsWith(SNAPSHOT) || textOf(next.content) !== SUMMARY_ACK)
        continue;
      found = { id: m.id, ...(typeof m.timestamp === 'string' ? { at: m.timestamp } : {}) };
    }
  }
  return found;
}

/**
 * {@link HookDialect.compactionEvidence} for Gemini CLI: a summary in the session's conversation
 * file that this session has not confirmed before. Marks it seen (a marker file named by a digest
 * of the id), so the same compression never confirms a second boundary.
 */
export function geminiCompactionEvidence(
  _env: NodeJS.ProcessEnv,
  sessionId: string,
  _sinceMs: number,
  context: CompactionEvidenceContext,
): string | undefined {
  if (!isGeminiTranscript(context.transcriptPath)) return undefined;
  const text = readTail(context.transcriptPath, TRANSCRIPT_TAIL_BYTES);
  const summary = text === undefined ? undefined : latestSummary(text);
  if (!summary) return undefined;
  if (!createMarker(markerFile(context.state, sessionId, `summary:${summary.id}`, 'summary')))
    return undefined;
  const at = summary.at ? Date.parse(summary.at) : Number.NaN;
  return new Date(Number.isNaN(at) ? Date.now() : at).toISOString();
}
