/**
 * The continuity page of `continuity serve`: every `/ui` route (HTML pages, the fragments and
 * server-sent events behind live updates, the JSON endpoints, the style sheet and script), who
 * may see them, and the history it keeps.
 *
 * Access: loopback clients with a loopback `Host` only, unless `ui.remote` is set (the `Host`
 * check also stops DNS-rebinding pages from reading it); when the service has a bearer token, the
 * page asks for it once (a form; then an HttpOnly, SameSite=Strict cookie) or takes
 * `Authorization: Bearer`. Every answer carries a strict Content-Security-Policy.
 *
 * It reads the correlator through {@link PageSource} only: nothing here changes state.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Resolution, SessionView } from '../correlate/types.js';
import { resolveLedgerPath } from '../ledger/paths.js';
import type { SpanRef } from '../otel/attributes.js';
import { isLoopbackHost } from '../service/host-check.js';
import type { UiConfig } from './config.js';
import { BoundaryHistory } from './history.js';
import { LedgerView } from './ledger-view.js';
import {
  buildOverview,
  buildSessionDetail,
  type ModelSource,
  overviewFilterQuery,
  parseOverviewFilter,
  type TraceLinker,
} from './model.js';
import { loginPage, overviewMain, page, sessionMain, UI_PATHS } from './render.js';
import { FAVICON_SVG, PAGE_CSS } from './style.js';

/** The read-only view of the correlator the page needs. */
export interface PageSource {
  sessions(limit: number): SessionView[];
}

/** Where a boundary's trace can be opened. Exactly one form, or none. */
export interface TraceLinkConfig {
  /** Jaeger UI base URL: links go to `<url>/trace/<traceId>?uiFind=<spanId>`. */
  jaeger?: string | undefined;
  /** Tempo HTTP base URL: links go to `<url>/api/traces/<traceId>` (Tempo's trace-by-id API). */
  tempo?: string | undefined;
  /** Any URL with `{traceId}` (and optionally `{spanId}`), e.g. a Grafana Explore link. */
  template?: string | undefined;
}

/** Options of {@link ContinuityPage}. */
export interface ContinuityPageOptions {
  source: PageSource;
  /** Answer clients that are not on loopback too. Default false. */
  remote?: boolean;
  /** Checks a bearer token; undefined when the service has none (the page is then open to loopback). */
  checkToken?: ((token: string) => boolean) | undefined;
  traceLink?: TraceLinkConfig;
  /** Sessions shown (most recently active). Default 1 000. */
  maxSessions?: number;
  /** A ledger to read beside the service's state (the one the CLI and hooks write). Default none. */
  ledgerPath?: string | undefined;
  /** The clock. Default `Date.now`. */
  now?: () => number;
}

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cache-control': 'no-store',
};

const COOKIE = 'continuity_ui';
const COOKIE_TTL_MS = 12 * 3_600_000;
const MAX_COOKIES = 256;
const MAX_LOGIN_BODY = 4_096;
const MAX_EVENT_STREAMS = 32;
const HEARTBEAT_MS = 15_000;
/** How often an open live page has the ledger checked for changes (one stat each). */
const LEDGER_WATCH_MS = 2_000;
/** Coalesces bursts of ingested requests into one live update. */
const CHANGE_DEBOUNCE_MS = 150;

/** The browser script, compiled by tsc beside this file; read once. */
function loadScript(): Buffer | undefined {
  try {
    return readFileSync(new URL('./client/live.js', import.meta.url));
  } catch {
    return undefined;
  }
}

function isLoopbackAddress(address: string | undefined): boolean {
  if (address === undefined) return false;
  return address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.');
}

/** Builds the trace linker for the configuration, or undefined when none is configured. */
export function traceLinker(config: TraceLinkConfig | undefined): TraceLinker | undefined {
  const trim = (u: string) => u.replace(/\/+$/, '');
  if (config?.jaeger)
    return (s: SpanRef) =>
      `${trim(config.jaeger!)}/trace/${encodeURIComponent(s.traceId)}?uiFind=${encodeURIComponent(s.spanId)}`;
  if (config?.tempo)
    return (s: SpanRef) => `${trim(config.tempo!)}/api/traces/${encodeURIComponent(s.traceId)}`;
  if (config?.template) {
    const t = config.template;
    return (s: SpanRef) =>
      t
        .replaceAll('{traceId}', encodeURIComponent(s.traceId))
        .replaceAll('{spanId}', encodeURIComponent(s.spanId));
  }
  return undefined;
}

