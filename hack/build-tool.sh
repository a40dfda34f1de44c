#!/usr/bin/env bash
# Builds one pinned tool from the Go module proxy into a directory.
#
# Kubernetes, etcd, kwok and the operator-framework commands are normally
# downloaded as prebuilt binaries; this project builds them instead so that a
# machine that reaches only the Go module proxy can run every test. Modules
# that carry `replace` directives cannot be `go install`ed, so each tool is
# built from a throw-away wrapper module that requires the real one.
#
# Each build is kept in a cache outside the work tree (TOOLS_CACHE, by
# default $XDG_CACHE_HOME/podset-operator/tools), keyed by everything that
# decides the binary: the tool, the versions it is built from, the Go
# toolchain, the target platform and this script itself. A fresh clone on a
# machine that built a tool once takes it from there in a second instead of
# compiling it for minutes, as CI systems cache dependencies. TOOLS_CACHE=""
# turns the cache off.
#
# usage: hack/build-tool.sh TOOL OUTDIR [NAME]
#   NAME: the file name in OUTDIR (default TOOL), e.g. controller-gen-v0.23.0.
set -euo pipefail

tool=$1
out=$(mkdir -p "$2" && cd "$2" && pwd)
name=${3:-$tool}
script=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")

: "${K8S_VERSION:=v1.37.0}"         # k8s.io/kubernetes
: "${K8S_STAGING_VERSION:=v0.37.0}" # k8s.io/* staging modules of that release
: "${ETCD_VERSION:=v3.6.16}"
: "${KWOK_VERSION:=v0.8.0}"
: "${OPM_VERSION:=v1.60.0}"
: "${OLM_VERSION:=v0.28.0}"
: "${OPERATOR_SDK_VERSION:=v1.34.1}"
: "${CONTROLLER_RUNTIME_VERSION:=v0.25.2}" # the project's (go.mod)
: "${OPERATOR_CONTROLLER_VERSION:=v1.5.1}" # OLM v1: operator-controller and catalogd
: "${PROMETHEUS_OPERATOR_VERSION:=v0.89.0}"
: "${PROMETHEUS_SERVER_VERSION:=v3.9.1}"    # the Prometheus it runs by default
# envtest's kube-apiserver of older releases (make test-k8s-versions): the
# oldest the CSV allows, built in OLM v0's module graph, and the first with
# pods/resize, built in OLM v1's (olm_module and olmv1_wrapper below).
: "${K8S_OLDEST_VERSION:=v1.29.3}"
: "${K8S_RESIZE_VERSION:=v1.33.2}"
# controller-gen and crd-ref-docs, from one wrapper module (codegen_wrapper).
: "${CONTROLLER_TOOLS_VERSION:=v0.23.0}"
: "${CRD_REF_DOCS_VERSION:=v0.3.0}"
# The tools `go install`ed as published (no wrapper module needed).
: "${KUSTOMIZE_VERSION:=v5.8.2}"
: "${GOLANGCI_LINT_VERSION:=v2.15.0}"
: "${GRPC_HEALTH_PROBE_VERSION:=v0.4.61}"
: "${CYCLONEDX_GOMOD_VERSION:=v1.10.0}"
: "${PROM_LABEL_PROXY_VERSION:=v0.11.1}"
TOOLS_CACHE=${TOOLS_CACHE-${XDG_CACHE_HOME:-$HOME/.cache}/podset-operator/tools}

