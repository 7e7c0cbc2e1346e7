#!/usr/bin/env bash
# Installs the system tools the alerting tests use, when they are missing:
#   prometheus              (Debian package `prometheus`: /usr/bin/prometheus and /usr/bin/promtool)
#   prometheus-alertmanager (Debian package `prometheus-alertmanager`: /usr/bin/prometheus-alertmanager
#                            and /usr/bin/amtool)
# Idempotent: does nothing (and prints nothing) when every tool is already on PATH.
# Run as root on Debian/Ubuntu (CI does, from .ci/run); developers run it with sudo.
# Never starts a service: the packages' postinst scripts would start Prometheus on :9090 and
# Alertmanager on :9093, so a temporary policy-rc.d forbids that (the tests start their own
# processes on free ports). Exit codes: 0 ready, 1 could not install, 3 unsupported environment.
set -euo pipefail

readonly PACKAGES=(prometheus prometheus-alertmanager)
# Each tool, and the package that provides it on Debian.
readonly TOOLS=(prometheus:prometheus promtool:prometheus prometheus-alertmanager:prometheus-alertmanager amtool:prometheus-alertmanager)

fail() {
  local code="$1"
  shift
  echo "setup-system.sh: $*" >&2
  exit "$code"
}

missing_tools() {
  local entry
  for entry in "${TOOLS[@]}"; do
    command -v "${entry%%:*}" >/dev/null 2>&1 || printf '%s\n' "${entry%%:*}"
  done
}

missing="$(missing_tools)"
[ -z "$missing" ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  fail 3 "missing: $(echo "$missing" | tr '\n' ' ')- this script installs them with apt-get (Debian/Ubuntu).
  Elsewhere install Prometheus (prometheus, promtool) and Alertmanager (alertmanager as
  'prometheus-alertmanager' or symlinked so, amtool) from https://prometheus.io/download/ and put them on PATH."
fi
if [ "$(id -u)" -ne 0 ]; then
  fail 3 "missing: $(echo "$missing" | tr '\n' ' ')- run as root to install them: sudo scripts/setup-system.sh"
fi

# Keep the packages' postinst from starting services. An existing policy-rc.d (e.g. Docker's) is
# left alone; one this script writes is removed on exit, even on failure.
policy=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\n# Written by agent-continuity scripts/setup-system.sh; removed when it ends.\nexit 101\n' >"$policy"
  chmod 0755 "$policy"
  created_policy=1
fi
cleanup() { if [ "$created_policy" -eq 1 ]; then rm -f "$policy"; fi; }
trap cleanup EXIT

export DEBIAN_FRONTEND=noninteractive
log="$(mktemp)"
trap 'cleanup; rm -f "$log"' EXIT

if ! apt-get update -qq >"$log" 2>&1; then
  cat "$log" >&2
  fail 1 "apt-get update failed (see above); check network access and /etc/apt/sources.list."
fi
# --no-install-recommends: the recommended prometheus-node-exporter would start another service.
if ! apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >"$log" 2>&1; then
  cat "$log" >&2
  fail 1 "apt-get install ${PACKAGES[*]} failed (see above)."
fi

still_missing="$(missing_tools)"
if [ -n "$still_missing" ]; then
  fail 1 "installed ${PACKAGES[*]} but these are still not on PATH: $(echo "$still_missing" | tr '\n' ' ')"
fi
echo "setup-system.sh: installed $(prometheus --version 2>&1 | head -n1); $(amtool --version 2>&1 | head -n1)"
