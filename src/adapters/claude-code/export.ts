/**
 * Best-effort OTLP/HTTP delivery with a spool: a hook sends its spans within a short timeout;
 * whatever cannot be delivered is written to the spool (0600 files in a 0700 directory) and sent,
 * oldest first, by a later hook run. Nothing is lost silently: when the spool is full the oldest
 * requests are dropped, counted in `spool/dropped`, and the hook says so on stderr; a request the
 * receiver refuses as malformed is kept in `spool/rejected/` for inspection.
 *
 * Only `node:http`/`node:https` are loaded (not `fetch`), and protobuf only when configured.
 */
import { readdirSync, readFileSync, renameSync, statSync, unlinkSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import type { ExportConfig } from './config.js';
import { buildTraceRequest, type HookSpan } from './spans.js';
import { ensureDir, readTextFile, spoolDir, writeFileAtomic } from './state.js';

/** Most requests kept in the spool. */
export const MAX_SPOOL_FILES = 1000;
/** Most bytes kept in the spool. */
export const MAX_SPOOL_BYTES = 16 * 1024 * 1024;
/** Most spooled requests one hook run tries to deliver. */
const MAX_FLUSH_PER_RUN = 50;

/** What one delivery attempt did. */
export type SendResult = 'sent' | 'unreachable' | 'rejected';

/** What an export run did, for logs and tests. */
export interface ExportReport {
  sent: number;
  spooled: number;
  flushed: number;
  dropped: number;
  rejected: number;
}

/** POSTs one body to `url` within `timeoutMs`. Never throws. */
export function postOtlp(
  url: string,
  body: Uint8Array,
  contentType: string,
  config: Pick<ExportConfig, 'timeoutMs' | 'headers'>,
): Promise<SendResult> {
  return new Promise((resolvePromise) => {
    let settled = false;
    const done = (r: SendResult) => {
      if (!settled) {
        settled = true;
        resolvePromise(r);
      }
    };
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      done('unreachable');
      return;
    }
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(
      target,
      {
        method: 'POST',
        headers: { ...config.headers, 'content-type': contentType, 'content-length': String(body.length) },
        timeout: config.timeoutMs,
        // No keep-alive: a hook process must be free to exit as soon as its work is done.
        agent: false,
      },
      (res) => {
        res.resume();
        const status = res.statusCode ?? 0;
        res.on('end', () => {
          if (status >= 200 && status < 300) done('sent');
          // Retryable per the OTLP/HTTP spec: 429, 502, 503, 504 (and any other 5xx, 408).
          else if (status === 408 || status === 429 || status >= 500) done('unreachable');
          else done('rejected');
        });
        res.on('error', () => done('unreachable'));
      },
    );
    req.on('timeout', () => {
      req.destroy();
      done('unreachable');
    });
    req.on('error', () => done('unreachable'));
    // A hard stop in case the socket ignores the idle timeout.
    const timer = setTimeout(() => {
      req.destroy();
      done('unreachable');
    }, config.timeoutMs + 100);
    timer.unref();
    req.end(body);
  });
}

function spoolEntries(dir: string): Array<{ name: string; size: number }> {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  reclaimStale(dir, names);
  const out: Array<{ name: string; size: number }> = [];
  for (const name of names.filter((n) => /\.(?:json|pb)$/.test(n)).sort()) {
    try {
      out.push({ name, size: statSync(join(dir, name)).size });
    } catch {
      // Taken by a parallel hook run.
    }
  }
  return out;
}

function unlinkQuiet(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // Already gone.
  }
}

/** Puts back requests claimed by a run that died before it finished (older than a minute). */
function reclaimStale(dir: string, names: readonly string[]): void {
  const now = Date.now();
  for (const n of names) {
    const m = /^(.+\.(?:json|pb))\.\d+\.sending$/.exec(n);
    if (!m) continue;
    try {
      if (now - statSync(join(dir, n)).mtimeMs > 60_000) renameSync(join(dir, n), join(dir, m[1]!));
    } catch {
      // Taken care of by another run.
    }
  }
}

function contentTypeOf(name: string): string {
  return name.endsWith('.pb') ? 'application/x-protobuf' : 'application/json';
}

function addDropped(dir: string, n: number): void {
  const before = Number(readTextFile(join(dir, 'dropped'))?.trim() ?? '0') || 0;
  writeFileAtomic(join(dir, 'dropped'), `${before + n}\n`);
}

