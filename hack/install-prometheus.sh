#!/usr/bin/env bash
# Puts Prometheus and promtool of Debian's prometheus package, at the version
# the Makefile pins, into a directory of bin/: installs the package when it is
# missing or another version, then links the two binaries.
#   hack/install-prometheus.sh DEB_VERSION DEST_DIR
set -euo pipefail
version=$1 dest=$2
source "$(dirname "$0")/lib/debian.sh"

# The version of the installed package; empty when it is not installed (a
# removed package keeps its version in dpkg's records until purged).
installed() {
  if [[ "$(dpkg-query -W -f='${Status}' prometheus 2>/dev/null)" == "install ok installed" && -x /usr/bin/promtool ]]; then
    dpkg-query -W -f='${Version}' prometheus
  fi
}
install_prometheus() {
  [[ "$(installed)" != "$version" ]] || return 0
  echo "installing Debian's prometheus $version (apt-get; needs root)" >&2
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y --no-install-recommends "prometheus=$version" >/dev/null; then
    apt-get update >/dev/null
    apt-get install -y --no-install-recommends "prometheus=$version" >/dev/null
  fi
  # The package enables a service; nothing here runs systemd, but do not
  # leave a Prometheus running where one could start.
  if command -v systemctl >/dev/null && systemctl is-system-running >/dev/null 2>&1; then
    systemctl disable --now prometheus >/dev/null 2>&1 || true
  fi
}
apt_locked install_prometheus
[[ "$(installed)" == "$version" ]] || { echo "prometheus $version is not installed" >&2; exit 1; }
mkdir -p "$dest"
ln -sf /usr/bin/prometheus "$dest/prometheus"
ln -sf /usr/bin/promtool "$dest/promtool"
"$dest/promtool" --version | head -1
