# podset-operator Makefile. `make help` lists the targets.

# The operator image, and the bundle/catalog images OLM installs from.
VERSION ?= 0.5.0
IMAGE_TAG_BASE ?= quay.io/example/podset-operator
IMG ?= $(IMAGE_TAG_BASE):v$(VERSION)
BUNDLE_IMG ?= $(IMAGE_TAG_BASE)-bundle:v$(VERSION)
CATALOG_IMG ?= $(IMAGE_TAG_BASE)-catalog:v$(VERSION)
# The default operand image; OLM passes it to the manager as RELATED_IMAGE_PODSET.
OPERAND_IMG ?= docker.io/library/busybox:1.37.0
# OLM channels of the bundle. OperatorHub's naming convention (which the
# operatorframework good-practices validator enforces with a warning) wants
# channel names starting with candidate, fast or stable.
CHANNELS ?= candidate,stable
DEFAULT_CHANNEL ?= stable
CONTAINER_TOOL ?= docker
# Extra flags for `$(CONTAINER_TOOL) build` in docker-build, e.g. cache mounts.
DOCKER_BUILD_ARGS ?=
# Extra flags for go test in make test (make test-race sets -race).
TEST_FLAGS ?=

SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec
GO ?= go
# One set of build flags for every compile, the project's and the tools':
# static, -trimpath and no DWARF debug information, as the Dockerfile builds
# the manager. The Go build cache keys each compiled package on them, so with
# one set the project's tests, its binaries, the manager image and the
# Kubernetes commands (built against the same library versions,
# hack/build-tool.sh) compile the Kubernetes libraries once; with two sets a
# cold machine compiles them twice. Without DWARF each compile and link takes
# about a sixth less; stack traces and profiles do not use it (they read the
# symbol and line tables, which stay). A debugger builds with flags of its own
# (dlv adds -gcflags=all=-N -l). make test-race turns cgo back on (the race
# detector needs it).
NO_DWARF := -gcflags=all=-dwarf=false
export CGO_ENABLED ?= 0
export GOFLAGS := $(strip $(filter-out -trimpath $(NO_DWARF),$(GOFLAGS)) -trimpath $(NO_DWARF))

# Tool versions. Every tool is built from the Go module proxy into bin/ (git-
# ignored) the first time it is needed and reused afterwards; bump a version
# here and the next run rebuilds it.
K8S_VERSION ?= v1.37.0
K8S_STAGING_VERSION ?= v0.37.0
ETCD_VERSION ?= v3.6.16
KWOK_VERSION ?= v0.8.0
CONTROLLER_TOOLS_VERSION ?= v0.23.0
# crd-ref-docs writes docs/api.md from the API types; built with
# controller-gen, in one module graph (hack/build-tool.sh).
CRD_REF_DOCS_VERSION ?= v0.3.0
# v5.8.3 requires go >= 1.27; v5.8.2 is the newest that builds with Go 1.26.
KUSTOMIZE_VERSION ?= v5.8.2
GOLANGCI_LINT_VERSION ?= v2.15.0
OPERATOR_SDK_VERSION ?= v1.34.1
OPM_VERSION ?= v1.60.0
OLM_VERSION ?= v0.28.0
# The gRPC health probe that OLM's catalog pods run; part of the opm image.
GRPC_HEALTH_PROBE_VERSION ?= v0.4.61
# The SBOM generator of make sbom.
CYCLONEDX_GOMOD_VERSION ?= v1.10.0
# The label enforcer of OpenShift's Thanos querier tenancy port, which the
# e2e canary analyses query through (as the cluster monitoring operator runs it).
PROM_LABEL_PROXY_VERSION ?= v0.11.1
# Prometheus and promtool: Debian's package, at this version.
PROMETHEUS_DEB_VERSION ?= 2.42.0+ds-5+b6
# The Prometheus Operator release whose ServiceMonitor and PrometheusRule
# CRDs (from its Go module) the monitoring envtest and one test-olm run
# install, and whose operator test-olm-real runs (built from the module,
# hack/build-tool.sh). v0.87.0 and v0.86.0 are refused by the module proxy.
PROMETHEUS_OPERATOR_VERSION ?= v0.89.0
# The Prometheus that test-olm-real runs with the configuration the
# Prometheus Operator generates: the release that PROMETHEUS_OPERATOR_VERSION
# deploys by default, built from its Go module (hack/build-tool.sh), since
# Debian's package lacks the Kubernetes service discovery that a
# ServiceMonitor's scrape job uses.
PROMETHEUS_SERVER_VERSION ?= v3.9.1
# OLM v1: operator-controller and catalogd, the same release of one module.
OPERATOR_CONTROLLER_VERSION ?= v1.5.1
# The older API servers of make test-k8s-versions: the oldest release the
# CSV allows (minKubeVersion), and the first that serves pods/resize, whose
# resize rules differ from today's. Each is built in the module graph of an
# OLM release that pins the same Kubernetes libraries (OLM v0: v0.29.3,
# operator-controller: v1.33.2), so a cold run compiles them once for both.
K8S_OLDEST_VERSION ?= v1.29.3
K8S_RESIZE_VERSION ?= v1.33.2
# kwok and opm are built against the project's controller-runtime (hack/build-tool.sh).
CONTROLLER_RUNTIME_VERSION := $(shell sed -n 's#^\s*sigs.k8s.io/controller-runtime \(v[^ ]*\).*#\1#p' go.mod)
export K8S_VERSION K8S_STAGING_VERSION ETCD_VERSION KWOK_VERSION OPERATOR_SDK_VERSION OPM_VERSION OLM_VERSION CONTROLLER_RUNTIME_VERSION OPERATOR_CONTROLLER_VERSION PROMETHEUS_OPERATOR_VERSION PROMETHEUS_SERVER_VERSION
export K8S_OLDEST_VERSION K8S_RESIZE_VERSION
export CONTROLLER_TOOLS_VERSION CRD_REF_DOCS_VERSION KUSTOMIZE_VERSION GOLANGCI_LINT_VERSION GRPC_HEALTH_PROBE_VERSION CYCLONEDX_GOMOD_VERSION PROM_LABEL_PROXY_VERSION
# hack/build-tool.sh keeps every tool it builds in this cache outside the work
# tree, keyed by the tool's pinned versions, the Go toolchain, the platform and
# the build recipe, and bin/ takes it from there: a fresh clone on a machine
# that built the tools once starts warm. TOOLS_CACHE= turns it off.
TOOLS_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/podset-operator/tools
export TOOLS_CACHE