/** The continuity page: see the module comment. */
export class ContinuityPage {
  private readonly _source: PageSource;
  private readonly _history = new BoundaryHistory();
  private readonly _remote: boolean;
  private readonly _checkToken: ((token: string) => boolean) | undefined;
  private readonly _linker: TraceLinker | undefined;
  private readonly _maxSessions: number;
  private readonly _ledger: LedgerView | undefined;
  private readonly _now: () => number;
  private readonly _script = loadScript();
  private readonly _cookies = new Map<string, number>();
  private readonly _streams = new Set<ServerResponse>();
  private _version = 0;
  private _changeTimer: NodeJS.Timeout | undefined;
  private _heartbeat: NodeJS.Timeout | undefined;
  private _ledgerWatch: NodeJS.Timeout | undefined;
  private _closed = false;

  constructor(options: ContinuityPageOptions) {
    this._source = options.source;
    this._remote = options.remote ?? false;
    this._checkToken = options.checkToken;
    this._linker = traceLinker(options.traceLink);
    this._maxSessions = options.maxSessions ?? 1_000;
    this._ledger = options.ledgerPath === undefined ? undefined : new LedgerView(options.ledgerPath);
    this._now = options.now ?? Date.now;
  }

  /** Records what the service just correlated (resolutions may be empty: activity, a new pre). */
  observed(resolutions: readonly Resolution[], nowMs: number): void {
    if (resolutions.length > 0) this._history.record(resolutions, nowMs);
    this._version++;
    if (this._streams.size > 0 && this._changeTimer === undefined) {
      this._changeTimer = setTimeout(() => {
        this._changeTimer = undefined;
        this._broadcast();
      }, CHANGE_DEBOUNCE_MS);
      this._changeTimer.unref();
    }
  }

  /** Ends the live streams (shutdown). Safe to call twice. */
  close(): void {
    this._closed = true;
    clearTimeout(this._changeTimer);
    clearInterval(this._heartbeat);
    clearInterval(this._ledgerWatch);
    for (const res of this._streams) res.end();
    this._streams.clear();
  }

  /** Handles `GET /`, `/ui` and everything under `/ui/`. Never throws. */
  handle(req: IncomingMessage, res: ServerResponse): void {
    try {
      this._route(req, res);
    } catch {
      if (!res.headersSent) this._send(res, 500, 'text/plain; charset=utf-8', 'internal error\n');
      else res.destroy();
    }
  }

  private _model(): ModelSource {
    return {
      sessions: () => this._source.sessions(this._maxSessions),
      history: (id) => this._history.of(id),
      version: () => this._version,
      ...(this._ledger && { ledger: () => this._ledger!.read() }),
    };
  }

