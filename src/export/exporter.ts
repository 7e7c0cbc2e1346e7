/**
 * Best-effort OTLP/HTTP delivery with a spool, for short-lived recording processes: spans are
 * sent within a short timeout; whatever cannot be delivered is written to the spool (see
 * `spool.ts`) and sent, oldest first, by a later run. Nothing is lost silently, and nothing here
 * ever throws into the caller: the ledger holds the evidence whatever happens to the spans.
 *
 * Only `node:http`/`node:https` are loaded (not `fetch`), and protobuf only when configured.
 */
import { readFileSync, renameSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import type { ExportConfig } from './config.js';
import { buildTraceRequest, type ExportSpan } from './spans.js';
import {
  contentTypeOf,
  keepRejected,
  type SpoolExt,
  spoolEntries,
  spoolRequest,
  unlinkQuiet,
} from './spool.js';

/** Most spooled requests one run tries to deliver. */
const MAX_FLUSH_PER_RUN = 50;

/** What one delivery attempt did. */
export type SendResult = 'sent' | 'unreachable' | 'rejected';

/** What an export run did, for messages and tests. */
export interface ExportReport {
  /** This run's request was delivered (0 or 1). */
  sent: number;
  /** This run's request went to the spool (0 or 1). */
  spooled: number;
  /** Earlier spooled requests delivered by this run. */
  flushed: number;
  /** Oldest spooled requests dropped because the spool was full. */
  dropped: number;
  /** Requests the receiver refused as malformed (kept in `rejected/`). */
  rejected: number;
  /** Requests that could be neither delivered nor spooled (the spool was not writable). */
  lost: number;
  /** Requests left in the spool after this run. */
  waiting: number;
}

/** Where an export run keeps what it cannot deliver, and who it says it is. */
export interface ExportOptions {
  /** The spool directory (created 0700 on first use). */
  spoolDir: string;
  /** `service.name` on the resource, e.g. `claude-code` or `agent-continuity`. */
  serviceName: string;
  /** Receives at most a few one-line warnings (full spool, refused requests, unwritable spool). */
  warn: (line: string) => void;
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
        // No keep-alive: a short-lived process must be free to exit as soon as its work is done.
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

async function encode(
  spans: readonly ExportSpan[],
  protocol: ExportConfig['protocol'],
  serviceName: string,
): Promise<Uint8Array> {
  const request = buildTraceRequest(spans, serviceName);
  if (protocol === 'http/protobuf') {
    const { encodeTraceRequest } = await import('../otlp/codec.js');
    return encodeTraceRequest(request, 'protobuf');
  }
  return Buffer.from(JSON.stringify(request), 'utf8');
}

/** What went wrong, in a few words: a file system error's code (its message names a path), else the first line. */
function firstLine(e: unknown): string {
  const code = (e as NodeJS.ErrnoException)?.code;
  return typeof code === 'string' ? code : String((e as Error)?.message ?? e).split('\n')[0]!;
}

/**
 * Sends `spans` (and, first, what earlier runs spooled in `options.spoolDir`) to the configured
 * endpoint; what cannot be delivered goes to the spool. Does nothing when `config.enabled` is
 * false. Never throws.
 */
export async function exportSpans(
  spans: readonly ExportSpan[],
  config: ExportConfig,
  options: ExportOptions,
): Promise<ExportReport> {
  const report: ExportReport = {
    sent: 0,
    spooled: 0,
    flushed: 0,
    dropped: 0,
    rejected: 0,
    lost: 0,
    waiting: 0,
  };
  if (!config.enabled) return report;
  const { spoolDir: dir, warn } = options;
  const ext: SpoolExt = config.protocol === 'http/protobuf' ? 'pb' : 'json';
  let body: Uint8Array | undefined;
  try {
    if (spans.length > 0) body = await encode(spans, config.protocol, options.serviceName);
  } catch (e) {
    warn(`could not encode spans (${firstLine(e)}); the ledger still holds the evidence`);
  }
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
      try {
        keepRejected(dir, entry.name, data);
        unlinkQuiet(claimed);
      } catch (e) {
        warn(`could not keep a refused request in the spool's rejected/ folder (${firstLine(e)})`);
      }
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
    try {
      if (r === 'sent') report.sent++;
      else if (r === 'rejected') {
        report.rejected++;
        keepRejected(dir, `${String(Date.now()).padStart(15, '0')}-${process.pid}.${ext}`, body);
      } else {
        report.dropped += spoolRequest(dir, body, ext);
        report.spooled++;
      }
    } catch (e) {
      report.lost++;
      warn(`could not write the OTLP spool (${firstLine(e)}); this run's spans are lost`);
    }
  }
  report.waiting = spoolEntries(dir).length;
  if (report.dropped > 0)
    warn(
      `OTLP spool full: dropped ${report.dropped} oldest request(s); the total is in the spool's dropped file`,
    );
  if (report.rejected > 0)
    warn(`the OTLP receiver refused ${report.rejected} request(s); kept in the spool's rejected/ folder`);
  return report;
}
