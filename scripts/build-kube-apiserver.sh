#!/usr/bin/env bash
# Build kube-apiserver from Debian's `kubernetes` source package and cache it outside the repo.
#
# What it does, each step skipped when already done (so a second run takes well under a second):
#   1. apt: etcd-server, golang-go, dpkg-dev, golang-github-modern-go-reflect2-dev, make, rsync, openssl
#      (a deb-src line for bookworm is added when none exists, then `apt-get update`);
#   2. `apt-get source kubernetes` (upstream v1.20.2 with its vendor/) into $CACHE/src/;
#   3. swaps vendor/github.com/modern-go/reflect2 (1.0.1 crashes under Go >= 1.18) for
#      Debian's 1.0.2 sources;
#   4. `make WHAT=cmd/kube-apiserver` and copies the binary to $CACHE/bin/kube-apiserver-v1.20.2.
#
# Output: the binary's path, alone on the last line of stdout. No binary goes into the repo.
# Cache: ${BATCHPLACE_CACHE:-$HOME/.cache/batchplace}; a lock makes concurrent runs wait for
# one build. Needs root (or sudo) only for the apt steps, which a cached run skips.
set -euo pipefail

KUBE_VERSION="v1.20.2"
CACHE="${BATCHPLACE_CACHE:-$HOME/.cache/batchplace}"
BIN="$CACHE/bin/kube-apiserver-$KUBE_VERSION"
SRC_ROOT="$CACHE/src/kubernetes-$KUBE_VERSION"
APT_PACKAGES=(etcd-server golang-go dpkg-dev golang-github-modern-go-reflect2-dev make rsync openssl)
REFLECT2_DEBIAN=/usr/share/gocode/src/github.com/modern-go/reflect2

log() { echo "build-kube-apiserver: $*" >&2; }

as_root() {
  if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

missing_packages() {
  local missing=()
  for package in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
      || missing+=("$package")
  done
  echo "${missing[@]:-}"
}

has_deb_src() {
  grep -rqsE '^(deb-src|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/
}

install_packages() {
  local missing
  missing="$(missing_packages)"
  if [[ -n "$missing" ]]; then
    log "installing $missing"
    as_root apt-get update -q >&2
    # shellcheck disable=SC2086
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing >&2
  fi
}

fetch_source() {
  if [[ -f "$SRC_ROOT/.fetched" ]]; then return; fi
  if ! has_deb_src; then
    # Mirror the machine's own archive (the first deb URI configured) for sources.
    local archive
    archive="$(grep -rhsE '^URIs:' /etc/apt/sources.list.d/*.sources | head -n1 | awk '{print $2}')"
    [[ -n "$archive" ]] || archive="$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list 2>/dev/null)"
    if [[ -z "$archive" ]]; then
      log "error: no Debian archive configured in /etc/apt; add a deb-src line for bookworm"
      exit 1
    fi
    log "adding a deb-src line for bookworm from $archive"
    as_root tee /etc/apt/sources.list.d/batchplace-deb-src.sources >/dev/null <<EOF
Types: deb-src
URIs: $archive
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  fi
  as_root apt-get update -q >&2
  rm -rf "$SRC_ROOT" && mkdir -p "$SRC_ROOT"
  log "apt-get source kubernetes into $SRC_ROOT"
  (cd "$SRC_ROOT" && apt-get source -q kubernetes >&2)
  local tree
  tree="$(find "$SRC_ROOT" -mindepth 1 -maxdepth 1 -type d -name 'kubernetes-*' | head -n1)"
  if [[ -z "$tree" || ! -d "$tree/vendor" ]]; then
    log "error: no kubernetes tree with vendor/ under $SRC_ROOT"
    exit 1
  fi
  ln -sfn "$tree" "$SRC_ROOT/tree"
  touch "$SRC_ROOT/.fetched"
}

swap_reflect2() {
  local vendored="$SRC_ROOT/tree/vendor/github.com/modern-go/reflect2"
  if [[ -f "$vendored/.from-debian" ]]; then return; fi
  log "replacing vendored reflect2 with Debian's $(dpkg-query -W -f='${Version}' golang-github-modern-go-reflect2-dev)"
  rm -rf "$vendored" && mkdir -p "$vendored"
  find "$REFLECT2_DEBIAN" -maxdepth 1 -type f \( -name '*.go' -o -name '*.s' \) ! -name '*_test.go' \
    -exec cp {} "$vendored/" \;
  touch "$vendored/.from-debian"
}

build() {
  log "make WHAT=cmd/kube-apiserver (a few minutes on 2 cores)"
  local started=$SECONDS
  (
    cd "$SRC_ROOT/tree"
    rm -rf _output  # a failed run leaves half-made generators behind that make would trust
    export GOFLAGS=-mod=vendor GO111MODULE=on GOTOOLCHAIN=local
    export GOCACHE="$CACHE/go-build" GOPATH="$CACHE/gopath"
    export KUBE_GIT_VERSION="$KUBE_VERSION" KUBE_GIT_TREE_STATE=clean KUBE_GIT_COMMIT=debian
    make WHAT=cmd/kube-apiserver >&2
  )
  local built
  built="$(find "$SRC_ROOT/tree/_output" -type f -name kube-apiserver -perm -u+x | head -n1)"
  if [[ -z "$built" ]]; then
    log "error: make finished but produced no kube-apiserver"
    exit 1
  fi
  mkdir -p "$(dirname "$BIN")"
  cp "$built" "$BIN.tmp" && mv "$BIN.tmp" "$BIN"
  log "built in $((SECONDS - started)) s: $BIN"
  rm -rf "$SRC_ROOT"  # 1.8 GB of sources and objects; the binary is what is cached
}

main() {
  if [[ -x "$BIN" ]] && command -v etcd >/dev/null; then
    echo "$BIN"
    return
  fi
  mkdir -p "$CACHE"
  exec 9>"$CACHE/.build-kube-apiserver.lock"
  flock 9
  if [[ -x "$BIN" ]] && command -v etcd >/dev/null; then  # another run built it while we waited
    echo "$BIN"
    return
  fi
  install_packages
  if [[ ! -x "$BIN" ]]; then
    fetch_source
    swap_reflect2
    build
  fi
  echo "$BIN"
}

main "$@"