# versions: the pinned versions a tool's binary depends on. The Kubernetes
# commands, kwok and opm share one module graph (k8s_wrapper below), so each
# depends on all of that graph's pins.
versions() {
  case "$tool" in
    kube-apiserver|kube-controller-manager|kube-scheduler|kubectl|kubelet|kube-proxy|kwok|opm)
      echo "$K8S_VERSION $K8S_STAGING_VERSION $KWOK_VERSION $OPM_VERSION $CONTROLLER_RUNTIME_VERSION" ;;
    etcd) echo "$ETCD_VERSION" ;;
    olm|catalog|cpb|olm-kube-apiserver) echo "$OLM_VERSION $K8S_OLDEST_VERSION" ;;
    operator-sdk|scorecard-test) echo "$OPERATOR_SDK_VERSION" ;;
    operator-controller|catalogd|olmv1-kube-apiserver|olmv1-kube-controller-manager|olmv1-kube-scheduler|olmv1-kubelet|olmv1-kube-proxy)
      echo "$OPERATOR_CONTROLLER_VERSION $K8S_RESIZE_VERSION" ;;
    prometheus-operator|prometheus-config-reloader) echo "$PROMETHEUS_OPERATOR_VERSION" ;;
    prometheus) echo "$PROMETHEUS_SERVER_VERSION" ;;
    controller-gen|crd-ref-docs) echo "$CONTROLLER_TOOLS_VERSION $CRD_REF_DOCS_VERSION" ;;
    kustomize) echo "$KUSTOMIZE_VERSION" ;;
    golangci-lint) echo "$GOLANGCI_LINT_VERSION" ;;
    grpc-health-probe) echo "$GRPC_HEALTH_PROBE_VERSION" ;;
    cyclonedx-gomod) echo "$CYCLONEDX_GOMOD_VERSION" ;;
    prom-label-proxy) echo "$PROM_LABEL_PROXY_VERSION" ;;
    *) echo "unknown tool: $tool" >&2; exit 2 ;;
  esac
}
versions >/dev/null

# One build per tool at a time: CI builds the tools in the background
# (make prebuild-tools) while its steps run, and a step that needs a tool
# being built waits for it here, then finds it built. The binary goes into
# OUTDIR under a temporary name and is renamed last, after its companion
# files, so its presence means the build is complete.
exec 9>"$out/.$name.lock"
waited=$(date +%s)
flock 9
if [[ -x "$out/$name" ]]; then
  echo "$out/$name: built meanwhile (waited $(($(date +%s) - waited))s for it)"
  exit 0
fi

