/**
 * Refuses a downstream that is `continuity serve`'s own listener. Agents reach the service
 * through `OTEL_EXPORTER_OTLP_ENDPOINT`, and the same variable sets the service's downstream: left
 * in its environment, every span it forwards comes back to it, and 11 spans became 46 409 in
 * 25 s (issue 27). Checked once the configuration is validated, before anything listens.
 *
 * Pure: the machine's own interface addresses are a parameter.
 */
import { BlockList, isIP } from 'node:net';
import type { InputProblem } from '../decision/problems.js';

/** What the check reads of the configuration. */
export interface SelfForwardInput {
  server: { host: string; port: number; grpcPort?: number | false | undefined };
  downstream: {
    endpoint?: string | undefined;
    metricsEndpoint?: string | undefined;
    logsEndpoint?: string | undefined;
  };
}

/** Names and addresses that reach the loopback interface, whatever the listener's address. */
const LOOPBACK_NAME = /^(?:localhost|[a-z0-9-]+\.localhost|localhost\.localdomain)$/i;
/** Addresses that mean "every interface" when listened on, and "this host" when connected to. */
const WILDCARD = new Set(['0.0.0.0', '::', '0:0:0:0:0:0:0:0', '::ffff:0:0', '::ffff:0.0.0.0']);

/** 127.0.0.0/8 and ::1; a BlockList also matches their IPv4-mapped IPv6 forms (`::ffff:7f00:1`). */
const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

function isLoopbackAddress(a: string): boolean {
  const family = isIP(a);
  return family !== 0 && LOOPBACK.check(a, family === 4 ? 'ipv4' : 'ipv6');
}

/** A URL's host as a bare name or address (IPv6 without brackets), lowercased. */
function bareHost(host: string): string {
  const h = host.toLowerCase();
  return h.startsWith('[') && h.endsWith(']') ? h.slice(1, -1) : h;
}

/**
 * Whether connecting to `host` reaches a listener bound to `listenHost` on this machine.
 * `interfaces`: this machine's own addresses (reached when the listener is on every interface).
 */
export function reachesListener(host: string, listenHost: string, interfaces: readonly string[]): boolean {
  const target = bareHost(host);
  const listen = bareHost(listenHost);
  if (target === listen) return true;
  // Connecting to 0.0.0.0 or :: reaches this host's loopback (Linux, macOS).
  const local = LOOPBACK_NAME.test(target) || isLoopbackAddress(target) || WILDCARD.has(target);
  if (WILDCARD.has(listen)) return local || interfaces.some((a) => bareHost(a) === target);
  if (isLoopbackAddress(listen) || LOOPBACK_NAME.test(listen)) return local;
  return false;
}

const DEFAULT_PORTS: Readonly<Record<string, number>> = { 'http:': 80, 'https:': 443 };

/** Key path of each downstream endpoint, in the order they are reported. */
const ENDPOINT_KEYS = ['endpoint', 'metricsEndpoint', 'logsEndpoint'] as const;

/**
 * The problem to report when a downstream endpoint is the service's own HTTP or gRPC listener, or
 * undefined. A port of 0 (picked at start) is never compared: nothing can name it beforehand.
 * `origins` maps a key path to the environment variable that set it, so the message names it.
 */
export function selfForwardProblem(
  config: SelfForwardInput,
  origins: ReadonlyMap<string, string>,
  interfaces: readonly string[],
): InputProblem | undefined {
  const ports = new Map<number, string>();
  if (config.server.port !== 0) ports.set(config.server.port, 'server.port (OTLP/HTTP)');
  const grpc = config.server.grpcPort;
  if (typeof grpc === 'number' && grpc !== 0) ports.set(grpc, 'server.grpcPort (OTLP/gRPC)');
  if (ports.size === 0) return undefined;
  for (const key of ENDPOINT_KEYS) {
    const url = config.downstream[key];
    if (url === undefined) continue;
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      continue;
    }
    const port = u.port === '' ? DEFAULT_PORTS[u.protocol] : Number(u.port);
    const which = port === undefined ? undefined : ports.get(port);
    if (which === undefined || !reachesListener(u.hostname, config.server.host, interfaces)) continue;
    const path = `downstream.${key}`;
    const origin = origins.get(path);
    return {
      path: origin ? `${path} (from ${origin})` : path,
      message: `${u.protocol}//${u.host} is this service's own listener (server.host ${config.server.host}, ${which} ${port}): every span forwarded would come back and loop; point ${origin ?? path} at the next hop (a Collector), or unset it in the service's environment`,
    };
  }
  return undefined;
}
