#!/usr/bin/env bash
# Writes the OperatorHub submission of the operator, as the community-operators
# repositories (k8s-operatorhub/community-operators and
# redhat-openshift-ecosystem/community-operators-prod) lay it out:
#
#   OUT/operators/podset-operator/ci.yaml
#   OUT/operators/podset-operator/<version>/{manifests,metadata}/
#
# one directory for every release (its bundle/ from git history, RELEASES)
# and one for the bundle/ of the work tree (VERSION). Releases made before
# the bundle carried com.redhat.openshift.versions get the work tree's
# value, which community-operators-prod requires of every bundle: their
# minKubeVersion is the same (test/bundle checks it).
#
# usage: hack/operatorhub-tree.sh OUT "VERSION=COMMIT ..." VERSION
set -euo pipefail
cd "$(dirname "$0")/.."
out=$1 releases=$2 current=$3
pkg=podset-operator
dir=$out/operators/$pkg
rm -rf "$dir" && mkdir -p "$dir"
openshift=$(grep '^  com.redhat.openshift.versions: ' bundle/metadata/annotations.yaml)

for release in $releases; do
  version=${release%%=*} rev=${release#*=}
  mkdir -p "$dir/$version"
  git archive "$rev" bundle/manifests bundle/metadata | tar -x -C "$dir/$version" --strip-components=1
  if ! grep -q '^  com.redhat.openshift.versions: ' "$dir/$version/metadata/annotations.yaml"; then
    printf '\n  # The OpenShift releases the bundle supports (added on submission).\n%s\n' "$openshift" >>"$dir/$version/metadata/annotations.yaml"
  fi
done
mkdir -p "$dir/$current"
cp -R bundle/manifests bundle/metadata "$dir/$current/"

cat >"$dir/ci.yaml" <<'YAML'
# How the community-operators pipelines build this package's catalog: each
# bundle upgrades from the one its CSV's spec.replaces names.
updateGraph: replaces-mode
YAML
echo "$dir: $(cd "$dir" && ls -d */ | tr -d / | tr '\n' ' ')and ci.yaml"