# install DIR: puts a finished build (the binary DIR/TOOL and its companion
# files and folders) into OUTDIR, the binary last. The binary is hard-linked
# when it can be (no copy of a 100 MB file), copied otherwise.
install_build() {
  local from=$1 f
  for f in "$from"/*; do
    [[ "$(basename "$f")" == "$tool" ]] && continue
    rm -rf "${out:?}/$(basename "$f")"
    cp -R "$f" "$out/"
    chmod -R u+w "$out/$(basename "$f")"
  done
  rm -f "$out/.$name.partial"
  ln "$from/$tool" "$out/.$name.partial" 2>/dev/null || cp "$from/$tool" "$out/.$name.partial"
  mv "$out/.$name.partial" "$out/$name"
}

entry=
if [[ -n "$TOOLS_CACHE" ]]; then
  key=$( { echo "$tool $(versions)"; go version; go env GOOS GOARCH CGO_ENABLED GOEXPERIMENT; cat "$script"; } | sha256sum | cut -c1-16)
  entry=$TOOLS_CACHE/$tool-$key
  if [[ -x "$entry/$tool" ]]; then
    install_build "$entry"
    echo "$out/$name: from the tool cache ($entry)"
    exit 0
  fi
fi

# Start and duration in the log, to tell where a cold run's minutes go.
started=$(date +%s)
echo "building $tool ($(date -u +%H:%M:%S))"

# The project's compiler flags (the Makefile's GOFLAGS): -trimpath and no
# DWARF debug information. The tools are run, never debugged (stack traces do
# not need DWARF), leaving it out takes about a sixth off each compile, and
# with the project's flags the Go build cache compiles what a tool shares with
# the project (the standard library, the Kubernetes libraries of the wrapper
# module's tools below) once.
nodwarf=-gcflags=all=-dwarf=false
export GOFLAGS="-mod=mod $nodwarf"
export GONOSUMDB="${GONOSUMDB:+$GONOSUMDB,}github.com/operator-framework"
export CGO_ENABLED=${CGO_ENABLED:-0}

work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
# The build writes the binary and its companions into stage/, which then
# goes into the cache and into OUTDIR.
stage=$work/stage
bin=$stage/$tool
mkdir -p "$stage" "$work/build"
cd "$work/build"

# wrapper MODULE VERSION PKG...: a module that requires MODULE and imports PKGs.
wrapper() {
  local mod=$1 ver=$2; shift 2
  go mod init example.com/toolwrapper >/dev/null 2>&1
  { echo "//go:build tools"; echo "package tools"; echo "import ("
    for p in "$@"; do echo "  _ \"$p\""; done; echo ")"; } >tools.go
  go mod edit -require="$mod@$ver"
}

# module_src MODULE VERSION: a writable copy of a module's source.
module_src() {
  local dir
  dir=$(go mod download -json "$1@$2" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
  cp -r "$dir" src && chmod -R u+w src
}

# k8s_ldflags [VERSION]: what a Kubernetes release build stamps (its
# /version), for K8S_VERSION or VERSION.
k8s_ldflags() {
  local v=${1:-$K8S_VERSION}
  local minor=${v#v1.}; minor=${minor%%.*}
  local p=k8s.io/component-base/version
  echo "-s -w -X $p.gitVersion=$v -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
}

# staging_replaces VERSION [STAGING]: points the staging modules of
# k8s.io/kubernetes VERSION (./staging in its go.mod) at the published
# modules of the same release, STAGING (by default v0.X.Y of v1.X.Y).
staging_replaces() {
  local gomod m staging=${2:-v0.${1#v1.}}
  gomod=$(go mod download -json "k8s.io/kubernetes@$1" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
  for m in $(sed -n 's#^\s*\(k8s.io/[^ ]*\) => ./staging/.*#\1#p' "$gomod"); do
    go mod edit -replace="$m=$m@$staging"
  done
}

# keep_module NAME SETUP [DIR]: runs SETUP (a function that makes go.mod,
# go.sum and, for a wrapper, tools.go in the current directory) once per
# NAME, keeps those files in DIR (by default beside the tool directories, the
# parent of OUTDIR), and copies them here: every tool of one graph is built
# from the same module files.
keep_module() {
  local keep
  keep="${3:-$(dirname "$out")}/.module-$1"
  mkdir -p "$keep"
  (
    flock 8
    [[ -s "$keep/go.sum" ]] && exit 0
    "$2"
    [[ -e tools.go ]] && cp tools.go "$keep/"
    # go.sum last: its presence means the module is complete.
    cp go.mod "$keep/" && cp go.sum "$keep/.go.sum" && mv "$keep/.go.sum" "$keep/go.sum"
  ) 8>"$keep.lock"
  cp "$keep/go.mod" "$keep/go.sum" .
  [[ -e "$keep/tools.go" ]] && cp "$keep/tools.go" .
  return 0
}

# OLM v0's module, with envtest's kube-apiserver of K8S_OLDEST_VERSION
# added to its graph: OLM pins that release's libraries (v0.29), so a cold
# build compiles them once for OLM's commands and for the API server. The
# versions it adds leave every package of OLM's commands as it was.
olm_graph() {
  go mod edit -require="k8s.io/kubernetes@$K8S_OLDEST_VERSION"
  staging_replaces "$K8S_OLDEST_VERSION"
  go mod tidy >/dev/null
}
olm_module() {
  module_src github.com/operator-framework/operator-lifecycle-manager "$OLM_VERSION"
  cd src && rm -rf vendor
  mkdir -p hack/podset-operator-tools
  printf '//go:build tools\n\npackage tools\n\nimport _ "k8s.io/kubernetes/cmd/kube-apiserver"\n' >hack/podset-operator-tools/tools.go
  keep_module "olm-$OLM_VERSION-k8s-$K8S_OLDEST_VERSION" olm_graph
}

# OLM v1's commands, with envtest's kube-apiserver of K8S_RESIZE_VERSION and
# the rest of that release's control plane and node (the real node at that
# version: make test-real-node-resize) in the same wrapper: operator-controller already requires that release's
# k8s.io/kubernetes and pins its libraries. Its module carries replace
# directives, which the wrapper copies; two more let the API server build:
# k8s.io/externaljwt of a later patch of the same release (the proxy does
# not serve the one it names), and the otelgrpc its etcd client was written
# for (OLM v1 selects a newer one, which dropped the interceptor it uses).
# No package of OLM v1's commands uses either.
olmv1_pkgs=(github.com/operator-framework/operator-controller/cmd/operator-controller
  github.com/operator-framework/operator-controller/cmd/catalogd
  k8s.io/kubernetes/cmd/{kube-apiserver,kube-controller-manager,kube-scheduler,kubelet,kube-proxy})
olmv1_graph() {
  local mod=github.com/operator-framework/operator-controller src
  wrapper "$mod" "$OPERATOR_CONTROLLER_VERSION" "${olmv1_pkgs[@]}"
  src=$(go mod download -json "$mod@$OPERATOR_CONTROLLER_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
  grep '^replace ' "$src/go.mod" >>go.mod
  go mod edit -replace="k8s.io/externaljwt=k8s.io/externaljwt@v0.33.13" \
    -replace="go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc=go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc@v0.58.0"
  go mod tidy >/dev/null
}
olmv1_wrapper() {
  keep_module "olmv1-$OPERATOR_CONTROLLER_VERSION-k8s-$K8S_RESIZE_VERSION" olmv1_graph
  require_version k8s.io/kubernetes K8S_RESIZE_VERSION "operator-controller $OPERATOR_CONTROLLER_VERSION builds on"
}

# require_version MODULE VAR WHO: fails unless the wrapper module's graph
# resolved MODULE (or its replacement) to the version pinned in VAR, so that
# a shared graph never quietly builds a tool at another version than its pin.
require_version() {
  local got want=${!2}
  got=$(go list -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' "$1")
  if [[ "$got" != "$want" ]]; then
    echo "$3 $1 $got, not $2=$want: make them agree" >&2
    exit 1
  fi
}

# The Kubernetes commands, kwok and opm come from one wrapper module: one
# dependency graph, whose Kubernetes libraries are the release's staging
# modules (K8S_STAGING_VERSION) and whose controller-runtime is the
# project's. kwok v0.8.0 pins the v0.36 libraries and opm v1.60.0 the v0.34
# ones; built against v0.37 they pass the same tests (e2e, OLM), and the Go
# build cache compiles the libraries once for all of them and for the
# project, instead of three times. The wrapper (go.mod and go.sum) is made
# once and kept beside the tool directories.
k8s_graph() {
  wrapper k8s.io/kubernetes "$K8S_VERSION" k8s.io/kubernetes/cmd/{kube-apiserver,kube-controller-manager,kube-scheduler,kubectl,kubelet,kube-proxy} \
    sigs.k8s.io/kwok/cmd/kwok github.com/operator-framework/operator-registry/cmd/opm
  go mod edit -require="sigs.k8s.io/kwok@$KWOK_VERSION" -require="github.com/operator-framework/operator-registry@$OPM_VERSION" \
    -require="sigs.k8s.io/controller-runtime@$CONTROLLER_RUNTIME_VERSION"
  staging_replaces "$K8S_VERSION" "$K8S_STAGING_VERSION"
  go mod tidy >/dev/null
}
k8s_wrapper() {
  keep_module "k8s-$K8S_VERSION-kwok-$KWOK_VERSION-opm-$OPM_VERSION-cr-$CONTROLLER_RUNTIME_VERSION" k8s_graph
}

# controller-gen and crd-ref-docs (docs/api.md) from one wrapper module:
# crd-ref-docs reads the API types with controller-tools' loader and
# markers, here those of CONTROLLER_TOOLS_VERSION, so the Go build cache
# compiles them once for both; a cold build of the two takes as long as one
# of controller-gen alone. docs/api.md is the same as with the controller-tools
# crd-ref-docs pins.
codegen_pkgs=(sigs.k8s.io/controller-tools/cmd/controller-gen github.com/elastic/crd-ref-docs)
codegen_graph() {
  wrapper sigs.k8s.io/controller-tools "$CONTROLLER_TOOLS_VERSION" "${codegen_pkgs[@]}"
  go mod edit -require="github.com/elastic/crd-ref-docs@$CRD_REF_DOCS_VERSION"
  go mod tidy >/dev/null
}
codegen_wrapper() {
  keep_module "codegen-$CONTROLLER_TOOLS_VERSION-crd-ref-docs-$CRD_REF_DOCS_VERSION" codegen_graph "$out"
  require_version sigs.k8s.io/controller-tools CONTROLLER_TOOLS_VERSION "crd-ref-docs $CRD_REF_DOCS_VERSION resolves"
}

case "$tool" in
  controller-gen|crd-ref-docs)
    codegen_wrapper
    # controller-gen stamps its version into the CRDs; built in a wrapper
    # module, it would read "(devel)" from the build information.
    go build -trimpath -ldflags "-s -w -X sigs.k8s.io/controller-tools/pkg/version.version=$CONTROLLER_TOOLS_VERSION" \
      -o "$bin" "$(printf '%s\n' "${codegen_pkgs[@]}" | grep "/$tool\$")" ;;
  kube-apiserver|kube-controller-manager|kube-scheduler|kubectl|kubelet|kube-proxy)
    k8s_wrapper
    go build -trimpath -ldflags "$(k8s_ldflags)" -o "$bin" "k8s.io/kubernetes/cmd/$tool" ;;
  etcd)
    wrapper go.etcd.io/etcd/server/v3 "$ETCD_VERSION" go.etcd.io/etcd/server/v3
    go mod tidy >/dev/null
    go build -trimpath -ldflags "-s -w" -o "$bin" go.etcd.io/etcd/server/v3 ;;
  kwok)
    k8s_wrapper
    go build -trimpath -ldflags "-s -w" -o "$bin" sigs.k8s.io/kwok/cmd/kwok
    # kwok does nothing without Stage objects; keep the ones its module ships.
    src=$(go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
    # Only the Stage documents: the kustomization.yaml next to them is not a
    # kwok configuration. A missing Stage directory fails the build (no more
    # silently empty kwok-stages/).
    rm -rf "$stage/kwok-stages" && mkdir -p "$stage/kwok-stages"
    for d in node/fast node/heartbeat-with-lease pod/fast; do
      for f in "$src/kustomize/stage/$d"/*.yaml; do
        [ "$(basename "$f")" = kustomization.yaml ] || cp "$f" "$stage/kwok-stages/"
      done
    done
    chmod -R u+w "$stage/kwok-stages" ;;
  opm)
    k8s_wrapper
    go build -trimpath -tags=json1,containers_image_openpgp -ldflags "-s -w" -o "$bin" github.com/operator-framework/operator-registry/cmd/opm ;;
  olm|catalog|cpb)
    olm_module
    # cpb copies a bundle image's manifests in OLM's unpack Job.
    pkg=./cmd/$tool; [ "$tool" = cpb ] && pkg=./util/cpb
    go build -mod=mod -trimpath -ldflags "-s -w" -o "$bin" "$pkg"
    mkdir -p "$stage/olm-crds" && cp deploy/chart/crds/*.yaml "$stage/olm-crds/" ;;
  olm-kube-apiserver)
    olm_module
    go build -mod=mod -trimpath -ldflags "$(k8s_ldflags "$K8S_OLDEST_VERSION")" -o "$bin" k8s.io/kubernetes/cmd/kube-apiserver ;;
  operator-sdk|scorecard-test)
    module_src github.com/operator-framework/operator-sdk "$OPERATOR_SDK_VERSION"
    cd src && rm -rf vendor
    # its pinned golang.org/x/tools does not compile with current Go.
    go get golang.org/x/tools@v0.28.0 >/dev/null 2>&1
    pkg=./cmd/operator-sdk; [ "$tool" = scorecard-test ] && pkg=./images/scorecard-test
    # What the release build stamps: Version goes into the bundle's
    # metrics.builder labels, ImageVersion is the scorecard-test image tag the
    # CLI defaults to, KubernetesVersion is the one v1.34 was released with.
    v=github.com/operator-framework/operator-sdk/internal/version
    go build -mod=mod -trimpath -o "$bin" -ldflags "-s -w -X $v.Version=$OPERATOR_SDK_VERSION \
      -X $v.GitVersion=$OPERATOR_SDK_VERSION -X $v.ImageVersion=$OPERATOR_SDK_VERSION -X $v.KubernetesVersion=v1.28.0" "$pkg" ;;
  operator-controller|catalogd|olmv1-kube-*|olmv1-kubelet)
    # OLM v1 (and the Kubernetes commands of its graph, olmv1_wrapper). No
    # -trimpath: these libraries share nothing with the project's build
    # cache anyway, and these commands share theirs when built with the
    # same flags.
    olmv1_wrapper
    pkg=github.com/operator-framework/operator-controller/cmd/$tool ldflags="-s -w"
    if [[ "$tool" == olmv1-kube* ]]; then
      pkg=k8s.io/kubernetes/cmd/${tool#olmv1-} ldflags=$(k8s_ldflags "$K8S_RESIZE_VERSION")
    fi
    go build -tags containers_image_openpgp -ldflags "$ldflags" -o "$bin" "$pkg"
    if [[ "$tool" != olmv1-kube* ]]; then
      # The CRDs of the standard feature set, which the test installs.
      src=$(go list -m -f '{{.Dir}}' github.com/operator-framework/operator-controller)
      mkdir -p "$stage/olmv1-crds"
      cp "$src/config/base/catalogd/crd/standard/olm.operatorframework.io_clustercatalogs.yaml" \
        "$src/config/base/operator-controller/crd/standard/olm.operatorframework.io_clusterextensions.yaml" "$stage/olmv1-crds/"
      chmod -R u+w "$stage/olmv1-crds"
    fi ;;
  prometheus-operator|prometheus-config-reloader)
    # The Prometheus Operator, and the program its Prometheus pods run
    # beside Prometheus to turn the generated configuration into the file
    # Prometheus reads. Its go.mod replaces its two sub-modules
    # (pkg/apis/monitoring, pkg/client) with their directories in the same
    # tree; the wrapper requires them as published at the same tag instead,
    # which is the same source. The checksum database does not know
    # pkg/client at this tag.
    mod=github.com/prometheus-operator/prometheus-operator
    export GONOSUMDB="$GONOSUMDB,$mod/pkg/client"
    pkg=$mod/cmd/operator; [ "$tool" = prometheus-config-reloader ] && pkg=$mod/cmd/$tool
    wrapper "$mod" "$PROMETHEUS_OPERATOR_VERSION" "$pkg"
    go mod edit -require="$mod/pkg/apis/monitoring@$PROMETHEUS_OPERATOR_VERSION" -require="$mod/pkg/client@$PROMETHEUS_OPERATOR_VERSION"
    go mod tidy >/dev/null
    # What the release build stamps: the operator names the config
    # reloader's image by its own version.
    v=github.com/prometheus/common/version
    go build -trimpath -ldflags "-s -w -X $v.Version=${PROMETHEUS_OPERATOR_VERSION#v} -X $v.Revision=$PROMETHEUS_OPERATOR_VERSION -X $v.Branch=release" \
      -o "$bin" "$pkg"
    if [ "$tool" = prometheus-operator ]; then
      # All the CRDs it serves, and the RBAC of its example Prometheus, as
      # its getting-started guide applies them.
      src=$(go list -m -f '{{.Dir}}' "$mod")
      rm -rf "$stage/crds" "$stage/rbac-prometheus" && mkdir -p "$stage/crds" "$stage/rbac-prometheus"
      cp "$src"/example/prometheus-operator-crd/*.yaml "$stage/crds/"
      cp "$src"/example/rbac/prometheus/prometheus-{service-account,cluster-role,cluster-role-binding}.yaml "$stage/rbac-prometheus/"
      chmod -R u+w "$stage/crds" "$stage/rbac-prometheus"
    fi ;;
  prometheus)
    # Prometheus for the configurations the Prometheus Operator generates:
    # their ServiceMonitor jobs use Kubernetes service discovery, which
    # Debian's package is built without. Built as its README says to choose
    # the service discovery plugins: plugins.yml, then `make plugins` (go
    # generate). Of its optional ones only Kubernetes' is kept (file and HTTP
    # discovery are always built in), which also keeps the cloud SDKs out of
    # the build. The 3.x releases are module versions v0.3XX.Y
    # (3.9.1 is v0.309.1). The web UI's assets are not built in; the HTTP
    # API does not need them.
    v=${PROMETHEUS_SERVER_VERSION#v}; major=${v%%.*}; rest=${v#*.}; minor=${rest%%.*}; patch=${rest#*.}
    module_src github.com/prometheus/prometheus "v0.$((major * 100 + minor)).$patch"
    cd src
    echo "- github.com/prometheus/prometheus/discovery/kubernetes" >plugins.yml
    go generate -tags plugins ./plugins
    cv=github.com/prometheus/common/version
    go build -mod=mod -trimpath -ldflags "-s -w -X $cv.Version=$v -X $cv.Revision=$PROMETHEUS_SERVER_VERSION -X $cv.Branch=release" \
      -o "$bin" ./cmd/prometheus ;;
  kustomize|golangci-lint|grpc-health-probe|cyclonedx-gomod|prom-label-proxy)
    # Published modules without replace directives: go install, with the
    # project's build flags (static, -trimpath, no DWARF).
    case "$tool" in
      kustomize) pkg=sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION ;;
      golangci-lint) pkg=github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION ;;
      grpc-health-probe) pkg=github.com/grpc-ecosystem/grpc-health-probe@$GRPC_HEALTH_PROBE_VERSION ;;
      cyclonedx-gomod) pkg=github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$CYCLONEDX_GOMOD_VERSION ;;
      prom-label-proxy) pkg=github.com/prometheus-community/prom-label-proxy@$PROM_LABEL_PROXY_VERSION ;;
    esac
    flags=; [ "$tool" = grpc-health-probe ] && flags="-ldflags=-s -w"
    GOFLAGS="-trimpath $nodwarf" GOBIN=$stage go install ${flags:+"$flags"} "$pkg" ;;
esac
test -x "$bin"
echo "built $tool in $(($(date +%s) - started))s ($(date -u +%H:%M:%S))"

# Into the cache first (a whole entry appears at once, by a rename), then
# into OUTDIR from it.
if [[ -n "$entry" ]]; then
  mkdir -p "$TOOLS_CACHE"
  tmp=$(mktemp -d "$entry.partial-XXXXXX") && chmod 755 "$tmp"
  cp -R "$stage/." "$tmp/"
  if mv -T "$tmp" "$entry" 2>/dev/null; then
    stage=$entry
  else
    rm -rf "$tmp" # another clone cached the same build meanwhile
  fi
fi
install_build "$stage"
