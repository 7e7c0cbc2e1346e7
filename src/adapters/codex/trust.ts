/**
 * Codex CLI's hook trust, computed offline (pure). Codex 0.171.0 runs a hook from `hooks.json` or
 * `[hooks]` only when `config.toml` holds, for that hook,
 *
 * ```toml
 * [hooks.state."<source file>:<event_snake>:<group index>:<handler index>"]
 * trusted_hash = "sha256:<hex>"
 * ```
 *
 * and the hash equals the hook's current identity: SHA-256 of the canonical JSON (keys sorted, no
 * white space) of `{ event_name, matcher?, hooks: [{ type, command, timeout, async, statusMessage? }] }`
 * with the effective timeout in seconds. An untrusted or changed ("modified") hook is skipped
 * silently. Verified against the binary's own `hooks/list` (`currentHash`, `trustStatus`) by
 * test/codex-e2e/init.test.ts.
 */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';

/** A hook handler as Codex identifies it. */
export interface HookHandler {
  type: 'command';
  command: string;
  /** Seconds. Default 600 (SessionEnd and Interrupt: 1, at most 3). */
  timeout?: number;
  async?: boolean;
  statusMessage?: string;
}

/** Codex's default handler timeout in seconds. */
export const DEFAULT_TIMEOUT_S = 600;

/** The events whose matcher is part of a hook's identity (the others drop it). */
const MATCHER_EVENTS = new Set([
  'PreToolUse',
  'PostToolUse',
  'PermissionRequest',
  'SessionStart',
  'PreCompact',
  'PostCompact',
  'SubagentStart',
  'SubagentStop',
]);

/** `PreToolUse` → `pre_tool_use`: the event's name in trust keys and identities. */
export function snakeEvent(event: string): string {
  return event.replace(/(?<!^)([A-Z])/g, '_$1').toLowerCase();
}

/** The trust key of a handler: `<source file>:<event_snake>:<group index>:<handler index>`. */
export function trustKey(sourceFile: string, event: string, group: number, handler: number): string {
  return `${sourceFile}:${snakeEvent(event)}:${group}:${handler}`;
}

/** The `trusted_hash` Codex computes for a handler of `event` in a group with `matcher`. */
export function trustedHash(event: string, matcher: string | undefined, h: HookHandler): string {
  const effective =
    event === 'SessionEnd' || event === 'Interrupt'
      ? Math.min(h.timeout ?? 1, 3)
      : (h.timeout ?? DEFAULT_TIMEOUT_S);
  const identity: Record<string, unknown> = {
    event_name: snakeEvent(event),
    hooks: [
      {
        type: h.type,
        command: h.command,
        timeout: effective,
        async: h.async ?? false,
        ...(h.statusMessage !== undefined ? { statusMessage: h.statusMessage } : {}),
      },
    ],
  };
  if (matcher !== undefined && MATCHER_EVENTS.has(event)) identity.matcher = matcher;
  const text = canonicalize(identity) ?? '';
  return `sha256:${createHash('sha256').update(text, 'utf8').digest('hex')}`;
}
