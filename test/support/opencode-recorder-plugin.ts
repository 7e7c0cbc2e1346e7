/**
 * A second plugin the OpenCode e2e loads next to ours (test/opencode/harness.ts): it appends, one
 * JSON line each, what the real OpenCode hands the hooks the adapter uses, in the order it hands
 * them, keeping only the fields the translation reads (test/fixtures/opencode-1.18.33/ holds the
 * sanitized recordings). Bun loads this file as it is: node:fs only, no import of OpenCode's
 * packages. Never throws into OpenCode.
 */
import { appendFileSync } from 'node:fs';

const LOG = process.env.RECORDER_LOG;

type Json = Record<string, unknown>;

function rec(o: unknown): Json | undefined {
  return typeof o === 'object' && o !== null && !Array.isArray(o) ? (o as Json) : undefined;
}

function pick(o: unknown, keys: readonly string[]): Json | undefined {
  const r = rec(o);
  if (!r) return undefined;
  const out: Json = {};
  for (const k of keys) if (r[k] !== undefined) out[k] = r[k];
  return out;
}

function log(hook: string, fields: Json): void {
  if (!LOG) return;
  try {
    appendFileSync(LOG, `${JSON.stringify({ t: Date.now(), pid: process.pid, hook, ...fields })}\n`);
  } catch {
    // never break OpenCode because the log cannot be written
  }
}

/** The bus event, slimmed to what identifies it and what the adapter's translation reads. */
function slimEvent(event: unknown): Json {
  const e = rec(event) ?? {};
  const p = rec(e.properties) ?? {};
  const props: Json = {};
  if (typeof p.sessionID === 'string') props.sessionID = p.sessionID;
  const part = pick(p.part, ['type', 'sessionID', 'messageID', 'auto', 'overflow', 'tool']);
  if (part) props.part = part;
  const info = rec(p.info);
  if (info) {
    const slim = pick(info, ['id', 'sessionID', 'role', 'agent', 'mode', 'finish', 'summary']) ?? {};
    const time = pick(info.time, ['created', 'completed']);
    if (time) slim.time = time;
    const tokens = rec(info.tokens);
    if (tokens)
      slim.tokens = {
        ...pick(tokens, ['total', 'input', 'output', 'reasoning']),
        cache: pick(tokens.cache, ['read', 'write']),
      };
    props.info = slim;
  }
  return { type: e.type, properties: props };
}

/** The recorder: OpenCode calls every export of a plugin module as a plugin factory. */
export async function RecorderPlugin(): Promise<Json> {
  return {
    async event({ event }: { event: unknown }) {
      const type = rec(event)?.type;
      if (type === 'message.part.delta' || type === 'catalog.updated' || type === 'plugin.added') return;
      log('event', { event: slimEvent(event) });
    },
    async 'experimental.session.compacting'(input: unknown) {
      log('experimental.session.compacting', { input: pick(input, ['sessionID']) });
    },
    async 'experimental.compaction.autocontinue'(input: unknown) {
      log('experimental.compaction.autocontinue', { input: pick(input, ['sessionID', 'agent', 'overflow']) });
    },
    async 'experimental.chat.system.transform'(input: unknown) {
      log('experimental.chat.system.transform', { input: pick(input, ['sessionID']) });
    },
    async 'chat.params'(input: unknown) {
      log('chat.params', { input: pick(input, ['sessionID', 'agent']) });
    },
    async 'tool.execute.before'(input: unknown) {
      log('tool.execute.before', { input: pick(input, ['sessionID', 'tool', 'callID']) });
    },
  };
}
