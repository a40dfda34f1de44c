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
# The compiler flags of every other build here (the Makefile's GOFLAGS,
# hack/build-tool.sh), so that the Go build cache shares what this build has
# in common with the Kubernetes 1.33 tools.
export GONOSUMDB=github.com/openshift GOFLAGS="-mod=readonly -gcflags=all=-dwarf=false" CGO_ENABLED=0
started=$(date +%s)
# go list names the module's directory only once it is downloaded.
go mod download github.com/openshift/api
api=$(go list -m -f '{{.Dir}}' github.com/openshift/api)
[[ -n "$api" ]] || { echo "github.com/openshift/api is not in the module cache" >&2; exit 1; }
cp "$api/security/v1/zz_generated.crd-manifests/0000_03_config-operator_01_securitycontextconstraints.crd.yaml" \
  "$out/securitycontextconstraints.crd.yaml"
chmod u+w "$out/securitycontextconstraints.crd.yaml"
go build -trimpath -o "$out/.sccadmission.partial" .
mv "$out/.sccadmission.partial" "$out/sccadmission"
echo "$out/sccadmission: built in $(($(date +%s) - started))s"
