// The stand-in of OpenShift's pod admission (main.go), in a module of its
// own: OpenShift's admission code builds on Kubernetes 1.33's internal
// packages (k8s.io/kubernetes v1.33.2), not the project's libraries.
//
// Every module it shares with the module graph of OLM v1 and the Kubernetes
// 1.33 commands (hack/build-tool.sh, olmv1_wrapper) is at that graph's
// version: raised by require where OpenShift's modules ask for less, lowered
// by the replace directives at the end where they ask for more. With the
// same compiler flags the Go build cache then compiles those packages once
// for both, and the stand-in costs seconds beside them instead of minutes
// (hack/build-openshift-admission.sh names any module that drifts apart).
module github.com/example/podset-operator/test/openshift/sccadmission

go 1.24.4

require (
	github.com/openshift/apiserver-library-go v0.0.0-20250917015549-a8019f39f670
	github.com/openshift/client-go v0.0.0-20251015124057-db0dee36e235
	gomodules.xyz/jsonpatch/v2 v2.5.0
	k8s.io/api v0.34.1
	k8s.io/apimachinery v0.34.1
	k8s.io/apiserver v0.34.1
	k8s.io/client-go v0.34.1
	k8s.io/klog/v2 v2.130.1
	k8s.io/kubernetes v1.33.2
)

require (
	cel.dev/expr v0.24.0 // indirect
	github.com/antlr4-go/antlr/v4 v4.13.1 // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/blang/semver/v4 v4.0.0 // indirect
	github.com/cenkalti/backoff/v5 v5.0.2 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/davecgh/go-spew v1.1.2-0.20180830191138-d8f796af33cc // indirect
	github.com/distribution/reference v0.6.0 // indirect
	github.com/emicklei/go-restful/v3 v3.12.2 // indirect
	github.com/felixge/httpsnoop v1.0.4 // indirect
	github.com/fxamacker/cbor/v2 v2.9.0 // indirect
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/go-openapi/jsonpointer v0.21.1 // indirect
	github.com/go-openapi/jsonreference v0.21.0 // indirect
	github.com/go-openapi/swag v0.23.1 // indirect
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/google/cel-go v0.26.0 // indirect
	github.com/google/gnostic-models v0.7.0 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/grafana/regexp v0.0.0-20240518133315-a468a5bfb3bc // indirect
	github.com/grpc-ecosystem/grpc-gateway/v2 v2.27.0 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/josharian/intern v1.0.0 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/mailru/easyjson v0.9.0 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.3-0.20250322232337-35a7c28c31ee // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/openshift/api v0.0.0-20251111013132-5c461e21bdb7 // indirect
	github.com/openshift/library-go v0.0.0-20260108135436-db8dbd64c462 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/prometheus/client_golang v1.23.1 // indirect
	github.com/prometheus/client_model v0.6.2 // indirect
	github.com/prometheus/common v0.66.0 // indirect
	github.com/prometheus/procfs v0.16.1 // indirect
	github.com/spf13/cobra v1.10.1 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	github.com/stoewer/go-strcase v1.3.1 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	go.opentelemetry.io/auto/sdk v1.1.0 // indirect
	go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp v0.61.0 // indirect
	go.opentelemetry.io/otel v1.37.0 // indirect
	go.opentelemetry.io/otel/exporters/otlp/otlptrace v1.36.0 // indirect
	go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc v1.36.0 // indirect
	go.opentelemetry.io/otel/metric v1.37.0 // indirect
	go.opentelemetry.io/otel/sdk v1.37.0 // indirect
	go.opentelemetry.io/otel/trace v1.37.0 // indirect
	go.opentelemetry.io/proto/otlp v1.7.0 // indirect
	go.yaml.in/yaml/v2 v2.4.2 // indirect
	golang.org/x/exp v0.0.0-20250620022241-b7579e27df2b // indirect
	golang.org/x/net v0.47.0 // indirect
	golang.org/x/oauth2 v0.30.0 // indirect
	golang.org/x/sync v0.18.0 // indirect
	golang.org/x/sys v0.38.0 // indirect
	golang.org/x/term v0.37.0 // indirect
	golang.org/x/text v0.31.0 // indirect
	golang.org/x/time v0.12.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20250707201910-8d1bb00bc6a7 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20250707201910-8d1bb00bc6a7 // indirect
	google.golang.org/grpc v1.75.0 // indirect
	google.golang.org/protobuf v1.36.8 // indirect
	gopkg.in/evanphx/json-patch.v4 v4.12.0 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
	gopkg.in/yaml.v2 v2.4.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
	k8s.io/apiextensions-apiserver v0.34.1 // indirect
	k8s.io/component-base v0.34.1 // indirect
	k8s.io/component-helpers v0.32.1 // indirect
	k8s.io/controller-manager v0.32.1 // indirect
	k8s.io/kube-openapi v0.0.0-20250710124328-f3f2b991d03b // indirect
	k8s.io/utils v0.0.0-20250604170112-4c0f3b243397 // indirect
	sigs.k8s.io/apiserver-network-proxy/konnectivity-client v0.33.0 // indirect
	sigs.k8s.io/json v0.0.0-20241014173422-cfa47c3a1cc8 // indirect
	sigs.k8s.io/randfill v1.0.0 // indirect
	sigs.k8s.io/structured-merge-diff/v4 v4.7.0 // indirect
	sigs.k8s.io/yaml v1.6.0 // indirect
)

