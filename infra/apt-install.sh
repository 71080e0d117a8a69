# Sourced by the scripts that install a Debian package lethe's tests need when it is
# missing (infra/softhsm.sh, infra/chromium.sh): apt-get as root, or through `sudo -n`.
# The caller says what it installs; messages go to stderr; on failure it says what to run and returns 1.
#
#   apt_install <package> <label> <what else the person may do instead>

apt_install() {
  local package=$1 label=$2 instead=$3
  local as_root=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 && as_root="sudo -n"
  fi
  { $as_root apt-get update -qq && $as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$package"; } >&2 ||
    { echo "$label could not be installed (apt-get failed): run 'apt-get install -y $package' as root$instead" >&2; return 1; }
}