/** Writes one undelivered request to the spool, dropping the oldest when it is full. Returns how many were dropped. */
export function spoolRequest(env: NodeJS.ProcessEnv, body: Uint8Array, ext: 'json' | 'pb'): number {
  const dir = spoolDir(env);
  ensureDir(dir);
  const entries = spoolEntries(dir);
  let files = entries.length;
  let bytes = entries.reduce((n, e) => n + e.size, 0);
  let dropped = 0;
  for (const e of entries) {
    if (files + 1 <= MAX_SPOOL_FILES && bytes + body.length <= MAX_SPOOL_BYTES) break;
    try {
      unlinkSync(join(dir, e.name));
      dropped++;
    } catch {
      // Already delivered or dropped by a parallel run.
    }
    files--;
    bytes -= e.size;
  }
  if (dropped > 0) addDropped(dir, dropped);
  const name = `${String(Date.now()).padStart(15, '0')}-${process.pid}-${Math.random().toString(36).slice(2, 8)}.${ext}`;
  writeFileAtomic(join(dir, name), body);
  return dropped;
}

async function encode(spans: readonly HookSpan[], protocol: ExportConfig['protocol']): Promise<Uint8Array> {
  const request = buildTraceRequest(spans);
  if (protocol === 'http/protobuf') {
    const { encodeTraceRequest } = await import('../../otlp/codec.js');
    return encodeTraceRequest(request, 'protobuf');
  }
  return Buffer.from(JSON.stringify(request), 'utf8');
}

/**
 * Sends `spans` (and, first, what earlier runs spooled) to the configured endpoint. Undelivered
 * requests go to the spool. Never throws; `warn` receives at most a few lines.
 */
export async function exportSpans(
  spans: readonly HookSpan[],
  config: ExportConfig,
  env: NodeJS.ProcessEnv,
  warn: (line: string) => void,
): Promise<ExportReport> {
  const report: ExportReport = { sent: 0, spooled: 0, flushed: 0, dropped: 0, rejected: 0 };
  if (!config.enabled) return report;
  const ext = config.protocol === 'http/protobuf' ? 'pb' : 'json';
  let body: Uint8Array | undefined;
  try {
    if (spans.length > 0) body = await encode(spans, config.protocol);
  } catch (e) {
    warn(`could not encode spans (${(e as Error).message}); the ledger still holds the evidence`);
  }
  const dir = spoolDir(env);
  let reachable = true;

  // Oldest first, so the receiver sees a boundary's pre span before its post span.
  for (const entry of spoolEntries(dir).slice(0, MAX_FLUSH_PER_RUN)) {
    const path = join(dir, entry.name);
    const claimed = `${path}.${process.pid}.sending`;
    let data: Buffer;
    try {
      // Claim it by renaming, so a parallel run does not send it twice.
      renameSync(path, claimed);
      data = readFileSync(claimed);
    } catch {
      continue;
    }
    const r = await postOtlp(config.tracesUrl, data, contentTypeOf(entry.name), config);
    if (r === 'sent') {
      report.flushed++;
      unlinkQuiet(claimed);
    } else if (r === 'rejected') {
      report.rejected++;
      writeFileAtomic(join(dir, 'rejected', entry.name), data);
      unlinkQuiet(claimed);
    } else {
      reachable = false;
      try {
        renameSync(claimed, path); // back in place, keeping its position in the queue
      } catch {
        // Gone; nothing else to do.
      }
      break;
    }
  }

  if (body) {
    const r = reachable
      ? await postOtlp(config.tracesUrl, body, contentTypeOf(`x.${ext}`), config)
      : 'unreachable';
    if (r === 'sent') report.sent++;
    else if (r === 'rejected') {
      report.rejected++;
      writeFileAtomic(join(dir, 'rejected', `${Date.now()}-${process.pid}.${ext}`), body);
    } else {
      report.dropped += spoolRequest(env, body, ext);
      report.spooled++;
    }
  }
  if (report.dropped > 0)
    warn(
      `OTLP spool full: dropped ${report.dropped} oldest request(s); total in ${join('spool', 'dropped')}`,
    );
  if (report.rejected > 0)
    warn(`the OTLP receiver refused ${report.rejected} request(s); kept in spool/rejected`);
  return report;
}
