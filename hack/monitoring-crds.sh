#!/usr/bin/env bash
# Copies the Prometheus Operator's ServiceMonitor and PrometheusRule CRDs,
# as that project releases them (example/prometheus-operator-crd/ of its Go
# module), into DIR. The tests that install them check the operator against
# the real CRDs' schemas, on a cluster as users who run the Prometheus
# Operator have it.
#   hack/monitoring-crds.sh VERSION DIR
set -euo pipefail
version=$1 out=$2
module=github.com/prometheus-operator/prometheus-operator
# Outside any module, so that the project's go.mod is left alone.
src=$(cd "$(mktemp -d)" && go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
if [ -z "$src" ]; then
  echo "go mod download $module@$version gave no directory" >&2
  exit 1
fi
tmp=$out.partial
rm -rf "$tmp" && mkdir -p "$tmp"
for kind in servicemonitors prometheusrules; do
  cp "$src/example/prometheus-operator-crd/monitoring.coreos.com_$kind.yaml" "$tmp/"
done
chmod -R u+w "$tmp"
rm -rf "$out" && mv "$tmp" "$out"
