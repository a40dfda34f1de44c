#!/usr/bin/env bash
# Builds the stand-in of OpenShift's pod admission (test/openshift/sccadmission,
# OpenShift's own SecurityContextConstraints plugin served as a webhook) into
# OUTDIR, beside the SecurityContextConstraints CRD as OpenShift ships it (from
# the github.com/openshift/api version its module pins).
#
# usage: hack/build-openshift-admission.sh OUTDIR
set -euo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd)
cd "$(dirname "$0")/../test/openshift/sccadmission"
# One build at a time: CI's background builds (make prebuild-tools) and a
# lane's make may ask for it at once; the second waits, then builds again
# from the warm build cache, and each puts its binary in place by a rename.
exec 9>"$out/.sccadmission.lock"
flock 9
# The checksum database does not know the OpenShift pseudo-versions; go.sum,
# committed, pins them.
# The compiler flags of OLM v1's and the Kubernetes 1.33 commands' builds
# (hack/build-tool.sh: no DWARF, no -trimpath), whose module versions go.mod
# takes: the Go build cache then compiles the packages they share once.
export GONOSUMDB=github.com/openshift GOFLAGS="-mod=readonly -gcflags=all=-dwarf=false" CGO_ENABLED=0
started=$(date +%s)
# go list names the module's directory only once it is downloaded.
go mod download github.com/openshift/api
api=$(go list -m -f '{{.Dir}}' github.com/openshift/api)
[[ -n "$api" ]] || { echo "github.com/openshift/api is not in the module cache" >&2; exit 1; }
cp "$api/security/v1/zz_generated.crd-manifests/0000_03_config-operator_01_securitycontextconstraints.crd.yaml" \
  "$out/securitycontextconstraints.crd.yaml"
chmod u+w "$out/securitycontextconstraints.crd.yaml"
go build -o "$out/.sccadmission.partial" .
mv "$out/.sccadmission.partial" "$out/sccadmission"
echo "$out/sccadmission: built in $(($(date +%s) - started))s"

# Where OLM v1's module graph is here already (bin/.module-olmv1-*, made by
# hack/build-tool.sh), name the modules this build compiles at another
# version than that graph: each compiles twice, on a cold machine for
# minutes. Moving a pin of either leaves go.mod to be aligned again.
# join and sort compare bytes only under the C locale. A failed check warns
# too: the binary is in place already.
export LC_ALL=C
for olmv1 in "$(dirname "$out")"/.module-olmv1-*/; do
  [[ -s "$olmv1/go.sum" ]] || continue
  f='{{.Path}} {{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}'
  drift=$(join <(go list -deps -f "{{with .Module}}$f{{end}}" . | sort -u) \
    <(cd "$olmv1" && go list -m -f "$f" all | sort) | awk '$2 != $3 {print $1 " " $2 " (OLM v1: " $3 ")"}') ||
    drift="(the check failed)"
  [[ -z "$drift" ]] || printf 'warning: modules at another version than %s (compiled twice; align test/openshift/sccadmission/go.mod):\n%s\n' "$olmv1" "$drift" >&2
done