  private _route(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://page.invalid');
    const path = url.pathname;
    const method = req.method ?? 'GET';
    if (!this._remote && !(isLoopbackAddress(req.socket.remoteAddress) && this._loopbackHost(req))) {
      req.resume();
      return this._send(
        res,
        403,
        'text/plain; charset=utf-8',
        'the continuity page answers loopback clients at a loopback address only (set ui.remote to change that)\n',
      );
    }
    if (path === UI_PATHS.login) {
      if (method !== 'POST') return this._methodNotAllowed(req, res, 'POST');
      return this._login(req, res);
    }
    if (method !== 'GET' && method !== 'HEAD') return this._methodNotAllowed(req, res, 'GET');
    req.resume();
    if (path === '/' || path === `${UI_PATHS.root}/`) return this._redirect(res, UI_PATHS.root);
    if (path === UI_PATHS.css) return this._send(res, 200, 'text/css; charset=utf-8', PAGE_CSS);
    if (path === UI_PATHS.icon) return this._send(res, 200, 'image/svg+xml', FAVICON_SVG);
    if (path === UI_PATHS.script) {
      if (!this._script) return this._send(res, 404, 'text/plain; charset=utf-8', 'script not built\n');
      return this._send(res, 200, 'text/javascript; charset=utf-8', this._script);
    }
    if (!this._authorized(req)) {
      const html = path === UI_PATHS.root || path === UI_PATHS.session;
      return html
        ? this._send(res, 401, 'text/html; charset=utf-8', loginPage(this._iso(), false))
        : this._send(
            res,
            401,
            'application/json',
            '{"error":"sign in at /ui first, or send Authorization: Bearer"}',
            {
              'www-authenticate': 'Bearer',
            },
          );
    }
    const nowMs = this._now();
    const key = url.searchParams.get('key') ?? '';
    const filter = parseOverviewFilter(url.searchParams);
    switch (path) {
      case UI_PATHS.root: {
        const o = buildOverview(this._model(), nowMs, filter);
        const title = `agent-continuity · ${o.counts.needsHuman} need a human`;
        return this._html(
          res,
          page({
            title,
            main: overviewMain(o),
            fragment: `${UI_PATHS.overviewFragment}${overviewFilterQuery(filter)}`,
            version: o.version,
            generatedAt: o.generatedAt,
          }),
        );
      }
      case UI_PATHS.session: {
        const d = buildSessionDetail(this._model(), key, this._linker);
        if (!d) return this._notFound(res);
        return this._html(
          res,
          page({
            title: `agent-continuity · session ${d.sessionId} · ${d.state}`,
            main: sessionMain(d),
            fragment: `${UI_PATHS.sessionFragment}?key=${encodeURIComponent(key)}`,
            version: this._version,
            generatedAt: new Date(nowMs).toISOString(),
          }),
        );
      }
      case UI_PATHS.overviewFragment: {
        const o = buildOverview(this._model(), nowMs, filter);
        return this._json(res, {
          version: o.version,
          title: `agent-continuity · ${o.counts.needsHuman} need a human`,
          html: overviewMain(o),
        });
      }
      case UI_PATHS.sessionFragment: {
        const d = buildSessionDetail(this._model(), key, this._linker);
        if (!d) return this._notFound(res);
        return this._json(res, {
          version: this._version,
          title: `agent-continuity · session ${d.sessionId} · ${d.state}`,
          html: sessionMain(d),
        });
      }
      case UI_PATHS.overviewJson:
        return this._json(res, buildOverview(this._model(), nowMs, filter));
      case UI_PATHS.sessionJson: {
        const d = buildSessionDetail(this._model(), key, this._linker);
        return d ? this._json(res, d) : this._notFound(res);
      }
      case UI_PATHS.events:
        return this._events(res);
      default:
        return this._notFound(res);
    }
  }

  private _loopbackHost(req: IncomingMessage): boolean {
    return isLoopbackHost(req.headers.host);
  }

  private _authorized(req: IncomingMessage): boolean {
    if (!this._checkToken) return true;
    const header = req.headers.authorization;
    if (typeof header === 'string' && /^Bearer /i.test(header) && this._checkToken(header.slice(7).trim()))
      return true;
    const cookie = cookieValue(req.headers.cookie, COOKIE);
    if (cookie === undefined) return false;
    const expires = this._cookies.get(cookie);
    if (expires === undefined) return false;
    if (expires < this._now()) {
      this._cookies.delete(cookie);
      return false;
    }
    return true;
  }

