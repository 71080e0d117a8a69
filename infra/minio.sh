#!/usr/bin/env bash
# Installs the MinIO server from source (`go install`) into a cache and prints the
# binary's path on stdout. A binary already in the cache is reused: no rebuild.
#
# The version is pinned. The intended pin was RELEASE.2025-10-15T17-29-55Z (commit
# 9e49d5e7a648f00e26f2246f4dc28e6b07f8c84a, module v0.0.0-20251015172955-9e49d5e7a648),
# but the Go module proxy reachable from this project's machines answers 403 "not
# available" for it; the pin below is the newest version it serves.
#
#   LETHE_MINIO_VERSION   module version to build (default: the pin below)
#   LETHE_MINIO_CACHE     cache root (default: ${XDG_CACHE_HOME:-$HOME/.cache}/lethe)
#   LETHE_MINIO_BIN       use this binary instead (nothing is built)
set -euo pipefail

# go needs a home for its caches; some CI environments start without HOME
if [ -z "${HOME:-}" ]; then
  HOME=$(getent passwd "$(id -u)" | cut -d: -f6)
  export HOME="${HOME:-/tmp}"
fi

version="${LETHE_MINIO_VERSION:-v0.0.0-20260212201848-7aac2a2c5b7c}"
cache="${LETHE_MINIO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lethe}"

if [ -n "${LETHE_MINIO_BIN:-}" ]; then
  [ -x "$LETHE_MINIO_BIN" ] || { echo "LETHE_MINIO_BIN=$LETHE_MINIO_BIN is not an executable file" >&2; exit 1; }
  echo "$LETHE_MINIO_BIN"
  exit 0
fi

bin_dir="$cache/minio-$version/bin"
bin="$bin_dir/minio"
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
  echo "MinIO is not installed and Go is not available to build it: install Go (https://go.dev/dl) or set LETHE_MINIO_BIN to a MinIO server binary" >&2
  exit 1
}

echo "building the MinIO server $version from source (first run only; a few minutes)..." >&2
mkdir -p "$bin_dir"
tmp_bin=$(mktemp -d "$cache/minio-build.XXXXXX")
trap 'rm -rf "$tmp_bin"' EXIT
GOBIN="$tmp_bin" GOFLAGS="${GOFLAGS:-} -buildvcs=false" go install "github.com/minio/minio@$version" >&2
mv "$tmp_bin/minio" "$bin"
echo "$bin"
