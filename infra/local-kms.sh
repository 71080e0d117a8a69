#!/usr/bin/env bash
# Installs local-kms (https://github.com/nsmithuk/local-kms), a server that answers the
# AWS KMS API, from source (`go install`) into a cache and prints the binary's path on
# stdout. A binary already in the cache is reused: no rebuild. The AWS KMS epoch-store
# tests (test/keyprovider/aws-kms.test.ts) and bench/providers-kms.ts start it.
#
#   LETHE_LOCAL_KMS_VERSION   module version to build (default: the pin below)
#   LETHE_LOCAL_KMS_CACHE     cache root (default: ${XDG_CACHE_HOME:-$HOME/.cache}/lethe)
#   LETHE_LOCAL_KMS_BIN       use this binary instead (nothing is built)
set -euo pipefail
here="${BASH_SOURCE[0]%/*}"
[ "$here" = "${BASH_SOURCE[0]}" ] && here=.
# shellcheck source=go-install.sh
. "$here/go-install.sh"

version="${LETHE_LOCAL_KMS_VERSION:-v0.0.0-20260228092603-2a5e92d09ab6}"
cache="${LETHE_LOCAL_KMS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lethe}"
# at this version the main package is the module root; `go install` names the binary local-kms
go_install_cached "local-kms server" LETHE_LOCAL_KMS_BIN "github.com/nsmithuk/local-kms" "$version" "$cache/local-kms-$version" local-kms local-kms "about a minute"
