#!/usr/bin/env bash
# Makes sure SoftHSM2 (a software PKCS#11 token, Debian package softhsm2) is installed
# and prints its PKCS#11 module's path on stdout. Installs it with apt-get when the
# module is missing (as root, or through `sudo -n`).
#
#   LETHE_SOFTHSM_MODULE   the module to use (default /usr/lib/softhsm/libsofthsm2.so)
set -euo pipefail
module="${LETHE_SOFTHSM_MODULE:-/usr/lib/softhsm/libsofthsm2.so}"
if [ ! -e "$module" ] || ! command -v softhsm2-util >/dev/null 2>&1; then
  as_root=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 && as_root="sudo -n"
  fi
  echo "no SoftHSM2 at $module: installing Debian's softhsm2" >&2
  { $as_root apt-get update -qq && $as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq softhsm2; } >&2 ||
    { echo "SoftHSM2 could not be installed (apt-get failed): run 'apt-get install -y softhsm2' as root" >&2; exit 1; }
  [ -e "$module" ] || { echo "SoftHSM2 is still missing at $module after apt-get" >&2; exit 1; }
fi
echo "$module"
