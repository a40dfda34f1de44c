#!/usr/bin/env bash
# Validates every version of the OperatorHub submission (make operatorhub)
# with the optional validators of operator-sdk that the community-operators
# pipelines select: the operatorframework suite, operatorhub (which
# community-operators-prod still runs), community (with the bundle image's
# Dockerfile as index-path) and good-practices, at the Kubernetes version
# of the CSVs' minKubeVersion. A warning fails as an error does, but for the
# deprecation notice of the operatorhub and community validators themselves.
#
# The Dockerfile each bundle image would be built from carries its metadata's
# annotations as labels (operator-sdk generate bundle writes it so); it is
# made here from the metadata, as the pipelines make it.
#
# usage: hack/verify-operatorhub.sh OPERATOR_SDK PACKAGE_DIR MIN_KUBE_VERSION
set -euo pipefail
sdk=$1 pkg=$2 kube=${3%.*}
work=$(mktemp -d) && trap 'rm -rf "$work"' EXIT
failed=0
for bundle in "$pkg"/*/; do
  version=$(basename "$bundle")
  dockerfile=$work/$version.Dockerfile
  { echo "FROM scratch"
    sed -n 's/^  \([a-z][^:]*\): "\{0,1\}\([^"]*\)"\{0,1\}$/LABEL \1=\2/p' "$bundle/metadata/annotations.yaml"
    echo "COPY manifests /manifests/"
    echo "COPY metadata /metadata/"; } >"$dockerfile"
  for select in "suite=operatorframework" "name=operatorhub" "name=community --optional-values=index-path=$dockerfile" "name=good-practices"; do
    # shellcheck disable=SC2086 # select holds the flag and its option
    out=$("$sdk" bundle validate "$bundle" --select-optional $select --optional-values=k8s-version="$kube" 2>&1) || true
    # The operatorhub and community validators warn that they are
    # deprecated, whatever the bundle; any other warning counts.
    problems=$(grep -E 'level=(warning|error)' <<<"$out" | grep -v 'validator is deprecated' || true)
    if [[ -n "$problems" ]] || ! grep -q 'All validation tests have completed successfully' <<<"$out"; then
      echo "$version, --select-optional $select:" >&2
      echo "$out" >&2
      failed=1
    else
      echo "$version: ${select%% *} passed"
    fi
  done
done
exit "$failed"
