#!/usr/bin/env bash
# Install headless Chromium for the dashboard's browser tests, from Debian's packages.
#
# What it does: when /usr/bin/chromium is missing, `apt-get update` then
# `apt-get install -y chromium chromium-driver` (through sudo when not root). When the binary
# is there it does nothing and returns at once. Browsers are never downloaded any other way:
# Playwright drives this binary (`executable_path`), it does not fetch its own.
#
# Output: the browser's path, alone on the last line of stdout. Progress goes to stderr.
# A lock makes concurrent runs (parallel pytest processes) wait for one install.
set -euo pipefail

CHROMIUM="${BATCHPLACE_CHROMIUM:-/usr/bin/chromium}"
APT_PACKAGES=(chromium chromium-driver)

log() { echo "install-chromium: $*" >&2; }

as_root() {
  if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

if [[ -x "$CHROMIUM" ]]; then
  echo "$CHROMIUM"
  exit 0
fi

CACHE="${BATCHPLACE_CACHE:-$HOME/.cache/batchplace}"
mkdir -p "$CACHE"
exec 9>"$CACHE/install-chromium.lock"
flock 9
if [[ ! -x "$CHROMIUM" ]]; then
  log "installing ${APT_PACKAGES[*]}"
  as_root apt-get update -q >&2
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${APT_PACKAGES[@]}" >&2
fi
if [[ ! -x "$CHROMIUM" ]]; then
  log "no browser at $CHROMIUM after the install"
  exit 1
fi
echo "$CHROMIUM"
