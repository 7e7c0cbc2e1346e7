/**
 * The HTTP listener of `continuity serve` on node:http: routes `POST /v1/traces`, `GET /metrics`,
 * `GET /healthz`, `GET /readyz`, and `/` plus everything under `/ui` to the continuity page when
 * this listener serves it; everything else is 404 (405 for a wrong method on a known path).
 * Paths come from {@link SERVICE_DEFAULTS}.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { SERVICE_DEFAULTS } from './config.js';
import type { HostAllowList } from './host-check.js';
import { sendError, sendText } from './responses.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** The handlers a listener serves; a missing one is a 404. */
export interface Routes {
  traces?: Handler;
  /** `POST /v1/metrics` and `POST /v1/logs`: passed through to the downstream. */
  metricsSignal?: Handler;
  logs?: Handler;
  metrics?: Handler;
  /** The continuity page (`/`, `/ui`, `/ui/...`; `src/ui/`), on the listener that serves `/metrics`. */
  ui?: Handler;
  health: Handler;
  ready: Handler;
  /** True once shutdown began: new trace requests are refused with {@link Routes.refuse}. */
  closing: () => boolean;
  refuse: (res: ServerResponse) => void;
  /** Whole-request timeout in ms (Node's `requestTimeout`; headers within it too). */
  requestTimeoutMs: number;
  /** The `Host` allow-list, checked before any route (`host-check.ts`). */
  hosts: HostAllowList;
}

/** How often Node looks for connections past their header or request timeout, ms. */
const CHECK_INTERVAL_MS = 500;

/** Creates (does not start) a listener serving `routes`. */
export function createServiceServer(routes: Routes): Server {
  // Node checks header and request timeouts only every connectionsCheckingInterval (30 s by
  // default), which would hold a slow client up to twice as long as configured.
  const server = createServer({ connectionsCheckingInterval: CHECK_INTERVAL_MS }, (req, res) => {
    if (!routes.hosts.allows(req.headers.host)) {
      req.resume();
      return sendError(
        res,
        403,
        undefined,
        'this Host is not allowed: use a loopback name or an address, or list the name in server.allowedHosts',
        { close: true },
      );
    }
    const path = (req.url ?? '/').split('?')[0];
    const method = req.method ?? 'GET';
    const route = (handler: Handler | undefined, allowed: string) => {
      if (!handler) return notFound(req, res);
      if (method !== allowed && !(allowed === 'GET' && method === 'HEAD')) {
        req.resume();
        return sendError(res, 405, undefined, `use ${allowed} for ${path}`, { headers: { allow: allowed } });
      }
      handler(req, res);
    };
    switch (path) {
      case SERVICE_DEFAULTS.tracesPath:
        if (routes.traces && routes.closing()) {
          req.resume();
          return routes.refuse(res);
        }
        return route(routes.traces, 'POST');
      case SERVICE_DEFAULTS.metricsSignalPath:
      case SERVICE_DEFAULTS.logsPath: {
        const handler = path === SERVICE_DEFAULTS.logsPath ? routes.logs : routes.metricsSignal;
        if (handler && routes.closing()) {
          req.resume();
          return routes.refuse(res);
        }
        return route(handler, 'POST');
      }
      case SERVICE_DEFAULTS.metricsPath:
        return route(routes.metrics, 'GET');
      case SERVICE_DEFAULTS.healthPath:
        return route(routes.health, 'GET');
      case SERVICE_DEFAULTS.readyPath:
        return route(routes.ready, 'GET');
      default:
        if (
          routes.ui &&
          (path === '/' ||
            path === SERVICE_DEFAULTS.uiPath ||
            path!.startsWith(`${SERVICE_DEFAULTS.uiPath}/`))
        )
          return routes.ui(req, res);
        return notFound(req, res);
    }
  });
  server.requestTimeout = routes.requestTimeoutMs;
  server.headersTimeout = routes.requestTimeoutMs;
  // Slightly longer than the usual client idle timeouts, so the client closes first.
  server.keepAliveTimeout = 65_000;
  return server;
}

function notFound(req: IncomingMessage, res: ServerResponse): void {
  req.resume();
  sendText(
    res,
    404,
    `not found: this server serves POST ${SERVICE_DEFAULTS.tracesPath}, ${SERVICE_DEFAULTS.metricsSignalPath}, ${SERVICE_DEFAULTS.logsPath}, GET ${SERVICE_DEFAULTS.metricsPath}, ${SERVICE_DEFAULTS.healthPath}, ${SERVICE_DEFAULTS.readyPath}`,
  );
}

/** Starts listening; rejects with a clear message when the address is taken. */
export function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (e: NodeJS.ErrnoException) => {
      server.off('listening', onListening);
      reject(
        new Error(
          e.code === 'EADDRINUSE'
            ? `cannot listen on ${host}:${port}: the address is in use (set server.port, or CONTINUITY_SERVE_PORT; 0 picks a free port)`
            : `cannot listen on ${host}:${port}: ${e.code ?? e.message}`,
        ),
      );
    };
    const onListening = () => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port, host);
  });
}
