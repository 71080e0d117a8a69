#!/usr/bin/env bash
# Makes sure SoftHSM2 (a software PKCS#11 token, Debian package softhsm2) is installed
# and prints its PKCS#11 module's path on stdout. Installs it with apt-get when the
# module is missing (as root, or through `sudo -n`).
#
#   LETHE_SOFTHSM_MODULE   the module to use (default /usr/lib/softhsm/libsofthsm2.so)
set -euo pipefail
module="${LETHE_SOFTHSM_MODULE:-/usr/lib/softhsm/libsofthsm2.so}"
here="${BASH_SOURCE[0]%/*}"
[ "$here" = "${BASH_SOURCE[0]}" ] && here=.
# shellcheck source=apt-install.sh
. "$here/apt-install.sh"
if [ ! -e "$module" ] || ! command -v softhsm2-util >/dev/null 2>&1; then
  echo "no SoftHSM2 at $module: installing Debian's softhsm2" >&2
  apt_install softhsm2 SoftHSM2 "" || exit 1
  [ -e "$module" ] || { echo "SoftHSM2 is still missing at $module after apt-get" >&2; exit 1; }
fi
echo "$module"
