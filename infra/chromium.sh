#!/usr/bin/env bash
# Makes sure Chromium is installed for the browser test (test/erasure/report-browser.test.ts
# renders the erasure report in it; it fails, never skips, without one) and prints the
# binary's path on stdout. Installs Debian's chromium with apt-get when the binary is
# missing (as root, or through `sudo -n`); when it cannot, it says so and exits 1.
# Its messages go to stderr. `.ci/run` and `npm test` (scripts/test.mjs) run it.
#
#   LETHE_CHROMIUM   the Chromium binary to use (default /usr/bin/chromium)
set -euo pipefail
chromium_bin="${LETHE_CHROMIUM:-/usr/bin/chromium}"
here="${BASH_SOURCE[0]%/*}"
[ "$here" = "${BASH_SOURCE[0]}" ] && here=.
# shellcheck source=apt-install.sh
. "$here/apt-install.sh"
if [ ! -x "$chromium_bin" ]; then
  echo "no Chromium at $chromium_bin: installing Debian's chromium" >&2
  apt_install chromium Chromium ", or set LETHE_CHROMIUM to a Chromium binary" || exit 1
  [ -x "$chromium_bin" ] ||
    { echo "Chromium is still missing at $chromium_bin after apt-get: install it with 'apt-get install -y chromium', or set LETHE_CHROMIUM to a Chromium binary" >&2; exit 1; }
fi
echo "$chromium_bin"
