/**
 * Merging a runtime adapter's command hooks into a settings document whose hooks are listed as
 * `hooks.<Event>[] = { matcher?, hooks: [{ type: "command", command, timeout }] }`, the shape
 * that Claude Code's `settings.json` and Codex's `hooks.json` share. Pure: each runtime's init
 * reads and checks its own file, recognizes its own hooks, and decides what else it writes
 * (Claude Code's protection rules, Codex's trust entries).
 */
import { isRecord } from './state.js';

/** One hook registration an adapter wants: the event, its matcher, the runtime's timeout. */
export interface HookGroupRegistration {
  event: string;
  /** Omitted for events that match everything. */
  matcher?: string;
  /** Seconds before the runtime gives up on the hook. */
  timeout: number;
  /** Why it is there (printed by init). */
  purpose: string;
  /**
   * `block`: a failure of the hook (it timed out, could not start, exited with a code other than
   * 0 or 2, printed invalid JSON) blocks what the event guards, instead of letting it go ahead
   * (Claude Code's `onFailure` on a command hook). Only on the gate's events: a recording hook
   * that fails must never block compaction.
   */
  onFailure?: 'block';
  /**
   * Run in the background (Claude Code's and Qwen Code's `async: true` on a command hook): the
   * runtime does not wait for it. Only on activity hooks, whose records carry the hook's own start
   * time so a late one cannot turn the session's state back (./recording.ts).
   */
  async?: true;
}

/** Hook groups by event, as a settings document lists them. */
export type HookGroups = Record<string, unknown[]>;

/** What merging did. */
export interface HookGroupMerge<R extends HookGroupRegistration> {
  hooks: HookGroups;
  added: R[];
  alreadyPresent: string[];
  /** Events whose hook command was rewritten to the new launcher. */
  rewritten: string[];
  /** Events whose hook of ours got what this version registers (`onFailure`, `async`, the gate's matcher). */
  upgraded: string[];
  /** Hook groups of the user's that were kept. */
  keptGroups: number;
}

function groupHasOurs(g: unknown, isOurs: (h: unknown) => boolean): boolean {
  return isRecord(g) && Array.isArray(g.hooks) && g.hooks.some(isOurs);
}

/**
 * Merges the registrations into `hooks` (pure): an event that has a hook of ours already keeps
 * it; the others get one group of ours appended after everyone else's, so no other hook changes
 * position. With `rewrite`, our hooks whose command differs from `command` are rewritten (all of
 * them, or, given a predicate, those whose current command it accepts); others' hooks are never
 * touched. `isOurs` recognizes the adapter's hook handlers.
 */
export function mergeHookGroups<R extends HookGroupRegistration>(
  hooks: HookGroups,
  command: string,
  registrations: readonly R[],
  rewrite: boolean | ((current: string) => boolean),
  isOurs: (h: unknown) => boolean,
): HookGroupMerge<R> {
  const rewrites = (current: unknown) =>
    current !== command && (rewrite === true || (typeof rewrite === 'function' && rewrite(String(current))));
  const hasOurs = (g: unknown) => groupHasOurs(g, isOurs);
  const out: HookGroups = { ...hooks };
  const added: R[] = [];
  const alreadyPresent: string[] = [];
  const rewritten = new Set<string>();
  const upgraded = new Set<string>();
  let keptGroups = 0;
  for (const groups of Object.values(out)) keptGroups += groups.filter((g) => !hasOurs(g)).length;
  for (const reg of registrations) {
    const groups = out[reg.event] ?? [];
    if (groups.some(hasOurs)) {
      alreadyPresent.push(reg.event);
      continue;
    }
    const group: Record<string, unknown> = {};
    if (reg.matcher !== undefined) group.matcher = reg.matcher;
    group.hooks = [
      {
        type: 'command',
        command,
        timeout: reg.timeout,
        ...(reg.onFailure ? { onFailure: reg.onFailure } : {}),
        ...(reg.async ? { async: true } : {}),
      },
    ];
    out[reg.event] = [...groups, group];
    added.push(reg);
  }
  // A hook of ours registered before `onFailure` or `async` existed gets them (`onFailure` is what
  // makes a hang block; `async` what keeps an activity hook off the tool call's path), and a gate
  // group of ours that matched every tool (`*`) gets the registration's narrower matcher.
  for (const reg of registrations) {
    if (!alreadyPresent.includes(reg.event)) continue;
    if (reg.matcher !== undefined && reg.matcher !== '*') {
      out[reg.event] = (out[reg.event] ?? []).map((g) => {
        if (!hasOurs(g) || (g as Record<string, unknown>).matcher !== '*') return g;
        const group = g as Record<string, unknown> & { hooks: unknown[] };
        if (!group.hooks.every(isOurs)) return g;
        upgraded.add(reg.event);
        return { ...group, matcher: reg.matcher };
      });
    }
    const wanted: Record<string, unknown> = {
      ...(reg.onFailure ? { onFailure: reg.onFailure } : {}),
      ...(reg.async ? { async: true } : {}),
    };
    if (Object.keys(wanted).length === 0) continue;
    out[reg.event] = (out[reg.event] ?? []).map((g) => {
      if (!hasOurs(g)) return g;
      const group = g as Record<string, unknown> & { hooks: unknown[] };
      return {
        ...group,
        hooks: group.hooks.map((h) => {
          if (!isOurs(h)) return h;
          const hook = h as Record<string, unknown>;
          if (Object.entries(wanted).every(([k, v]) => hook[k] === v)) return h;
          upgraded.add(reg.event);
          return { ...hook, ...wanted };
        }),
      };
    });
  }
  if (rewrite !== false) {
    for (const [event, groups] of Object.entries(out)) {
      out[event] = groups.map((g) => {
        if (!hasOurs(g)) return g;
        const group = g as Record<string, unknown> & { hooks: unknown[] };
        return {
          ...group,
          hooks: group.hooks.map((h) => {
            if (!isOurs(h) || !rewrites((h as Record<string, unknown>).command)) return h;
            rewritten.add(event);
            return { ...(h as Record<string, unknown>), command };
          }),
        };
      });
    }
  }
  return {
    hooks: out,
    added,
    alreadyPresent: alreadyPresent.filter((e) => !rewritten.has(e) && !upgraded.has(e)),
    rewritten: [...rewritten],
    upgraded: [...upgraded],
    keptGroups,
  };
}

/** The lines init prints for a merge into the file `label` (added, rewritten, present, kept). */
export function hookMergeLines(
  label: string,
  merged: Omit<HookGroupMerge<HookGroupRegistration>, 'hooks'>,
  command: string,
): string[] {
  const out: string[] = [];
  for (const r of merged.added) {
    out.push(
      `${label}: added ${r.event}${r.matcher ? ` (matcher ${r.matcher})` : ''}, timeout ${r.timeout} s: ${r.purpose}`,
    );
  }
  if (merged.rewritten.length > 0) {
    out.push(`${label}: hook command rewritten to "${command}" for ${merged.rewritten.join(', ')}`);
  }
  if (merged.upgraded.length > 0) {
    out.push(
      `${label}: updated our hooks of ${merged.upgraded.join(', ')} (the gate's matcher, onFailure, async)`,
    );
  }
  if (merged.alreadyPresent.length > 0) {
    out.push(`${label}: already configured: ${merged.alreadyPresent.join(', ')} (left as they are)`);
  }
  if (merged.keptGroups > 0) out.push(`${label}: kept ${merged.keptGroups} hook group(s) of your own`);
  return out;
}
