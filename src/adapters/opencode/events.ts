/**
 * OpenCode's hooks and bus events as core events: the translation table, pure. What each one
 * means for continuity is decided here once, for the plugin and for the replay of the orders
 * recorded from the real opencode-ai 1.18.33 (test/fixtures/opencode-1.18.33/).
 *
 * What 1.18.33 sends around a compaction (docs/opencode.md):
 *
 * ```
 * event message.part.updated {part: {type: "compaction", auto, overflow?}}   which kind it is
 * experimental.session.compacting {sessionID}                                → pre (awaited hook)
 * experimental.chat.system.transform                                         the summarizer's own call
 * event message.updated {info: {summary: true, finish}}                      the summary is written
 * experimental.compaction.autocontinue {sessionID}                           → compacted (automatic only; awaited hook)
 * event session.compacted {sessionID}                                        → compacted (its only field)
 * event message.updated {info: {role: "assistant", finish, tokens}}          → measured: the first reply after it
 * ```
 *
 * Hooks are awaited by OpenCode; bus events are delivered to the `event` hook in order but not
 * awaited, so they can trail the hooks. Two confirming signals therefore: the awaited
 * `autocontinue` confirms an automatic compaction before the agent's next model call, and
 * `session.compacted` confirms a manual one (and joins an automatic one). The core's assembly
 * takes them in any order.
 */
import { isCount } from '../core/boundary.js';
import type { BoundaryEvent, Trigger } from '../core/events.js';
import { isRecord } from '../core/state.js';

/** OpenCode's post-compaction signals, as the core's assembly names them. */
export const SIGNALS = {
  sessionCompacted: 'session_compacted',
  autocontinue: 'compaction_autocontinue',
} as const;

/** What the translation remembers of one session between calls (in the plugin's process). */
export interface SessionMemory {
  /** From the latest compaction part: what started the compaction under way. */
  trigger?: Trigger;
  /** Context fill of the latest finished agent reply (what OpenCode compares with its limit). */
  lastTotal?: number;
  /** `lastTotal` when the compaction began: the boundary's "before". */
  beforeCompaction?: number;
  /** True between the compacting hook and the compaction's confirmation: model calls are the summarizer's. */
  summarizing: boolean;
  /** When the current compaction was confirmed (ms), to know the first reply after it. */
  confirmedAtMs?: number;
  /** True until the first reply after the confirmation has given the context fill "after". */
  awaitingAfter: boolean;
}

/** A session nothing was seen of yet. */
export function emptyMemory(): SessionMemory {
  return { summarizing: false, awaitingAfter: false };
}

/** One input of the translation: a hook call or a bus event, with the time it arrived. */
export type OpencodeInput =
  | { kind: 'compacting'; at: string; atMs: number }
  | { kind: 'autocontinue'; at: string; atMs: number }
  | { kind: 'event'; event: { type: string; properties?: unknown }; at: string; atMs: number };

/** The session a bus event belongs to, when it names one. */
export function sessionOf(event: { type: string; properties?: unknown }): string | undefined {
  const p = event.properties;
  if (!isRecord(p)) return undefined;
  if (typeof p.sessionID === 'string') return p.sessionID;
  if (isRecord(p.info) && typeof p.info.sessionID === 'string') return p.info.sessionID;
  if (isRecord(p.part) && typeof p.part.sessionID === 'string') return p.part.sessionID;
  return undefined;
}

/** A finished assistant message: whether it is the summary, its creation time, its token counts. */
interface FinishedReply {
  summary: boolean;
  createdMs: number;
  /** The context fill OpenCode checks against its limit: `total`, else the sum of the parts. */
  total: number;
  /** The prompt's size: `input + cache.read + cache.write`. */
  prompt: number;
}

function finishedReply(props: unknown): FinishedReply | undefined {
  if (!isRecord(props) || !isRecord(props.info)) return undefined;
  const m = props.info;
  if (m.role !== 'assistant' || typeof m.finish !== 'string' || !isRecord(m.tokens)) return undefined;
  const t = m.tokens;
  const cache = isRecord(t.cache) ? t.cache : {};
  const n = (v: unknown) => (isCount(v) ? v : 0);
  const prompt = n(t.input) + n(cache.read) + n(cache.write);
  const total = isCount(t.total) && t.total > 0 ? t.total : prompt + n(t.output);
  const created = isRecord(m.time) && isCount(m.time.created) ? m.time.created : 0;
  return { summary: m.summary === true, createdMs: created, total, prompt };
}

/** One translation step: the session's memory after `input`, and the core event it is, if any. Pure. */
export function translate(
  memory: SessionMemory,
  input: OpencodeInput,
): { memory: SessionMemory; event?: BoundaryEvent } {
  const m = { ...memory };
  const before = m.beforeCompaction ?? m.lastTotal;
  const tokens = isCount(before) ? { tokens: { before } } : {};
  if (input.kind === 'compacting') {
    m.summarizing = true;
    return {
      memory: m,
      event: {
        type: 'pre',
        at: input.at,
        ...(m.trigger ? { trigger: m.trigger } : {}),
        ...(isCount(before) ? { tokensBefore: before } : {}),
      },
    };
  }
  if (input.kind === 'autocontinue') {
    confirm(m, input.atMs);
    return {
      memory: m,
      event: { type: 'compacted', at: input.at, signal: SIGNALS.autocontinue, trigger: 'auto', ...tokens },
    };
  }
  const { type, properties: p } = input.event;
  switch (type) {
    case 'message.part.updated': {
      const part = isRecord(p) && isRecord(p.part) ? p.part : undefined;
      if (part?.type === 'compaction') {
        m.trigger = part.auto === true ? 'auto' : 'manual';
        m.beforeCompaction = m.lastTotal;
      }
      return { memory: m };
    }
    case 'session.compacted': {
      const trigger = m.trigger;
      confirm(m, input.atMs);
      return {
        memory: m,
        event: {
          type: 'compacted',
          at: input.at,
          signal: SIGNALS.sessionCompacted,
          ...(trigger ? { trigger } : {}),
          ...tokens,
        },
      };
    }
    case 'message.updated': {
      const r = finishedReply(p);
      if (!r || r.summary) return { memory: m };
      m.lastTotal = r.total;
      if (m.awaitingAfter && m.confirmedAtMs !== undefined && r.createdMs >= m.confirmedAtMs) {
        m.awaitingAfter = false;
        return { memory: m, event: { type: 'measured', at: input.at, tokens: { after: r.prompt } } };
      }
      return { memory: m };
    }
    case 'session.idle':
    case 'session.error':
      m.summarizing = false;
      return { memory: m };
    default:
      return { memory: m };
  }
}

function confirm(m: SessionMemory, atMs: number): void {
  m.summarizing = false;
  if (!m.awaitingAfter) {
    m.awaitingAfter = true;
    m.confirmedAtMs = atMs;
  }
  delete m.trigger;
  delete m.beforeCompaction;
}
