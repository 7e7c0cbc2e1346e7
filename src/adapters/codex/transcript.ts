/**
 * Context fill from Codex's rollout file (the hooks' `transcript_path`), read locally and only for
 * numbers: the path is never stored or sent, and nothing but a token count leaves this module.
 *
 * What 0.171.0 writes (measured, docs/codex.md): after every model response an
 * `{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{…,"total_tokens":N}}}}`
 * line. The latest one's `last_token_usage.total_tokens` is the number Codex compares with
 * `model_auto_compact_token_limit`, so at PreCompact it is the context fill the compaction starts from.
 */
import { isCount } from '../core/boundary.js';
import { tailLines } from '../core/recording.js';

/** The latest response's `total_tokens` in a rollout file, or undefined. Never throws. */
export function lastContextTokens(path: string): number | undefined {
  const lines = tailLines(path);
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]!;
    if (!line.includes('"token_count"')) continue;
    let rec: unknown;
    try {
      rec = JSON.parse(line);
    } catch {
      continue;
    }
    const payload = (rec as { type?: unknown; payload?: { type?: unknown; info?: unknown } })?.payload;
    if ((rec as { type?: unknown }).type !== 'event_msg' || payload?.type !== 'token_count') continue;
    const last = (payload.info as { last_token_usage?: { total_tokens?: unknown } } | null)?.last_token_usage;
    const total = last?.total_tokens;
    if (isCount(total) && total > 0) return total;
  }
  return undefined;
}
