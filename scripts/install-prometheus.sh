#!/usr/bin/env bash
# Install Prometheus and promtool for the usage-source tests, from Debian's `prometheus` package.
#
# What it does: when /usr/bin/prometheus or /usr/bin/promtool is missing, `apt-get update`
# then `apt-get install -y --no-install-recommends prometheus` (through sudo when not root).
# When both are there it does nothing and returns at once. The tests start their own
# Prometheus on 127.0.0.1 with a temporary storage directory; the Debian service the
# package enables (if systemd runs at all) is not used by them.
#
# Output: the prometheus binary's path, alone on the last line of stdout. Progress goes to
# stderr. A lock makes concurrent runs (parallel pytest processes) wait for one install.
set -euo pipefail

PROMETHEUS="${BATCHPLACE_PROMETHEUS:-/usr/bin/prometheus}"
PROMTOOL="$(dirname "$PROMETHEUS")/promtool"
APT_PACKAGES=(prometheus)

log() { echo "install-prometheus: $*" >&2; }

as_root() {
  if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

if [[ -x "$PROMETHEUS" && -x "$PROMTOOL" ]]; then
  echo "$PROMETHEUS"
  exit 0
fi

CACHE="${BATCHPLACE_CACHE:-$HOME/.cache/batchplace}"
mkdir -p "$CACHE"
exec 9>"$CACHE/install-prometheus.lock"
flock 9
if [[ ! -x "$PROMETHEUS" || ! -x "$PROMTOOL" ]]; then
  log "installing ${APT_PACKAGES[*]}"
  as_root apt-get update -q >&2
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${APT_PACKAGES[@]}" >&2
fi
if [[ ! -x "$PROMETHEUS" || ! -x "$PROMTOOL" ]]; then
  log "no prometheus at $PROMETHEUS (or no promtool beside it) after the install"
  exit 1
fi
echo "$PROMETHEUS"
