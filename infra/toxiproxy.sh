#!/usr/bin/env bash
# Installs the Toxiproxy server from source (`go install`) into a cache and prints the
# binary's path on stdout. A binary already in the cache is reused: no rebuild. The
# fault-injection tests (test/faults) put it between lethe and PostgreSQL / MinIO.
#
#   LETHE_TOXIPROXY_VERSION   module version to build (default: the pin below)
#   LETHE_TOXIPROXY_CACHE     cache root (default: ${XDG_CACHE_HOME:-$HOME/.cache}/lethe)
#   LETHE_TOXIPROXY_BIN       use this binary instead (nothing is built)
set -euo pipefail

# go needs a home for its caches; some CI environments start without HOME
if [ -z "${HOME:-}" ]; then
  HOME=$(getent passwd "$(id -u)" | cut -d: -f6)
  export HOME="${HOME:-/tmp}"
fi

version="${LETHE_TOXIPROXY_VERSION:-v2.5.0}"
cache="${LETHE_TOXIPROXY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lethe}"

if [ -n "${LETHE_TOXIPROXY_BIN:-}" ]; then
  [ -x "$LETHE_TOXIPROXY_BIN" ] || { echo "LETHE_TOXIPROXY_BIN=$LETHE_TOXIPROXY_BIN is not an executable file" >&2; exit 1; }
  echo "$LETHE_TOXIPROXY_BIN"
  exit 0
fi

bin_dir="$cache/toxiproxy-$version/bin"
bin="$bin_dir/toxiproxy-server"
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi

if ! command -v go >/dev/null 2>&1; then
  for candidate in /usr/local/go/bin /usr/lib/go/bin; do
    [ -x "$candidate/go" ] && PATH="$candidate:$PATH"
  done
fi
command -v go >/dev/null 2>&1 || {
  echo "Toxiproxy is not installed and Go is not available to build it: install Go (https://go.dev/dl) or set LETHE_TOXIPROXY_BIN to a toxiproxy-server binary" >&2
  exit 1
}

echo "building the Toxiproxy server $version from source (first run only; about a minute)..." >&2
mkdir -p "$bin_dir"
tmp_bin=$(mktemp -d "$cache/toxiproxy-build.XXXXXX")
trap 'rm -rf "$tmp_bin"' EXIT
GOBIN="$tmp_bin" GOFLAGS="${GOFLAGS:-} -buildvcs=false" go install "github.com/Shopify/toxiproxy/v2/cmd/server@$version" >&2
# `go install …/cmd/server` names the binary after its package directory
mv "$tmp_bin/server" "$bin"
echo "$bin"
