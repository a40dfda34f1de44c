#!/usr/bin/env bash
# Builds Argo Rollouts' controller (cmd/rollouts-controller) from its module,
# in its own module graph (the module's go.mod, replace directives and all),
# into OUTDIR, beside its CRDs (OUTDIR/crds), for `make
# compare-argo-rollouts`. Not a CI tool: nothing of the project's build
# depends on it.
#
# v1.10.2's go.mod asks for Go 1.26.10, newer than this project's Go: the go
# command takes the toolchain ARGO_GO_TOOLCHAIN from the module proxy for
# this build only.
#
# usage: hack/build-argo-rollouts.sh OUTDIR
set -euo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd)
: "${ARGO_ROLLOUTS_VERSION:=v1.10.2}"
: "${ARGO_GO_TOOLCHAIN:=go1.27.3}"
mod=github.com/argoproj/argo-rollouts
export GOTOOLCHAIN=$ARGO_GO_TOOLCHAIN GOFLAGS="-mod=mod -gcflags=all=-dwarf=false" CGO_ENABLED=0
started=$(date +%s)
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
dir=$(go mod download -json "$mod@$ARGO_ROLLOUTS_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
[[ -n "$dir" ]] || { echo "$mod@$ARGO_ROLLOUTS_VERSION: not in the module cache" >&2; exit 1; }
cp -r "$dir" "$work/src" && chmod -R u+w "$work/src"
cd "$work/src"
# What its release build stamps (its Makefile's override_ldflags).
v=$mod/utils/version
go build -trimpath -ldflags "-s -w -X $v.version=${ARGO_ROLLOUTS_VERSION#v} -X $v.gitTag=$ARGO_ROLLOUTS_VERSION -X $v.gitTreeState=clean" \
  -o "$out/.rollouts-controller.partial" ./cmd/rollouts-controller
rm -rf "$out/crds" && mkdir -p "$out/crds" && cp manifests/crds/*-crd.yaml "$out/crds/"
mv "$out/.rollouts-controller.partial" "$out/rollouts-controller"
echo "$out/rollouts-controller: built in $(($(date +%s) - started))s with $(go version)"
