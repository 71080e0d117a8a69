# Sourced by the scripts that install a server lethe's tests need from source
# (infra/minio.sh, infra/toxiproxy.sh): `go install` of a pinned module version into a
# cache, printing the binary's path on stdout. A binary already in the cache is reused
# (no rebuild); a binary named by the override variable is used as it is.
#
#   go_install_cached <label> <override var> <package path> <version> <cache dir> <name go gives it> <name in the cache> <how long>

# go needs a home for its caches; some CI environments start without HOME
if [ -z "${HOME:-}" ]; then
  HOME=$(getent passwd "$(id -u)" | cut -d: -f6)
  export HOME="${HOME:-/tmp}"
fi

go_install_cached() {
  local label=$1 override_var=$2 package=$3 version=$4 dir=$5 built=$6 name=$7 duration=$8
  local override="${!override_var:-}"
  if [ -n "$override" ]; then
    [ -x "$override" ] || { echo "$override_var=$override is not an executable file" >&2; return 1; }
    echo "$override"
    return 0
  fi

  local bin="$dir/bin/$name"
  if [ -x "$bin" ]; then
    echo "$bin"
    return 0
  fi

  if ! command -v go >/dev/null 2>&1; then
    for candidate in /usr/local/go/bin /usr/lib/go/bin; do
      [ -x "$candidate/go" ] && PATH="$candidate:$PATH"
    done
  fi
  command -v go >/dev/null 2>&1 || {
    echo "The $label is not installed and Go is not available to build it: install Go (https://go.dev/dl) or set $override_var to a $name binary" >&2
    return 1
  }

  echo "building the $label $version from source (first run only; $duration)..." >&2
  mkdir -p "$dir/bin"
  local tmp_bin
  tmp_bin=$(mktemp -d "$dir/../$name-build.XXXXXX")
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp_bin'" EXIT
  GOBIN="$tmp_bin" GOFLAGS="${GOFLAGS:-} -buildvcs=false" go install "$package@$version" >&2
  mv "$tmp_bin/$built" "$bin"
  echo "$bin"
}
