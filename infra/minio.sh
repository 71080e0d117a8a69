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
here="${BASH_SOURCE[0]%/*}"
[ "$here" = "${BASH_SOURCE[0]}" ] && here=.
# shellcheck source=go-install.sh
. "$here/go-install.sh"

version="${LETHE_MINIO_VERSION:-v0.0.0-20260212201848-7aac2a2c5b7c}"
cache="${LETHE_MINIO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lethe}"
go_install_cached "MinIO server" LETHE_MINIO_BIN "github.com/minio/minio" "$version" "$cache/minio-$version" minio minio "a few minutes"