LOCALBIN ?= $(CURDIR)/bin
# kube-apiserver, etcd, kube-controller-manager, kube-scheduler, kubectl, kwok:
# also the KUBEBUILDER_ASSETS folder of envtest.
K8S_BIN ?= $(LOCALBIN)/k8s-$(K8S_VERSION)-etcd-$(ETCD_VERSION)-kwok-$(KWOK_VERSION)
OLM_BIN ?= $(LOCALBIN)/olm-$(OLM_VERSION)-opm-$(OPM_VERSION)-sdk-$(OPERATOR_SDK_VERSION)
# operator-controller, catalogd and their CRDs (olmv1-crds/).
OLMV1_BIN ?= $(LOCALBIN)/olmv1-$(OPERATOR_CONTROLLER_VERSION)
# envtest's folders (KUBEBUILDER_ASSETS) of the older API servers, each
# with the etcd of K8S_BIN.
ENVTEST_OLDEST ?= $(LOCALBIN)/envtest-k8s-$(K8S_OLDEST_VERSION)-olm-$(OLM_VERSION)
ENVTEST_RESIZE ?= $(LOCALBIN)/envtest-k8s-$(K8S_RESIZE_VERSION)-olmv1-$(OPERATOR_CONTROLLER_VERSION)
# The real node's control plane and node at K8S_RESIZE_VERSION (make
# test-real-node-resize), built in the same graph as ENVTEST_RESIZE's API
# server, with the etcd and the kubectl of K8S_BIN.
REAL_NODE_RESIZE ?= $(LOCALBIN)/node-k8s-$(K8S_RESIZE_VERSION)-olmv1-$(OPERATOR_CONTROLLER_VERSION)
REAL_NODE_RESIZE_TOOLS := $(addprefix $(REAL_NODE_RESIZE)/,kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy etcd kubectl)
# The stand-in of OpenShift's pod admission (test/openshift/sccadmission, a
# module of its own pinning OpenShift's SCC admission code) and the
# SecurityContextConstraints CRD of the openshift/api it pins.
OPENSHIFT_BIN ?= $(LOCALBIN)/openshift
PROMETHEUS_BIN ?= $(LOCALBIN)/prometheus-$(subst +,-,$(PROMETHEUS_DEB_VERSION))
PROMTOOL ?= $(PROMETHEUS_BIN)/promtool
MONITORING_CRDS ?= $(LOCALBIN)/prometheus-operator-crds-$(PROMETHEUS_OPERATOR_VERSION)
# The Prometheus Operator (prometheus-operator), its prometheus-config-reloader,
# all its CRDs (crds/), its example Prometheus RBAC (rbac-prometheus/), and
# the Prometheus it runs (prometheus).
PROMETHEUS_OPERATOR_BIN ?= $(LOCALBIN)/prometheus-operator-$(PROMETHEUS_OPERATOR_VERSION)-prometheus-$(PROMETHEUS_SERVER_VERSION)
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
CRD_REF_DOCS ?= $(LOCALBIN)/crd-ref-docs-$(CRD_REF_DOCS_VERSION)
KUSTOMIZE ?= $(LOCALBIN)/kustomize-$(KUSTOMIZE_VERSION)
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
OPERATOR_SDK ?= $(OLM_BIN)/operator-sdk
OPM ?= $(OLM_BIN)/opm
SCORECARD_TEST ?= $(OLM_BIN)/scorecard-test
GRPC_HEALTH_PROBE ?= $(LOCALBIN)/grpc_health_probe-$(GRPC_HEALTH_PROBE_VERSION)
CYCLONEDX_GOMOD ?= $(LOCALBIN)/cyclonedx-gomod-$(CYCLONEDX_GOMOD_VERSION)
PROM_LABEL_PROXY ?= $(LOCALBIN)/prom-label-proxy-$(PROM_LABEL_PROXY_VERSION)
KUBECTL ?= $(K8S_BIN)/kubectl
# The commit of the previous release, v0.4.0: make catalog takes its catalog
# (for the upgrade edge), and test-olm-real and test-olmv1 build its images
# and upgrade from it.
UPGRADE_FROM_REV ?= 89abf3db5f6a688ddaabadd8c054aaf664204119
# The commit of release v0.1.0 (before pod template updates, so its pods
# carry no revision label): the e2e suite builds its manager from git
# history and upgrades from it.
V010_REV ?= ccce42a711a7381de1b59da6c02e92f61e7d45d7
PREVIOUS_VERSION = $(shell git show $(UPGRADE_FROM_REV):Makefile | sed -n 's/^VERSION ?= //p')
# The image archives a real node's registry is filled with (docs/local-cluster.md).
NODE_IMAGES ?= $(LOCALBIN)/node-images

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
# The generators write into a scratch directory, and hack/install-changed.sh
# replaces only the files that changed, each by a rename: a regeneration that
# changes nothing touches no file, so test suites that run side by side (CI)
# never read a file half-written.
manifests: $(CONTROLLER_GEN) $(CRD_REF_DOCS) ## Generate the CRD and RBAC manifests in config/ from the Go markers, and the API reference docs/api.md from the API types.
	@mkdir -p $(LOCALBIN)
	tmp=$$(mktemp -d $(LOCALBIN)/.manifests-XXXXXX) && trap 'rm -rf "$$tmp"' EXIT && \
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd:generateEmbeddedObjectMeta=true paths="./..." output:crd:artifacts:config=$$tmp/crd output:rbac:artifacts:config=$$tmp/rbac && \
	$(GO) run ./hack/crd-trim $$tmp/crd/app.example.com_podsets.yaml && \
	perl -0pi -e 's/^          metadata:\n            type: object\n/          metadata:\n            properties:\n              name:\n                maxLength: 63\n                type: string\n            type: object\n/m' $$tmp/crd/app.example.com_podsets.yaml && \
	grep -q '^                maxLength: 63$$' $$tmp/crd/app.example.com_podsets.yaml && \
	hack/install-changed.sh $$tmp/crd config/crd/bases && hack/install-changed.sh $$tmp/rbac config/rbac && \
	mkdir $$tmp/docs && $(CRD_REF_DOCS) --log-level=ERROR --source-path=./api --config=hack/api-docs/config.yaml --renderer=markdown --output-path=$$tmp/docs/api.md && \
	hack/install-changed.sh $$tmp/docs docs
	@# (The perl line: a PodSet's name is a label value of its pods, at most
	@# 63 characters. A CRD schema may constrain metadata.name, but
	@# controller-gen has no marker for it; a CEL rule on the root reports
	@# the error at "<nil>". The CRD of 0.1.0 had only that rule, and it is
	@# kept beside maxLength: OLM v1 refuses to upgrade a CRD whose
	@# validation rules were removed, so without it 0.1.0 -> 0.2.0 fails.)
	@# (crd-trim: the descriptions of spec.template's pod template fields
	@# are the Kubernetes API reference's; with them the CRD is too large for
	@# client-side apply. hack/crd-trim/main.go says why.)

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate the DeepCopy methods of the API types (api/) and of the operator's slim pods (controllers/slimpod).
	@mkdir -p $(LOCALBIN)
	for pkg in api/v1alpha1 controllers/slimpod; do \
	  tmp=$$(mktemp -d $(LOCALBIN)/.generate-XXXXXX) && \
	  $(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./$$pkg" output:object:dir=$$tmp && \
	  hack/install-changed.sh $$tmp $$pkg; rc=$$?; rm -rf "$$tmp"; [ $$rc = 0 ] || exit $$rc; \
	done

.PHONY: fmt
fmt: ## Run go fmt.
	$(GO) fmt ./...

.PHONY: vet
vet: ## Run go vet.
	$(GO) vet ./...

.PHONY: lint
# Two runs cover every file once: the first with every test tag, the second
# for the files that the realnode tag leaves out (test/olm's !realnode suites).
lint: $(GOLANGCI_LINT) ## Run the pinned golangci-lint over every file: with the test tags, then test/olm without them.
	$(GOLANGCI_LINT) run --build-tags e2e,chaos,realnode,multiarch,argorollouts ./...
	$(GOLANGCI_LINT) run ./test/olm/...

.PHONY: verify-generated
verify-generated: generate manifests metrics-docs monitoring-manifests argocd-manifests ## Fail when generated files (deepcopy, CRD, RBAC, config/prometheus, config/argocd, docs/metrics.md, docs/api.md) differ from what is committed.
	@git diff --exit-code -- api controllers/slimpod config docs/metrics.md docs/api.md || { echo "generated files are stale: run 'make generate manifests metrics-docs monitoring-manifests argocd-manifests' and commit the result" >&2; exit 1; }
	@test -z "$$(git status --porcelain --untracked-files=all -- api controllers/slimpod config docs/metrics.md docs/api.md)" || { git status --short -- api controllers/slimpod config docs/metrics.md docs/api.md; echo "generated files are not committed" >&2; exit 1; }

# Argo CD's health check of the kind: internal/argocd/health.lua (which the
# tests run), as a patch of Argo CD's argocd-cm ConfigMap.
.PHONY: argocd-manifests
argocd-manifests: ## Write config/argocd/argocd-cm-patch.yaml, Argo CD's health check of PodSets, from internal/argocd/health.lua.
	@mkdir -p $(LOCALBIN)
	tmp=$$(mktemp -d $(LOCALBIN)/.argocd-XXXXXX) && trap 'rm -rf "$$tmp"' EXIT && \
	{ echo "# Generated by make argocd-manifests from internal/argocd/health.lua: edit that file."; \
	  echo "# Argo CD's health check of PodSets, as a patch of its argocd-cm ConfigMap:"; \
	  echo "#   kubectl -n argocd patch configmap argocd-cm --patch-file config/argocd/argocd-cm-patch.yaml"; \
	  echo "data:"; \
	  echo "  resource.customizations.health.app.example.com_PodSet: |"; \
	  sed 's/^/    /; s/^    $$//' internal/argocd/health.lua; } > $$tmp/argocd-cm-patch.yaml && \
	hack/install-changed.sh $$tmp config/argocd

# The manager applies its ServiceMonitor and PrometheusRule itself (package
# internal/monitoring embeds them; go:embed cannot reach config/). The
# copies in config/prometheus/ are for `kubectl apply -k config/prometheus`.
.PHONY: monitoring-manifests
monitoring-manifests: ## Copy the ServiceMonitor and PrometheusRule of internal/monitoring/ to config/prometheus/.
	@mkdir -p $(LOCALBIN)
	tmp=$$(mktemp -d $(LOCALBIN)/.monitoring-XXXXXX) && trap 'rm -rf "$$tmp"' EXIT && \
	for f in servicemonitor:monitor prometheusrule:prometheus_rule; do \
	  src=internal/monitoring/$${f%%:*}.yaml; \
	  { echo "# Generated by make monitoring-manifests from $$src: edit that file."; cat $$src; } > $$tmp/$${f#*:}.yaml; \
	done && hack/install-changed.sh $$tmp config/prometheus

.PHONY: metrics-docs
metrics-docs: ## Regenerate docs/metrics.md, the table of the operator's metrics, from controllers/metrics/metrics.go.
	$(GO) run ./hack/metrics-docs > docs/metrics.md

.PHONY: test-alerts
test-alerts: $(PROMTOOL) ## Check the alerting rules (internal/monitoring/prometheusrule.yaml, which the manager applies) and run their unit tests (test/prometheus/) with promtool.
	rm -rf $(LOCALBIN)/alerts && mkdir -p $(LOCALBIN)/alerts
	$(GO) run ./hack/prometheus-rules internal/monitoring/prometheusrule.yaml > $(LOCALBIN)/alerts/rules.yaml
	cp test/prometheus/*_test.yaml $(LOCALBIN)/alerts/
	$(PROMTOOL) check rules $(LOCALBIN)/alerts/rules.yaml
	cd $(LOCALBIN)/alerts && $(PROMTOOL) test rules *_test.yaml

.PHONY: test
test: manifests generate fmt vet envtest-assets $(MONITORING_CRDS) ## Run the unit tests and the envtest integration suites (real kube-apiserver and etcd) of the operator and the kubectl plugin.
	KUBEBUILDER_ASSETS="$(K8S_BIN)" MONITORING_CRDS="$(MONITORING_CRDS)" $(GO) test $(TEST_FLAGS) -count=1 ./api/... ./controllers/... ./internal/... ./cmd/... ./test/bundle/... ./test/bench/... ./test/loadclient/... ./test/docs/... ./test/images/canary-app/... . -coverprofile cover.out

# The envtest suites again on the oldest API server the CSV allows, and the
# in-place suite on the first with pods/resize: each suite reads what its
# server serves and allows, as the manager does, and expects that.
.PHONY: test-k8s-versions test-k8s-oldest test-k8s-resize
test-k8s-versions: test-k8s-oldest test-k8s-resize ## Run the envtest suites on Kubernetes K8S_OLDEST_VERSION, and the in-place ones on K8S_RESIZE_VERSION.

test-k8s-oldest: manifests generate $(ENVTEST_OLDEST)/kube-apiserver $(ENVTEST_OLDEST)/etcd $(MONITORING_CRDS) ## Run the envtest suites on Kubernetes K8S_OLDEST_VERSION, the CSV's minKubeVersion.
	$(ENVTEST_OLDEST)/kube-apiserver --version
	KUBEBUILDER_ASSETS="$(ENVTEST_OLDEST)" MONITORING_CRDS="$(MONITORING_CRDS)" $(GO) test -count=1 ./controllers/ ./internal/... ./cmd/... .

test-k8s-resize: manifests generate $(ENVTEST_RESIZE)/kube-apiserver $(ENVTEST_RESIZE)/etcd ## Run the in-place envtests on Kubernetes K8S_RESIZE_VERSION, the first with pods/resize.
	$(ENVTEST_RESIZE)/kube-apiserver --version
	KUBEBUILDER_ASSETS="$(ENVTEST_RESIZE)" $(GO) test -count=1 -run 'InPlace|Resize|Discover|Policy' ./controllers/ ./internal/admission/ ./internal/resizerules/

$(ENVTEST_OLDEST)/kube-apiserver:
	hack/build-tool.sh olm-kube-apiserver $(ENVTEST_OLDEST) kube-apiserver
$(ENVTEST_RESIZE)/kube-apiserver:
	hack/build-tool.sh olmv1-kube-apiserver $(ENVTEST_RESIZE) kube-apiserver
$(OPENSHIFT_BIN)/sccadmission: hack/build-openshift-admission.sh $(wildcard test/openshift/sccadmission/*)
	hack/build-openshift-admission.sh $(OPENSHIFT_BIN)
$(ENVTEST_OLDEST)/etcd $(ENVTEST_RESIZE)/etcd: $(K8S_BIN)/etcd
	mkdir -p $(@D) && ln -f $< $@

# The race detector compiles every dependency a second time, instrumented:
# about 6 minutes on a cold 2-core machine, which CI's time budget does not
# have room for. Run it before merging concurrency changes.
.PHONY: test-race
test-race: ## The same tests as make test, with the race detector.
	$(MAKE) test TEST_FLAGS=-race CGO_ENABLED=1

##@ Build

.PHONY: build
build: manifests generate fmt vet ## Build the manager into bin/manager, the kubectl plugin into bin/kubectl-podset, and the canary scenarios' web server into bin/canary-app.
	$(GO) build -o $(LOCALBIN)/manager .
	$(GO) build -o $(LOCALBIN)/kubectl-podset ./cmd/kubectl-podset
	$(GO) build -o $(LOCALBIN)/canary-app ./test/images/canary-app

.PHONY: run
run: manifests generate fmt vet ## Run the operator on this machine against the cluster of your current kubeconfig.
	$(GO) run . --health-probe-bind-address=:8081

.PHONY: docker-build
docker-build: ## Build the operator image (needs a container engine; DOCKER_BUILD_ARGS adds flags).
	$(CONTAINER_TOOL) build --build-arg VERSION=$(VERSION) $(DOCKER_BUILD_ARGS) -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push the operator image.
	$(CONTAINER_TOOL) push $(IMG)

# The platforms of the manager image that docker-buildx builds; the CSV's
# operatorframework.io/arch.* labels and the manager's node affinity name
# exactly these (test/bundle holds the three to each other).
PLATFORMS ?= linux/amd64,linux/arm64,linux/s390x,linux/ppc64le

.PHONY: sbom
sbom: $(CYCLONEDX_GOMOD) ## For each platform of the pushed image IMG: a CycloneDX SBOM of its /manager, from the module list Go embeds in the binary, pushed beside the image as an OCI artifact that refers to it (see docs/reference.md).
	$(GO) run ./hack/sbom -cyclonedx-gomod $(CYCLONEDX_GOMOD) -version v$(VERSION) $(IMG)

.PHONY: docker-buildx
docker-buildx: ## Build the operator image for every platform of PLATFORMS and push it as one manifest list (docker buildx, or buildah with CONTAINER_TOOL=buildah). The Dockerfile cross-compiles: no emulator needed.
ifeq ($(notdir $(CONTAINER_TOOL)),buildah)
	@# A list or an image of that name (make docker-build's) would be added to.
	-buildah manifest rm $(IMG) >/dev/null 2>&1 || buildah rmi $(IMG) >/dev/null 2>&1
	# BUILDPLATFORM named: buildah 1.28 (Debian 12) sets it to the target
	# platform when --platform is given, which would run the builder stage
	# under emulation (or fail to find its base image).
	buildah build --platform=$(PLATFORMS) --build-arg BUILDPLATFORM=linux/$(shell $(GO) env GOARCH) --build-arg VERSION=$(VERSION) --manifest $(IMG) $(DOCKER_BUILD_ARGS) .
	buildah manifest push --all $(IMG) docker://$(IMG)
else
	- $(CONTAINER_TOOL) buildx create --name podset-operator-builder
	$(CONTAINER_TOOL) buildx build --builder podset-operator-builder --push --platform=$(PLATFORMS) --build-arg VERSION=$(VERSION) --tag $(IMG) $(DOCKER_BUILD_ARGS) . ; \
	  rc=$$?; $(CONTAINER_TOOL) buildx rm podset-operator-builder; exit $$rc
endif

##@ Deployment

ifndef ignore-not-found
  ignore-not-found = false
endif

.PHONY: install
install: manifests $(KUSTOMIZE) ## Install the CRD into the cluster of your current kubeconfig.
	$(KUSTOMIZE) build config/crd | kubectl apply --server-side --force-conflicts -f -

.PHONY: uninstall
uninstall: manifests $(KUSTOMIZE) ## Remove the CRD (and so every PodSet) from the cluster.
	$(KUSTOMIZE) build config/crd | kubectl delete --ignore-not-found=$(ignore-not-found) -f -

.PHONY: deploy
deploy: manifests $(KUSTOMIZE) ## Deploy the operator (image IMG) into the cluster.
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	$(KUSTOMIZE) build config/default | kubectl apply --server-side --force-conflicts -f -

.PHONY: undeploy
undeploy: $(KUSTOMIZE) ## Remove the deployed operator from the cluster.
	$(KUSTOMIZE) build config/default | kubectl delete --ignore-not-found=$(ignore-not-found) -f -

##@ OLM bundle and catalog

# Every release before VERSION, as VERSION=COMMIT: the OperatorHub submission
# (make operatorhub) holds each one's bundle/ beside the work tree's.
RELEASES ?= 0.1.0=ccce42a711a7381de1b59da6c02e92f61e7d45d7 0.2.0=eba0fbb8e7a8b82ffec40b5351bf705b85f093b7 \
  0.3.0=e087d9aae4ca19ee3a785153b4afadc7c1d8ca90 0.4.0=89abf3db5f6a688ddaabadd8c054aaf664204119
OPERATORHUB_DIR ?= $(LOCALBIN)/operatorhub
# The OpenShift releases the bundle supports (com.redhat.openshift.versions):
# from OpenShift 4.16, whose Kubernetes (1.29) is the CSV's minKubeVersion.
OPENSHIFT_VERSIONS ?= v4.16
MIN_KUBE_VERSION = $(shell sed -n 's/^  minKubeVersion: //p' $(BASE_CSV))
BUNDLE_METADATA_OPTS ?= --channels=$(CHANNELS) --default-channel=$(DEFAULT_CHANNEL)
# USE_IMAGE_DIGESTS=true makes the bundle of a release, for clusters that
# mirror their images: every image (the manager's, the operand's) pinned by
# the digest its registry serves for IMG and OPERAND_IMG at generation time,
# and listed in relatedImages, which mirroring tools copy. It needs those
# images pushed. The committed bundle/ keeps tags: `make bundle` stays
# reproducible and needs no registry.
USE_IMAGE_DIGESTS ?= false
BUNDLE_GEN_FLAGS ?= -q --overwrite --version $(VERSION) $(BUNDLE_METADATA_OPTS) --use-image-digests=$(USE_IMAGE_DIGESTS)
# The CSV base is maintained by hand, descriptors included (test/bundle checks
# that every API field has one). `operator-sdk generate kustomize manifests` is
# deliberately not run: v1.34's embedded controller-tools cannot parse the
# API's XValidation fieldPath markers, and it would replace the hand-written
# descriptors with ones derived from operator-sdk markers the API does not use.
BASE_CSV := config/manifests/bases/podset-operator.clusterserviceversion.yaml
BUNDLE_CSV := bundle/manifests/podset-operator.clusterserviceversion.yaml
# The opm image the catalog image serves from, pinned to the opm we render with.
OPM_IMG ?= quay.io/operator-framework/opm:$(OPM_VERSION)

.PHONY: olmv1-tools
olmv1-tools: $(OLMV1_BIN)/operator-controller $(OLMV1_BIN)/catalogd ## Build OLM v1's operator-controller and catalogd (and copy their CRDs).

$(OLMV1_BIN)/%:
	hack/build-tool.sh $* $(OLMV1_BIN)

.PHONY: olm-tools
olm-tools: $(OPERATOR_SDK) $(OPM) $(SCORECARD_TEST) $(OLM_BIN)/olm $(OLM_BIN)/catalog $(OLM_BIN)/cpb ## Build operator-sdk, opm, scorecard-test, and OLM's olm and catalog operators and cpb (its unpack Job's copier).

.PHONY: bundle
bundle: manifests $(KUSTOMIZE) $(OPERATOR_SDK) ## Regenerate bundle/ and bundle.Dockerfile from config/ and validate them.
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	sed -i 's,^\( *\(value\|image\): \).* # operand-image$$,\1$(OPERAND_IMG) # operand-image,' config/manager/manager.yaml config/samples/app_v1alpha1_podset.yaml
	@# --overwrite rewrites files but never removes one, so start from nothing:
	@# a manifest dropped from config/ must disappear from the bundle too.
	rm -rf bundle
	@# The console shows containerImage as the operator's image: IMG (pinned
	@# with the rest under USE_IMAGE_DIGESTS).
	$(KUSTOMIZE) build config/manifests | sed 's|^    containerImage: .*|    containerImage: $(IMG)|' | $(OPERATOR_SDK) generate bundle $(BUNDLE_GEN_FLAGS)
	@# operator-sdk stamps createdAt with the current time; put back the base's
	@# pinned value so that regenerating an unchanged bundle changes nothing.
	created=$$(sed -n 's/^    createdAt: //p' $(BASE_CSV)); test -n "$$created"; \
	  sed -i "s/^    createdAt: .*/    createdAt: $$created/" $(BUNDLE_CSV)
	@# OpenShift's catalogs take the OpenShift releases a bundle supports
	@# from this annotation and label: from the one whose Kubernetes is the
	@# CSV's minKubeVersion on (test/bundle holds the two together).
	printf '\n  # The OpenShift releases the bundle supports: OpenShift %s (Kubernetes %s, the minKubeVersion) and later.\n  com.redhat.openshift.versions: "%s"\n' \
	  '$(OPENSHIFT_VERSIONS:v%=%)' '$(MIN_KUBE_VERSION)' '$(OPENSHIFT_VERSIONS)' >> bundle/metadata/annotations.yaml
	sed -i 's|^# Copy files to locations specified by labels.|# The OpenShift releases the bundle supports.\nLABEL com.redhat.openshift.versions="$(OPENSHIFT_VERSIONS)"\n\n&|' bundle.Dockerfile
	@# Red Hat's certification looks for the license in /licenses.
	printf 'COPY LICENSE /licenses/LICENSE\n' >> bundle.Dockerfile
ifeq ($(USE_IMAGE_DIGESTS),true)
	@# Every image pinned and listed: the bundle installs from a mirror.
	sed -i 's|^\(    features.operators.openshift.io/disconnected: \).*|\1"true"|' $(BUNDLE_CSV)
endif
	@# The validators only warn about most problems; treat warnings as errors.
	out=$$($(OPERATOR_SDK) bundle validate ./bundle --select-optional suite=operatorframework 2>&1); \
	  echo "$$out"; ! echo "$$out" | grep -E 'level=(warning|error)'

.PHONY: operatorhub
operatorhub: ## Write the OperatorHub submission (community-operators layout: every release's bundle and ci.yaml) to OPERATORHUB_DIR.
	hack/operatorhub-tree.sh $(OPERATORHUB_DIR) "$(RELEASES)" $(VERSION)

.PHONY: verify-operatorhub
verify-operatorhub: operatorhub $(OPERATOR_SDK) ## Validate the OperatorHub submission as the community-operators pipelines do: operator-sdk's operatorframework suite, operatorhub, community and good-practices validators on every version, at the minKubeVersion.
	hack/verify-operatorhub.sh $(OPERATOR_SDK) $(OPERATORHUB_DIR)/operators/podset-operator $(MIN_KUBE_VERSION)

.PHONY: verify-bundle
verify-bundle: bundle catalog ## Fail when bundle/ or catalog/ differ from what make bundle and make catalog generate.
	@# git status, not git diff: a newly generated file is a difference too.
	@test -z "$$(git status --porcelain -- bundle bundle.Dockerfile catalog catalog.Dockerfile config)" || { \
	  git status --short -- bundle bundle.Dockerfile catalog catalog.Dockerfile config; \
	  echo "bundle/ or catalog/ is stale: run 'make bundle catalog' and commit the result" >&2; exit 1; }

.PHONY: bundle-build
bundle-build: ## Build the bundle image BUNDLE_IMG (needs a container engine).
	$(CONTAINER_TOOL) build -f bundle.Dockerfile -t $(BUNDLE_IMG) .

.PHONY: test-manager-image
test-manager-image: ## Build the manager image with docker-build and buildah over stand-in base images (see docs/local-cluster.md) and check it: user 65532, static /manager that starts, /licenses/LICENSE and preflight's labels, nothing else. Saves it for the real node.
	OUT=$(NODE_IMAGES) hack/test-manager-image.sh $(IMG)

.PHONY: test-bundle-image
test-bundle-image: ## Build the bundle image with bundle-build and buildah (installed from Debian when missing) and check it holds exactly bundle/ and /licenses/LICENSE. Saves it for the real node.
	OUT=$(NODE_IMAGES) hack/test-bundle-image.sh $(BUNDLE_IMG)

# The two images above as archives for the real node's registry: the real-node
# targets have the tests above make them again only when their sources are
# newer (after changing IMG or BUNDLE_IMG, run the tests above).
MANAGER_SOURCES := Dockerfile .dockerignore go.mod go.sum main.go $(shell find api controllers internal -name '*.go' -not -name '*_test.go') $(wildcard internal/*/*.yaml)
$(NODE_IMAGES)/manager.tar: $(MANAGER_SOURCES)
	OUT=$(NODE_IMAGES) hack/test-manager-image.sh $(IMG)
$(NODE_IMAGES)/bundle.tar: bundle.Dockerfile bundle.Dockerfile.dockerignore $(shell find bundle -type f)
	OUT=$(NODE_IMAGES) hack/test-bundle-image.sh $(BUNDLE_IMG)

.PHONY: bundle-push
bundle-push: ## Push the bundle image.
	$(CONTAINER_TOOL) push $(BUNDLE_IMG)

# Extra flags for operator-sdk scorecard, e.g. --namespace, --output=json, or
# --untar-image for a cluster that cannot pull the default untar image.
SCORECARD_FLAGS ?=

.PHONY: scorecard
scorecard: $(OPERATOR_SDK) ## Run the scorecard tests in the cluster of your current kubeconfig (it runs them as pods; SCORECARD_FLAGS adds flags).
	$(OPERATOR_SDK) scorecard ./bundle --wait-time=5m $(SCORECARD_FLAGS)

.PHONY: scorecard-local
scorecard-local: $(SCORECARD_TEST) ## Run the same scorecard tests over bundle/ without a cluster (needs root).
	hack/scorecard-local.sh $(SCORECARD_TEST) bundle

.PHONY: catalog
catalog: $(OPM) ## Render catalog/ (file-based catalog) from bundle/ and the previous release's catalog (git history), with the upgrade edge, and validate it.
	mkdir -p $(LOCALBIN) && git show $(UPGRADE_FROM_REV):catalog/podset-operator/catalog.yaml > $(LOCALBIN)/previous-catalog.yaml
	hack/render-catalog.sh $(OPM) bundle catalog podset-operator $(BUNDLE_IMG) $(CHANNELS) $(DEFAULT_CHANNEL) config/manifests/icon.svg $(LOCALBIN)/previous-catalog.yaml
	$(OPM) validate catalog
	rm -f catalog.Dockerfile
	$(OPM) generate dockerfile catalog --base-image=$(OPM_IMG) --builder-image=$(OPM_IMG)

.PHONY: catalog-build
catalog-build: ## Build the catalog image CATALOG_IMG (needs a container engine).
	$(CONTAINER_TOOL) build -f catalog.Dockerfile -t $(CATALOG_IMG) .

.PHONY: test-catalog-image
test-catalog-image: $(NODE_IMAGES)/opm.tar ## Build the catalog image with catalog-build and buildah over a stand-in of its opm base image and check it: /configs is catalog/, the serve cache, the catalog label. Saves it for the real node.
	OPM_ARCHIVE=$(NODE_IMAGES)/opm.tar OUT=$(NODE_IMAGES) hack/test-catalog-image.sh $(CATALOG_IMG)

$(NODE_IMAGES)/catalog.tar: $(NODE_IMAGES)/opm.tar catalog.Dockerfile catalog.Dockerfile.dockerignore $(shell find catalog -type f)
	OPM_ARCHIVE=$(NODE_IMAGES)/opm.tar OUT=$(NODE_IMAGES) hack/test-catalog-image.sh $(CATALOG_IMG)

.PHONY: catalog-push
catalog-push: ## Push the catalog image.
	$(CONTAINER_TOOL) push $(CATALOG_IMG)

.PHONY: test-olm
test-olm: cluster-tools olm-tools build $(MONITORING_CRDS) $(OPENSHIFT_BIN)/sccadmission ## Install the operator through real OLM on a local cluster without the Prometheus Operator's CRDs, run it with OLM's ServiceAccount, uninstall; once more under OpenShift's SCC admission (its stand-in), and one install mode again with the CRDs.
	K8S_BIN="$(K8S_BIN)" OLM_BIN="$(OLM_BIN)" MANAGER_BIN="$(LOCALBIN)/manager" MONITORING_CRDS="$(MONITORING_CRDS)" SCC_ADMISSION_BIN="$(OPENSHIFT_BIN)/sccadmission" \
	  $(GO) test ./test/olm/ -count=1 -v -timeout=30m -run '^TestOLM$$'

.PHONY: test-olmv1
test-olmv1: cluster-tools real-node-tools olmv1-tools $(NODE_IMAGES)/opm.tar $(NODE_IMAGES)/manager.tar $(NODE_IMAGES)/bundle-$(UPGRADE_FROM_REV).tar ## On a real node (needs root), through OLM v1 (catalogd and operator-controller as processes): images pushed with docker-push, bundle-push and catalog-push; a ClusterCatalog of the catalog image, a ClusterExtension installing the previous release (the node pulls and runs its manager, which runs a PodSet), upgrading along the catalog's edge with zero pod churn, then deleted with its CRD and PodSets.
	K8S_BIN="$(K8S_BIN)" OLMV1_BIN="$(OLMV1_BIN)" NODE_IMAGES="$(NODE_IMAGES)" VERSION="$(VERSION)" PREVIOUS_VERSION="$(PREVIOUS_VERSION)" \
	  $(GO) test -tags realnode ./test/olm/ -count=1 -v -timeout=20m -run '^TestOLMv1$$'

.PHONY: test-olm-real
test-olm-real: cluster-tools real-node-tools olm-tools $(NODE_IMAGES)/opm.tar $(NODE_IMAGES)/olm.tar $(NODE_IMAGES)/manager.tar $(NODE_IMAGES)/bundle-$(UPGRADE_FROM_REV).tar ## On a real node (needs root): the manager, bundle and catalog images pushed with docker-push, bundle-build bundle-push and catalog-build catalog-push to the node's registry; operator-sdk run bundle from the node's registry (OLM's unpack Job really running), the Prometheus Operator installed afterwards and a Prometheus running its generated configuration, scraping and alerting through the manager's ServiceMonitor and PrometheusRule, and cleanup; run bundle-upgrade from the previous release, and a Subscription upgrading through the catalog image's edge, with zero pod churn.
	K8S_BIN="$(K8S_BIN)" OLM_BIN="$(OLM_BIN)" NODE_IMAGES="$(NODE_IMAGES)" VERSION="$(VERSION)" PREVIOUS_VERSION="$(PREVIOUS_VERSION)" \
	  PROMETHEUS_OPERATOR_BIN="$(PROMETHEUS_OPERATOR_BIN)" \
	  $(GO) test -tags realnode ./test/olm/ -count=1 -v -timeout=30m -run '^(TestRunBundle|TestBundleUpgrade|TestCatalogUpgrade)$$'

##@ Local cluster and end-to-end


# A control plane on loopback (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler) with kwok nodes: see docs/local-cluster.md.

# NODE=real runs one real node (kubelet + containerd, needs root) instead of
# the kwok nodes: see docs/local-cluster.md, "A real node".
NODE ?= kwok
ifeq ($(NODE),real)
NODE_TOOLS = real-node-tools
NODE_FLAGS = --real-node --node-images $(NODE_IMAGES)
endif

.PHONY: local-cluster
local-cluster: cluster-tools $(NODE_TOOLS) ## Start a local cluster with kwok nodes (NODE=real: one real node), print its KUBECONFIG; Ctrl-C stops it.
	$(GO) build -o $(LOCALBIN)/localcluster ./hack/localcluster
	$(LOCALBIN)/localcluster --bin-dir $(K8S_BIN) $(NODE_FLAGS)

.PHONY: local-cluster-cleanup
local-cluster-cleanup: ## Remove what a crashed real node left on this host (bridge, firewall rules, cgroups, mounts, processes).
	$(GO) build -o $(LOCALBIN)/localcluster ./hack/localcluster
	$(LOCALBIN)/localcluster --cleanup

.PHONY: demo
demo: cluster-tools build $(NODE_TOOLS) ## Run the operator on a local cluster (NODE=real: on a real node), apply the sample, show the result; Ctrl-C stops everything.
	$(GO) build -o $(LOCALBIN)/demo ./hack/demo
	$(LOCALBIN)/demo --bin-dir $(K8S_BIN) --manager $(LOCALBIN)/manager $(NODE_FLAGS)

.PHONY: test-e2e
test-e2e: cluster-tools build $(KUSTOMIZE) $(PROMTOOL) $(PROM_LABEL_PROXY) $(OPENSHIFT_BIN)/sccadmission ## Run the end-to-end suite: local cluster, operator as a separate process with its RBAC, a real Prometheus scraping it, and OpenShift's SCC admission (its stand-in) in front of some namespaces.
	$(GO) vet -tags e2e ./test/localcluster/ ./test/e2e/
	K8S_BIN=$(K8S_BIN) MANAGER_BIN=$(LOCALBIN)/manager PLUGIN_BIN=$(LOCALBIN)/kubectl-podset KUSTOMIZE=$(KUSTOMIZE) \
	  SCC_ADMISSION_BIN=$(OPENSHIFT_BIN)/sccadmission \
	  PROMETHEUS=$(PROMETHEUS_BIN)/prometheus CANARY_APP=$(LOCALBIN)/canary-app PROM_LABEL_PROXY=$(PROM_LABEL_PROXY) \
	  V010_REV=$(V010_REV) \
	  $(GO) test -tags e2e -p 1 -count=1 -v -timeout 40m ./test/localcluster/ ./test/e2e/

# The platforms test-multiarch builds: .ci/run narrows it to this machine's
# and arm64, the one it runs under emulation (each more platform costs a
# cold CI run about three minutes of compiling).
MULTIARCH_PLATFORMS ?= $(PLATFORMS)

.PHONY: test-multiarch
test-multiarch: cluster-tools $(OPERATOR_SDK) $(KUSTOMIZE) $(CYCLONEDX_GOMOD) $(NODE_IMAGES)/busybox.tar ## Build the manager for MULTIARCH_PLATFORMS with docker-buildx and buildah, push the manifest list to a local registry, check each platform's image and /manager, run operator-sdk's multiarch validator (podman) over the bundle, and run the arm64 /manager under qemu-aarch64-static as the operator of a local cluster.
	bash -c 'source hack/lib/debian.sh && use_buildah && apt_install docker-registry qemu-user-static podman'
	K8S_BIN=$(K8S_BIN) OPERATOR_SDK=$(OPERATOR_SDK) KUSTOMIZE=$(KUSTOMIZE) PLATFORMS=$(MULTIARCH_PLATFORMS) VERSION=$(VERSION) \
	  OPERAND_ARCHIVE=$(NODE_IMAGES)/busybox.tar \
	  $(GO) test -tags multiarch ./test/multiarch/ -count=1 -v -timeout=30m

.PHONY: test-chaos
test-chaos: cluster-tools build $(KUSTOMIZE) ## Run the fault matrix: two leader-elected replicas, a PodSet scaling and rolling through each fault (about 13 min; CI runs it as a lane of its own, beside the others).
	K8S_BIN=$(K8S_BIN) MANAGER_BIN=$(LOCALBIN)/manager PLUGIN_BIN=$(LOCALBIN)/kubectl-podset KUSTOMIZE=$(KUSTOMIZE) \
	  V010_REV=$(V010_REV) \
	  $(GO) test -tags e2e,chaos -p 1 -count=1 -v -timeout 60m -run TestChaos ./test/e2e/

.PHONY: test-real-node
# REAL_NODE_RUN picks the real-node suite's tests (go test -run), for example
# REAL_NODE_RUN=TestRealNode/InPlace.
REAL_NODE_RUN ?= TestRealNode
REAL_NODE_TEST = MANAGER_BIN=$(LOCALBIN)/manager PLUGIN_BIN=$(LOCALBIN)/kubectl-podset KUSTOMIZE=$(KUSTOMIZE) \
	  NODE_IMAGES=$(NODE_IMAGES) IMG=$(IMG) V010_REV=$(V010_REV) SCC_ADMISSION_BIN=$(OPENSHIFT_BIN)/sccadmission \
	  PROMETHEUS=$(PROMETHEUS_OPERATOR_BIN)/prometheus \
	  $(GO) test -tags e2e,realnode -p 1 -parallel 4 -count=1 -v
test-real-node: cluster-tools real-node-tools build $(KUSTOMIZE) $(OPERATOR_SDK) $(NODE_IMAGES)/scorecard-test.tar $(NODE_IMAGES)/manager.tar $(NODE_IMAGES)/canary-app.tar $(OPENSHIFT_BIN)/sccadmission ## On a real node (kubelet, containerd, kube-proxy, a registry; needs root): the manager image (docker-build) deployed by config/default, restricted operand pods really running, logs, exec, crash loops, deletion, the network guard, make scorecard, canary analyses by a real Prometheus (PROMETHEUS, which the suite builds beside its first tests when missing); the host restored after.
	$(GO) vet -tags e2e,realnode ./test/e2e/ ./test/localcluster/
	$(GO) build -o $(LOCALBIN)/localcluster ./hack/localcluster
	K8S_BIN=$(K8S_BIN) $(REAL_NODE_TEST) -timeout 35m -run '$(REAL_NODE_RUN)' ./test/e2e/
	K8S_BIN=$(K8S_BIN) NODE_IMAGES=$(NODE_IMAGES) LOCALCLUSTER_BIN=$(LOCALBIN)/localcluster \
	  $(GO) test -tags e2e,realnode -count=1 -v -timeout 10m -run 'TestRealNodeCrashIsCleanedUp|TestCleanupRefusesWhileARealNodeRuns' ./test/localcluster/

# Argo Rollouts' controller, for the side-by-side run of the canary scenarios
# (not part of CI: it is a comparison, built with a newer Go toolchain).
ARGO_ROLLOUTS_VERSION ?= v1.10.2
ARGO_ROLLOUTS_BIN ?= $(LOCALBIN)/argo-rollouts-$(ARGO_ROLLOUTS_VERSION)
$(ARGO_ROLLOUTS_BIN)/rollouts-controller: hack/build-argo-rollouts.sh
	ARGO_ROLLOUTS_VERSION=$(ARGO_ROLLOUTS_VERSION) hack/build-argo-rollouts.sh $(ARGO_ROLLOUTS_BIN)

# ARGO_RUN picks the tests (go test -run): both sides by default.
ARGO_RUN ?= ^(TestRealNode|TestArgoRolloutsSideBySide)$$/^CanaryAnalysis$$
.PHONY: compare-argo-rollouts
compare-argo-rollouts: cluster-tools real-node-tools build $(KUSTOMIZE) $(NODE_IMAGES)/manager.tar $(NODE_IMAGES)/canary-app.tar $(OPENSHIFT_BIN)/sccadmission $(ARGO_ROLLOUTS_BIN)/rollouts-controller ## On a real node (needs root): the canary scenarios of TestRealNode/CanaryAnalysis for a PodSet, then for an Argo Rollouts Rollout with the same pods, steps and query (ARGO_ROLLOUTS_VERSION, built from its module); prints both tables.
	K8S_BIN=$(K8S_BIN) ARGO_ROLLOUTS_BIN=$(ARGO_ROLLOUTS_BIN) $(REAL_NODE_TEST) -tags e2e,realnode,argorollouts -timeout 30m \
	  -run '$(ARGO_RUN)' ./test/e2e/

.PHONY: test-real-node-resize
test-real-node-resize: cluster-tools real-node-tools build $(KUSTOMIZE) $(OPERATOR_SDK) $(NODE_IMAGES)/scorecard-test.tar $(NODE_IMAGES)/manager.tar $(REAL_NODE_RESIZE_TOOLS) ## The real-node suite's in-place scenarios on Kubernetes K8S_RESIZE_VERSION (API server, controller-manager, scheduler, kubelet and kube-proxy of that release; needs root): resizes follow that release's rules.
	$(REAL_NODE_RESIZE)/kubelet --version
	K8S_BIN=$(REAL_NODE_RESIZE) $(REAL_NODE_TEST) -timeout 20m -run 'TestRealNode/InPlace' ./test/e2e/

$(REAL_NODE_RESIZE)/kube-apiserver: $(ENVTEST_RESIZE)/kube-apiserver
	mkdir -p $(@D) && ln -f $< $@
$(REAL_NODE_RESIZE)/etcd: $(K8S_BIN)/etcd
	mkdir -p $(@D) && ln -f $< $@
$(REAL_NODE_RESIZE)/kubectl: $(K8S_BIN)/kubectl
	mkdir -p $(@D) && ln -f $< $@
$(REAL_NODE_RESIZE)/%:
	hack/build-tool.sh olmv1-$* $(REAL_NODE_RESIZE) $*

.PHONY: test-zero-downtime
test-zero-downtime: ## The real-node suite's zero-downtime scenarios alone (part of test-real-node; needs root): a PodSet and a Deployment behind a ClusterIP under 50 requests a second while they roll, update in place, scale down, roll back, lose their leader and resize; prints the table of docs/benchmarks.md.
	$(MAKE) test-real-node REAL_NODE_RUN='TestRealNode/ZeroDowntime'

##@ Benchmarks

# test/bench: PodSets against kube-controller-manager's ReplicaSet controller
# on a local cluster, and a client creating the same pods directly. See
# docs/benchmarks.md. BENCH_FLAGS adds flags, e.g. -shapes 10x100 -runs 1.
# BENCH_TEMPLATE is the pods' template (-template): sample, config/samples'
# web server (a port, a readiness probe, preStop, a volume, resources), for
# the PodSets and, rendered as the operator renders it, for the ReplicaSets,
# Deployments and the direct client; empty for the short form's pod.
BENCH_FLAGS ?=
BENCH_TEMPLATE ?= sample

.PHONY: bench
bench: cluster-tools build ## Run the full benchmark with the sample's template (about 32 min on 2 cores with 3 runs, 52 with BENCH_FLAGS=-runs=5); writes docs/benchmarks.json and docs/benchmarks.png.
	$(GO) build -o $(LOCALBIN)/bench ./test/bench
	$(LOCALBIN)/bench -bin-dir $(K8S_BIN) -manager $(LOCALBIN)/manager -rss -template "$(BENCH_TEMPLATE)" -out docs $(BENCH_FLAGS)

# The growth runs: the memory scenario alone, with PodSets of 10 pods and no
# foreign pods, at each of GROWTH_OWNERS PodSets, on 10 kwok nodes (50,000
# pod slots); then the straight lines through them, and the guard: the run
# fails when the peak RSS grows by more than GROWTH_MAX_PEAK_KIB_PER_POD per
# owned pod. docs/benchmarks.md ("Growth") shows the table and the lines.
# GROWTH_TEMPLATE=realistic gives the PodSets a chart-sized template (two
# containers, probes, volumes, env from a ConfigMap) instead of the short
# form, and writes to docs/growth-realistic/; it stops at 25,000 pods, which
# take 11 to 17 minutes to settle (50,000 would take about half an hour).
GROWTH_OWNERS ?= $(if $(GROWTH_TEMPLATE),1000 2500,1000 2500 5000)
GROWTH_MAX_PEAK_KIB_PER_POD ?= 3.5
GROWTH_TEMPLATE ?=
GROWTH_DIR = docs/growth$(if $(GROWTH_TEMPLATE),-$(GROWTH_TEMPLATE))

.PHONY: bench-growth
bench-growth: cluster-tools build ## Run the growth runs (10k, 25k and 50k pods in PodSets of 10; about 25 min on 2 cores); writes docs/growth/<N>x10/benchmarks.json, prints the fitted lines, fails above GROWTH_MAX_PEAK_KIB_PER_POD.
	$(GO) build -o $(LOCALBIN)/bench ./test/bench
	set -e; for n in $(GROWTH_OWNERS); do \
	  mkdir -p $(GROWTH_DIR)/$${n}x10; \
	  $(LOCALBIN)/bench -bin-dir $(K8S_BIN) -manager $(LOCALBIN)/manager -shapes "" -sequential-shapes "" -rollout-shapes "" -warm-up "" \
	    -rss -rss-restart -rss-shape $${n}x10 -rss-foreign 0 -rss-template "$(GROWTH_TEMPLATE)" -nodes 10 -out $(GROWTH_DIR)/$${n}x10 $(BENCH_FLAGS); \
	done
	$(LOCALBIN)/bench -growth-fit "$(foreach n,$(GROWTH_OWNERS),$(GROWTH_DIR)/$(n)x10)" -growth-max-peak-kib-per-pod $(GROWTH_MAX_PEAK_KIB_PER_POD)

.PHONY: bench-inplace
INPLACE_PODS ?= 30
bench-inplace: cluster-tools real-node-tools build ## On one real node (needs root): roll INPLACE_PODS pods to a new image as a PodSet in place, a PodSet with ReCreate and a Deployment, with maxSurge 25% and 0%, then to new cpu and memory (no restart in place) with maxSurge 25%, BENCH_FLAGS="-runs N" times each (default 3); writes docs/benchmarks-inplace-surge{25,0}.json and docs/benchmarks-inplace-resources-surge25.json.
	$(GO) build -o $(LOCALBIN)/bench ./test/bench
	set -e; for run in image:25% image:0% resources:25%; do \
	  $(LOCALBIN)/bench -bin-dir $(K8S_BIN) -manager $(LOCALBIN)/manager -inplace-pods $(INPLACE_PODS) \
	    -inplace-change $${run%%:*} -inplace-surge $${run#*:} -node-images $(NODE_IMAGES) -out docs $(BENCH_FLAGS); \
	done

.PHONY: bench-smoke
bench-smoke: cluster-tools build ## Run small benchmark shapes once, with the request table; fails on overshoot or a wrong pod count (about 2 min).
	$(GO) build -o $(LOCALBIN)/bench ./test/bench
	$(LOCALBIN)/bench -bin-dir $(K8S_BIN) -manager $(LOCALBIN)/manager -smoke -requests -out $(LOCALBIN)/bench-smoke $(BENCH_FLAGS)

##@ Tools (built from the Go module proxy into bin/)

$(MONITORING_CRDS):
	hack/monitoring-crds.sh $(PROMETHEUS_OPERATOR_VERSION) $@

$(PROMTOOL):
	hack/install-prometheus.sh $(PROMETHEUS_DEB_VERSION) $(PROMETHEUS_BIN)

.PHONY: prometheus-tools
prometheus-tools: $(PROMETHEUS_OPERATOR_BIN)/prometheus-operator $(PROMETHEUS_OPERATOR_BIN)/prometheus-config-reloader $(PROMETHEUS_OPERATOR_BIN)/prometheus ## Build the Prometheus Operator, its config reloader and Prometheus (test-olm-real runs this itself, beside its first install).

$(PROMETHEUS_OPERATOR_BIN)/%:
	hack/build-tool.sh $* $(PROMETHEUS_OPERATOR_BIN)

.PHONY: envtest-assets
envtest-assets: $(K8S_BIN)/kube-apiserver $(K8S_BIN)/etcd ## Build kube-apiserver and etcd for envtest.

.PHONY: cluster-tools
cluster-tools: envtest-assets $(K8S_BIN)/kube-controller-manager $(K8S_BIN)/kube-scheduler $(K8S_BIN)/kubectl $(K8S_BIN)/kwok ## Build every binary of the local cluster.

$(K8S_BIN)/%:
	hack/build-tool.sh $* $(K8S_BIN)

# A cold CI run spends most of its time compiling these, and its test steps
# spend minutes waiting for pods and faults. .ci/run builds them in the
# background at the lowest CPU priority, so the compiles use that waiting
# time; a step needing a tool still in the works waits for its build
# (hack/build-tool.sh and the package installs take a lock each).
.PHONY: prebuild-tools
prebuild-tools: ## Install the Debian packages and build the Go-built tools that the test targets need, in the order .ci/run's steps need them.
	-hack/install-real-node.sh
	-bash -c 'source hack/lib/debian.sh && use_buildah && apt_install qemu-user-static podman'
	$(MAKE) -k $(PROMTOOL) $(K8S_BIN)/kube-apiserver $(K8S_BIN)/etcd $(OPERATOR_SDK) $(OPM) $(KUSTOMIZE) $(SCORECARD_TEST) \
	  $(K8S_BIN)/kube-controller-manager $(K8S_BIN)/kube-scheduler $(K8S_BIN)/kubectl $(K8S_BIN)/kwok $(OPENSHIFT_BIN)/sccadmission $(PROM_LABEL_PROXY) $(CYCLONEDX_GOMOD) \
	  $(K8S_BIN)/kubelet $(K8S_BIN)/kube-proxy $(OLM_BIN)/olm $(OLM_BIN)/catalog $(OLM_BIN)/cpb $(ENVTEST_OLDEST)/kube-apiserver $(GRPC_HEALTH_PROBE) \
	  $(PROMETHEUS_OPERATOR_BIN)/prometheus-operator $(PROMETHEUS_OPERATOR_BIN)/prometheus-config-reloader $(PROMETHEUS_OPERATOR_BIN)/prometheus $(OLMV1_BIN)/operator-controller $(OLMV1_BIN)/catalogd \
	  $(ENVTEST_RESIZE)/kube-apiserver $(REAL_NODE_RESIZE_TOOLS)

.PHONY: real-node-tools
real-node-tools: $(K8S_BIN)/kubelet $(K8S_BIN)/kube-proxy $(NODE_IMAGES)/busybox.tar ## Install the real node's Debian packages (containerd, runc, CNI plugins) when missing; build the kubelet and the node's images.
	hack/install-real-node.sh

# The images the real node runs (pause, busybox), built from test/images/.
$(NODE_IMAGES)/busybox.tar: hack/build-node-images.sh test/images/pause/main.go test/images/pause/Dockerfile test/images/busybox/Dockerfile
	hack/install-real-node.sh
	hack/build-node-images.sh $(NODE_IMAGES) pause busybox

# The canary scenarios' web server (test/images/canary-app).
$(NODE_IMAGES)/canary-app.tar: hack/build-node-images.sh test/images/canary-app/main.go test/images/canary-app/Dockerfile go.mod go.sum
	hack/install-real-node.sh
	hack/build-node-images.sh $(NODE_IMAGES) canary-app

# The previous release's manager and bundle images, built from git history.
$(NODE_IMAGES)/bundle-$(UPGRADE_FROM_REV).tar: hack/build-previous-release.sh
	hack/build-previous-release.sh $(UPGRADE_FROM_REV) $(NODE_IMAGES)

# OLM's images for its unpack Job and operator-sdk run bundle's catalog pod.
$(NODE_IMAGES)/opm.tar: $(OPM) $(GRPC_HEALTH_PROBE) hack/build-node-images.sh test/images/opm/Dockerfile
	OPM=$(OPM) GRPC_HEALTH_PROBE=$(GRPC_HEALTH_PROBE) hack/build-node-images.sh $(NODE_IMAGES) opm
$(NODE_IMAGES)/olm.tar: $(OLM_BIN)/cpb hack/build-node-images.sh test/images/olm/Dockerfile
	CPB=$(OLM_BIN)/cpb hack/build-node-images.sh $(NODE_IMAGES) olm

# The scorecard's test image, from the scorecard-test program of the OLM tools.
$(NODE_IMAGES)/scorecard-test.tar: $(SCORECARD_TEST) hack/build-node-images.sh test/images/scorecard-test/Dockerfile
	SCORECARD_TEST=$(SCORECARD_TEST) hack/build-node-images.sh $(NODE_IMAGES) scorecard-test

$(OLM_BIN)/%:
	hack/build-tool.sh $* $(OLM_BIN)

$(CONTROLLER_GEN):
	hack/build-tool.sh controller-gen $(LOCALBIN) $(notdir $@)

$(CRD_REF_DOCS):
	hack/build-tool.sh crd-ref-docs $(LOCALBIN) $(notdir $@)

$(GRPC_HEALTH_PROBE):
	hack/build-tool.sh grpc-health-probe $(LOCALBIN) $(notdir $@)

$(PROM_LABEL_PROXY):
	hack/build-tool.sh prom-label-proxy $(LOCALBIN) $(notdir $@)

$(KUSTOMIZE):
	hack/build-tool.sh kustomize $(LOCALBIN) $(notdir $@)

$(CYCLONEDX_GOMOD):
	hack/build-tool.sh cyclonedx-gomod $(LOCALBIN) $(notdir $@)

$(GOLANGCI_LINT):
	hack/build-tool.sh golangci-lint $(LOCALBIN) $(notdir $@)
