#!/usr/bin/env bash
# Installs the Toxiproxy server from source (`go install`) into a cache and prints the
# binary's path on stdout. A binary already in the cache is reused: no rebuild. The
# fault-injection tests (test/faults) put it between lethe and PostgreSQL / MinIO.
#
#   LETHE_TOXIPROXY_VERSION   module version to build (default: the pin below)
#   LETHE_TOXIPROXY_CACHE     cache root (default: ${XDG_CACHE_HOME:-$HOME/.cache}/lethe)
#   LETHE_TOXIPROXY_BIN       use this binary instead (nothing is built)
set -euo pipefail
here="${BASH_SOURCE[0]%/*}"
[ "$here" = "${BASH_SOURCE[0]}" ] && here=.
# shellcheck source=go-install.sh
. "$here/go-install.sh"

version="${LETHE_TOXIPROXY_VERSION:-v2.5.0}"
cache="${LETHE_TOXIPROXY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lethe}"
# `go install …/cmd/server` names the binary after its package directory
go_install_cached "Toxiproxy server" LETHE_TOXIPROXY_BIN "github.com/Shopify/toxiproxy/v2/cmd/server" "$version" "$cache/toxiproxy-$version" server toxiproxy-server "about a minute"
