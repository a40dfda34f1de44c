#!/bin/sh
# in-prometheus-pod.sh DIR CMD ARGS...
# Runs CMD where the paths that the Prometheus Operator's generated
# configuration and its Prometheus pod's containers name hold what the pod's
# volumes would, so that the configuration is used exactly as generated:
#   DIR/serviceaccount/  at /var/run/secrets/kubernetes.io/serviceaccount/
#                        (token, ca.crt, namespace: Kubernetes service
#                        discovery's in-cluster client, and the
#                        ServiceMonitor's bearerTokenFile)
#   DIR/etc-prometheus/  at /etc/prometheus/ (config/, config_out/, rules/)
# All in a private mount namespace: a tmpfs over /run (/var/run is a link to
# it) and an overlay over /etc whose changes live in that tmpfs, so nothing
# is created or hidden on the host and the mounts go with the process.
# /etc/prometheus is a bind mount of DIR/etc-prometheus, so what CMD writes
# there (the config reloader's output) outlives it. Needs root.
set -eu
dir=$(cd "$1" && pwd); shift
exec unshare -m --propagation private sh -euc '
  dir=$1; shift
  mount -t tmpfs -o size=4m,mode=0755 prometheus-pod /run
  mkdir -p /run/.etc/upper /run/.etc/work /run/secrets/kubernetes.io/serviceaccount
  cp "$dir"/serviceaccount/* /run/secrets/kubernetes.io/serviceaccount/
  mount -t overlay prometheus-pod-etc -o lowerdir=/etc,upperdir=/run/.etc/upper,workdir=/run/.etc/work /etc
  mkdir -p /etc/prometheus
  mount --bind "$dir/etc-prometheus" /etc/prometheus
  exec "$@"' sh "$dir" "$@"