  private _login(req: IncomingMessage, res: ServerResponse) {
    // No Origin check: with Referrer-Policy no-referrer the browser sends `Origin: null`, and a
    // forged sign-in gains nothing without the token.
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_LOGIN_BODY) chunks.push(c);
    });
    req.on('end', () => {
      if (size > MAX_LOGIN_BODY) return this._send(res, 413, 'text/plain; charset=utf-8', 'too large\n');
      const token = new URLSearchParams(Buffer.concat(chunks).toString('utf8')).get('token') ?? '';
      if (!this._checkToken?.(token)) {
        return this._send(res, 401, 'text/html; charset=utf-8', loginPage(this._iso(), true));
      }
      const id = randomBytes(32).toString('hex');
      const now = this._now();
      for (const [k, exp] of this._cookies) if (exp < now) this._cookies.delete(k);
      while (this._cookies.size >= MAX_COOKIES) this._cookies.delete(this._cookies.keys().next().value!);
      this._cookies.set(id, now + COOKIE_TTL_MS);
      res.writeHead(303, {
        ...SECURITY_HEADERS,
        location: UI_PATHS.root,
        'set-cookie': `${COOKIE}=${id}; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=${COOKIE_TTL_MS / 1000}`,
        'content-length': 0,
      });
      res.end();
    });
    req.on('error', () => res.destroy());
  }

  private _events(res: ServerResponse) {
    if (this._closed || this._streams.size >= MAX_EVENT_STREAMS) {
      return this._send(res, 503, 'text/plain; charset=utf-8', 'too many live pages; reload later\n', {
        'retry-after': '5',
      });
    }
    res.writeHead(200, {
      ...SECURITY_HEADERS,
      'content-type': 'text/event-stream; charset=utf-8',
      connection: 'keep-alive',
    });
    res.write(`retry: 2000\nevent: version\ndata: ${this._version}\n\n`);
    this._streams.add(res);
    const drop = () => this._streams.delete(res);
    // The response's close, not the request's: a GET request closes as soon as it is read.
    res.on('close', drop);
    res.on('error', drop);
    if (this._heartbeat === undefined) {
      this._heartbeat = setInterval(() => {
        for (const s of this._streams) s.write(': heartbeat\n\n');
      }, HEARTBEAT_MS);
      this._heartbeat.unref();
    }
    if (this._ledger && this._ledgerWatch === undefined) {
      // The CLI and hooks append to the ledger without telling the service: watch it while a page is open.
      this._ledgerWatch = setInterval(() => {
        if (this._streams.size === 0 || !this._ledger!.changed()) return;
        this._version++;
        this._broadcast();
      }, LEDGER_WATCH_MS);
      this._ledgerWatch.unref();
    }
  }

  private _broadcast(): void {
    const msg = `event: version\ndata: ${this._version}\n\n`;
    for (const s of this._streams) s.write(msg);
  }

  private _iso(): string {
    return new Date(this._now()).toISOString();
  }

  private _html(res: ServerResponse, html: string): void {
    this._send(res, 200, 'text/html; charset=utf-8', html);
  }

  private _json(res: ServerResponse, value: unknown): void {
    this._send(res, 200, 'application/json', `${JSON.stringify(value)}\n`);
  }

  private _notFound(res: ServerResponse): void {
    this._send(res, 404, 'text/plain; charset=utf-8', 'not found: no such page or session\n');
  }

  private _redirect(res: ServerResponse, location: string): void {
    res.writeHead(302, { ...SECURITY_HEADERS, location, 'content-length': 0 });
    res.end();
  }

  private _methodNotAllowed(req: IncomingMessage, res: ServerResponse, allowed: string): void {
    req.resume();
    this._send(res, 405, 'text/plain; charset=utf-8', `use ${allowed}\n`, { allow: allowed });
  }

  private _send(
    res: ServerResponse,
    status: number,
    type: string,
    body: string | Buffer,
    headers: Record<string, string> = {},
  ): void {
    const buf = typeof body === 'string' ? Buffer.from(body) : body;
    res.writeHead(status, {
      ...SECURITY_HEADERS,
      ...headers,
      'content-type': type,
      'content-length': buf.length,
    });
    res.end(res.req.method === 'HEAD' ? undefined : buf);
  }
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** What the service gives the page beside its configuration. */
export interface ServicePageParts {
  /** The correlator's read-only view. */
  source: PageSource;
  /** Checks a bearer token; undefined when the service has none. */
  checkToken: ((token: string) => boolean) | undefined;
  /** The service's environment (the default ledger's path). */
  env: NodeJS.ProcessEnv;
  /** Where the page's start-up warnings go. */
  warn: (message: string) => void;
}

/** The page `continuity serve` serves, or undefined when `ui.enabled` is false. */
export function continuityPageFromConfig(
  config: UiConfig,
  parts: ServicePageParts,
): ContinuityPage | undefined {
  if (!config.enabled) return undefined;
  if (config.remote && parts.checkToken === undefined)
    parts.warn(
      'ui.remote is set without a bearer token: the continuity page is open to anyone who can reach it',
    );
  return new ContinuityPage({
    source: parts.source,
    remote: config.remote,
    checkToken: parts.checkToken,
    traceLink: config.traceLink,
    maxSessions: config.maxSessions,
    ledgerPath:
      config.ledger === false ? undefined : (config.ledger ?? resolveLedgerPath({ env: parts.env })),
  });
}
