#!/bin/sh
# with-sa-token.sh TOKEN_FILE CMD ARGS...
# Runs CMD in a private mount namespace where
# /var/run/secrets/kubernetes.io/serviceaccount/token holds TOKEN_FILE's
# content, as in a pod. OLM v1's catalogd and operator-controller read that
# hard-coded path (only its "sub", the ServiceAccount they act for) even when
# run outside the cluster with a kubeconfig. A tmpfs goes over /run
# (/var/run is a link to it), so nothing is created on the host and the
# mount goes with the process. Needs root (unshare -m, mount).
set -eu
tok=$1; shift
exec unshare -m --propagation private sh -euc '
  tok=$1; shift
  content=$(cat "$tok")
  mount -t tmpfs -o size=1m,mode=0755 olmv1-sa /run
  mkdir -p /run/secrets/kubernetes.io/serviceaccount
  printf %s "$content" > /run/secrets/kubernetes.io/serviceaccount/token
  exec "$@"' sh "$tok" "$@"
