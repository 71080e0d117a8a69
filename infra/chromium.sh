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
if [ ! -x "$chromium_bin" ]; then
  as_root=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 && as_root="sudo -n"
  fi
  echo "no Chromium at $chromium_bin: installing Debian's chromium" >&2
  { $as_root apt-get update -qq && $as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >&2 ||
    { echo "Chromium could not be installed (apt-get failed): run 'apt-get install -y chromium' as root, or set LETHE_CHROMIUM to a Chromium binary" >&2; exit 1; }
  [ -x "$chromium_bin" ] ||
    { echo "Chromium is still missing at $chromium_bin after apt-get: install it with 'apt-get install -y chromium', or set LETHE_CHROMIUM to a Chromium binary" >&2; exit 1; }
fi
echo "$chromium_bin"
