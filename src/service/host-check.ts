/**
 * The `Host` allow-list of `continuity serve`'s HTTP listeners, one rule for every endpoint
 * (`POST /v1/traces`, `/v1/metrics`, `/v1/logs`, `GET /metrics`, the health checks and the page).
 *
 * Why: a web page the user opens can make the browser send requests to 127.0.0.1 under a name the
 * page's author controls (DNS rebinding: `attacker.example` first resolves to the author's server,
 * then to 127.0.0.1). The browser then sends `Host: attacker.example`. A name-based `Host` that is
 * not on the list is refused, so such a page can neither post forged compaction spans nor read
 * `/metrics`. Loopback names and IP literals are always accepted: a page cannot make the browser
 * send a `Host` that is an address without being served from that address. A request without
 * `Host` (HTTP/1.0) did not come from a browser and is accepted.
 *
 * Pure: no I/O.
 */

/** Loopback host names and addresses, as the continuity page has always accepted. */
const LOOPBACK_HOSTS = /^(?:localhost|127(?:\.\d{1,3}){3}|\[::1\]|::1)$/i;
const IPV4 = /^\d{1,3}(?:\.\d{1,3}){3}$/;

/** The name or address of a `Host` header value, without its port (IPv6 keeps its brackets). */
export function hostName(host: string | undefined): string | undefined {
  if (host === undefined) return undefined;
  const m = /^(\[[^\]]+\]|[^:]+)(?::\d+)?$/.exec(host.trim());
  return m?.[1];
}

/** Whether a `Host` value names a loopback name or address. */
export function isLoopbackHost(host: string | undefined): boolean {
  const name = hostName(host);
  return name !== undefined && LOOPBACK_HOSTS.test(name);
}

/** Whether `name` (from {@link hostName}) is an IPv4 or bracketed IPv6 literal. */
function isAddress(name: string): boolean {
  return IPV4.test(name) || (name.startsWith('[') && name.endsWith(']'));
}

/** The allow-list: loopback names, IP literals, and the names configured. */
export class HostAllowList {
  private readonly _names: ReadonlySet<string>;

  /** `names`: host names (no port) besides loopback that clients use, e.g. `continuity-serve`. */
  constructor(names: readonly string[] = []) {
    this._names = new Set(names.map((n) => n.trim().toLowerCase()).filter((n) => n !== ''));
  }

  /** Whether a request with this `Host` header value may be answered. */
  allows(host: string | undefined): boolean {
    if (host === undefined) return true;
    const name = hostName(host)?.toLowerCase();
    if (name === undefined || name === '') return false;
    return LOOPBACK_HOSTS.test(name) || isAddress(name) || this._names.has(name);
  }
}