replace k8s.io/api => k8s.io/api v0.33.2

replace k8s.io/apiextensions-apiserver => k8s.io/apiextensions-apiserver v0.33.2

replace k8s.io/apimachinery => k8s.io/apimachinery v0.33.2

replace k8s.io/apiserver => k8s.io/apiserver v0.33.2

replace k8s.io/cli-runtime => k8s.io/cli-runtime v0.33.2

replace k8s.io/client-go => k8s.io/client-go v0.33.2

replace k8s.io/cloud-provider => k8s.io/cloud-provider v0.33.2

replace k8s.io/cluster-bootstrap => k8s.io/cluster-bootstrap v0.33.2

replace k8s.io/code-generator => k8s.io/code-generator v0.33.2

replace k8s.io/component-base => k8s.io/component-base v0.33.2

replace k8s.io/component-helpers => k8s.io/component-helpers v0.33.2

replace k8s.io/controller-manager => k8s.io/controller-manager v0.33.2

replace k8s.io/cri-api => k8s.io/cri-api v0.33.2

replace k8s.io/cri-client => k8s.io/cri-client v0.33.2

replace k8s.io/csi-translation-lib => k8s.io/csi-translation-lib v0.33.2

replace k8s.io/dynamic-resource-allocation => k8s.io/dynamic-resource-allocation v0.33.2

replace k8s.io/endpointslice => k8s.io/endpointslice v0.33.2

replace k8s.io/externaljwt => k8s.io/externaljwt v0.33.13

replace k8s.io/kms => k8s.io/kms v0.33.2

replace k8s.io/kube-aggregator => k8s.io/kube-aggregator v0.33.2

replace k8s.io/kube-controller-manager => k8s.io/kube-controller-manager v0.33.2

replace k8s.io/kube-proxy => k8s.io/kube-proxy v0.33.2

replace k8s.io/kube-scheduler => k8s.io/kube-scheduler v0.33.2

replace k8s.io/kubectl => k8s.io/kubectl v0.33.2

replace k8s.io/kubelet => k8s.io/kubelet v0.33.2

replace k8s.io/metrics => k8s.io/metrics v0.33.2

replace k8s.io/mount-utils => k8s.io/mount-utils v0.33.2

replace k8s.io/pod-security-admission => k8s.io/pod-security-admission v0.33.2

replace k8s.io/sample-apiserver => k8s.io/sample-apiserver v0.33.2

replace k8s.io/sample-cli-plugin => k8s.io/sample-cli-plugin v0.33.2

replace k8s.io/sample-controller => k8s.io/sample-controller v0.33.2

replace k8s.io/kube-openapi => k8s.io/kube-openapi v0.0.0-20250610211856-8b98d1ed966a

replace github.com/openshift/client-go => github.com/openshift/client-go v0.0.0-20250710075018-396b36f983ee

replace github.com/google/gnostic-models => github.com/google/gnostic-models v0.6.9

// Lowered to OLM v1's versions (see the top of this file).
replace github.com/fxamacker/cbor/v2 => github.com/fxamacker/cbor/v2 v2.8.0

replace github.com/modern-go/reflect2 => github.com/modern-go/reflect2 v1.0.2

replace golang.org/x/net => golang.org/x/net v0.43.0

replace golang.org/x/sync => golang.org/x/sync v0.16.0

replace golang.org/x/sys => golang.org/x/sys v0.35.0

replace golang.org/x/term => golang.org/x/term v0.34.0

replace golang.org/x/text => golang.org/x/text v0.28.0

replace gomodules.xyz/jsonpatch/v2 => gomodules.xyz/jsonpatch/v2 v2.4.0
