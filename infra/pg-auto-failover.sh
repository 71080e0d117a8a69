#!/usr/bin/env bash
# Makes sure pg_auto_failover's pg_autoctl (Debian package postgresql-15-auto-failover,
# for the machine's PostgreSQL major version) is installed and prints its path on stdout.
# Installs it with apt-get when it is missing (as root, or through `sudo -n`).
#
#   LETHE_PG_AUTOCTL   the pg_autoctl to use (nothing is installed)
set -euo pipefail
here="${BASH_SOURCE[0]%/*}"
[ "$here" = "${BASH_SOURCE[0]}" ] && here=.
# shellcheck source=apt-install.sh
. "$here/apt-install.sh"
if [ -n "${LETHE_PG_AUTOCTL:-}" ]; then
  [ -x "$LETHE_PG_AUTOCTL" ] || { echo "LETHE_PG_AUTOCTL=$LETHE_PG_AUTOCTL is not an executable file" >&2; exit 1; }
  echo "$LETHE_PG_AUTOCTL"
  exit 0
fi
bin="$(bash "$here/postgres.sh")"
major="$(basename "$(dirname "$bin")")"
# the extension comes in postgresql-<major>-auto-failover, pg_autoctl with it in pg-auto-failover-cli (/usr/bin)
autoctl=/usr/bin/pg_autoctl
if [ ! -x "$autoctl" ] || [ ! -e "/usr/share/postgresql/$major/extension/pgautofailover.control" ]; then
  echo "no pg_autoctl in $bin: installing Debian's postgresql-$major-auto-failover" >&2
  apt_install "postgresql-$major-auto-failover" pg_auto_failover "" || exit 1
  [ -x "$autoctl" ] || { echo "pg_autoctl is still missing at $autoctl after apt-get" >&2; exit 1; }
fi
echo "$autoctl"
