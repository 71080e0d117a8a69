#!/usr/bin/env bash
# Makes sure a PostgreSQL server is installed (initdb, pg_ctl, postgres) and prints its
# bin folder on stdout: the newest /usr/lib/postgresql/<version>/bin that has all three
# (Debian's layout), else the folder of the pg_ctl on PATH when it has them. Installs Debian's postgresql package with apt-get when there is none
# (as root, or through `sudo -n`). npm test uses it only when no PostgreSQL answers
# (infra/postgres-cluster.mjs then starts a private cluster with it); .ci/run uses its
# psql and pg_isready.
#
#   LETHE_POSTGRES_BIN_DIR   a folder with initdb, pg_ctl and postgres: used as it is
set -euo pipefail
here="${BASH_SOURCE[0]%/*}"
[ "$here" = "${BASH_SOURCE[0]}" ] && here=.
# shellcheck source=apt-install.sh
. "$here/apt-install.sh"

has_server() {
  local dir=$1 b
  for b in initdb pg_ctl postgres; do [ -x "$dir/$b" ] || return 1; done
}

newest_server() {
  local dir
  # newest version first: 17 before 16 before 9.6
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5,5 -V -r); do
    if has_server "$dir"; then
      echo "$dir"
      return 0
    fi
  done
  # elsewhere (not Debian's layout): the folder of the pg_ctl on PATH, when initdb and postgres are beside it
  dir=$(command -v pg_ctl 2>/dev/null) || return 1
  dir=$(dirname "$(readlink -f "$dir")")
  has_server "$dir" && echo "$dir"
}

if [ -n "${LETHE_POSTGRES_BIN_DIR:-}" ]; then
  has_server "$LETHE_POSTGRES_BIN_DIR" ||
    { echo "LETHE_POSTGRES_BIN_DIR=$LETHE_POSTGRES_BIN_DIR does not hold initdb, pg_ctl and postgres (executables)" >&2; exit 1; }
  echo "$LETHE_POSTGRES_BIN_DIR"
  exit 0
fi

if ! newest_server; then
  echo "no PostgreSQL server in /usr/lib/postgresql/*/bin: installing Debian's postgresql" >&2
  apt_install postgresql PostgreSQL ", or set LETHE_POSTGRES_BIN_DIR to a folder with initdb, pg_ctl and postgres" || exit 1
  newest_server || { echo "PostgreSQL is still missing from /usr/lib/postgresql/*/bin after apt-get" >&2; exit 1; }
fi
