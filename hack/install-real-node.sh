#!/usr/bin/env bash
# Installs what a real node of the local cluster needs (test/localcluster,
# Options.RealNode) from Debian's packages, when it is missing: containerd and
# its ctr client, runc, the CNI plugins (bridge, host-local, loopback),
# iptables, conntrack (for kube-proxy), docker-registry (the node's image
# registry) and busybox-static (the operand image's stand-in is made from
# it). Needs root. Versions are Debian bookworm's; the node was verified with
# containerd 1.6.20 and runc 1.1.5.
#   hack/install-real-node.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source hack/lib/debian.sh

packages=(containerd runc containernetworking-plugins iptables conntrack docker-registry busybox-static)
apt_install "${packages[@]}"
# The packages enable containerd and docker-registry services; the local cluster runs its own,
# with its own state directories. Do not leave the system one running where
# an init system could start it.
if command -v systemctl >/dev/null && systemctl is-system-running >/dev/null 2>&1; then
  systemctl disable --now containerd docker-registry >/dev/null 2>&1 || true
fi
for b in /usr/bin/containerd /usr/bin/ctr /usr/sbin/runc /usr/lib/cni/bridge /usr/lib/cni/host-local /usr/lib/cni/loopback /usr/bin/docker-registry /bin/busybox; do
  [[ -x "$b" ]] || { echo "missing $b after installing ${packages[*]}" >&2; exit 1; }
done
echo "real node: $(containerd --version | awk '{print $1, $3}'), $(runc --version | head -1)"
