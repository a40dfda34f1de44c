// Package bundle_test checks the committed OLM bundle (bundle/) with the same
// validators `operator-sdk bundle validate --select-optional
// suite=operatorframework` runs, so that a regression fails `go test` on a
// machine without the operator-sdk CLI. It also checks the properties of the
// bundle the OLM install depends on but no validator looks at: the install
// modes, the WATCH_NAMESPACE wiring, the related operand image, and that
// bundle/ is not stale against config/.
package bundle_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/api/pkg/validation"
	"github.com/operator-framework/api/pkg/validation/errors"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

const (
	bundleDir = "../../bundle"
	// The base the bundle's CSV is generated from; createdAt is pinned there.
	baseCSV = "../../config/manifests/bases/podset-operator.clusterserviceversion.yaml"
	// The CRD controller-gen writes; the bundle must carry the same one.
	crdFile = "../../config/crd/bases/app.example.com_podsets.yaml"
	// The newest Kubernetes release the project is tested against (the local
	// cluster's kube-apiserver). The deprecated-API checks look for APIs
	// removed up to this release; without it they would only look up to the
	// CSV's minKubeVersion.
	k8sVersion = "1.37.0"
	operandEnv = "RELATED_IMAGE_PODSET"
)

func loadBundle(t *testing.T) *manifests.Bundle {
	t.Helper()
	b, err := manifests.GetBundleFromDir(bundleDir)
	if err != nil {
		t.Fatalf("loading %s: %v", bundleDir, err)
	}
	if b.CSV == nil {
		t.Fatalf("%s has no ClusterServiceVersion", bundleDir)
	}
	return b
}

// TestBundleValidators fails on every error and every warning of the default
// bundle validators plus each validator of the operatorframework suite.
func TestBundleValidators(t *testing.T) {
	b := loadBundle(t)
	validators := validation.DefaultBundleValidators.WithValidators(
		validation.OperatorHubV2Validator,
		validation.StandardCapabilitiesValidator,
		validation.StandardCategoriesValidator,
		validation.AlphaDeprecatedAPIsValidator,
		validation.GoodPracticesValidator,
	)
	// Every object, as `operator-sdk bundle validate` passes them: each
	// validator acts only on the objects of its own type, so the CSV and CRD
	// validators check nothing unless the CSV and the CRDs are among them.
	// The optional validators read their options from a map among the objects.
	opts := map[string]string{"k8s-version": k8sVersion}
	results := validators.Validate(append(b.ObjectsToValidate(), any(opts))...)
	if len(results) == 0 {
		t.Fatal("the validators returned no results at all; were they given the bundle?")
	}
	for _, r := range results {
		for _, e := range r.Errors {
			t.Errorf("validator error (%s): %s", r.Name, e.Error())
		}
		for _, w := range r.Warnings {
			if w.Level != errors.LevelWarn {
				t.Errorf("unexpected level %q in warnings of %s", w.Level, r.Name)
			}
			t.Errorf("validator warning (%s): %s", r.Name, w.Error())
		}
	}
}

// TestValidatorsCatchABrokenBundle proves the validators above can fail: the
// same bundle without a minKubeVersion and with a non-standard category must
// be reported, and so must a broken CRD and a broken CSV that only the CRD
// and CSV validators look at (they act only when given those objects).
func TestValidatorsCatchABrokenBundle(t *testing.T) {
	validate := func(b *manifests.Bundle) (warned, errored bool, errs []string) {
		results := validation.DefaultBundleValidators.WithValidators(
			validation.OperatorHubV2Validator,
			validation.StandardCategoriesValidator,
		).Validate(b.ObjectsToValidate()...)
		for _, r := range results {
			warned = warned || r.HasWarn()
			errored = errored || r.HasError()
			for _, e := range r.Errors {
				errs = append(errs, r.Name+": "+e.Error())
			}
		}
		return warned, errored, errs
	}
	t.Run("no minKubeVersion, a made-up category", func(t *testing.T) {
		b := loadBundle(t)
		b.CSV.Spec.MinKubeVersion = ""
		b.CSV.Annotations["categories"] = "Not A Category"
		if warned, errored, _ := validate(b); !warned || !errored {
			t.Fatalf("broken CSV: got warnings=%v errors=%v, want both", warned, errored)
		}
	})
	t.Run("a CRD of no scope", func(t *testing.T) {
		b := loadBundle(t)
		b.V1CRDs[0].Spec.Scope = "Galactic"
		_, _, errs := validate(b)
		if !strings.Contains(strings.Join(errs, "\n"), b.V1CRDs[0].Name+": ") {
			t.Fatalf("the CRD validator did not report the CRD: %v", errs)
		}
	})
	t.Run("alm-examples that are not JSON", func(t *testing.T) {
		b := loadBundle(t)
		b.CSV.Annotations["alm-examples"] = "[{"
		_, _, errs := validate(b)
		if !strings.Contains(strings.Join(errs, "\n"), b.CSV.Name+": Error: Value invalid character") {
			t.Fatalf("the CSV validator did not report the alm-examples: %v", errs)
		}
	})
}

func TestInstallModes(t *testing.T) {
	csv := loadBundle(t).CSV
	want := map[operatorsv1alpha1.InstallModeType]bool{
		operatorsv1alpha1.InstallModeTypeOwnNamespace:    true,
		operatorsv1alpha1.InstallModeTypeSingleNamespace: true,
		operatorsv1alpha1.InstallModeTypeMultiNamespace:  true,
		operatorsv1alpha1.InstallModeTypeAllNamespaces:   true,
	}
	got := map[operatorsv1alpha1.InstallModeType]bool{}
	for _, m := range csv.Spec.InstallModes {
		got[m.Type] = m.Supported
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("install modes: got %v, want %v", got, want)
	}
}

// TestOpenShiftFeatureAnnotations: OpenShift's OperatorHub filters operators
// on the features.operators.openshift.io annotations, and Red Hat's
// preflight wants each present as "true" or "false". docs/reference.md says
// why each has its value; a change of value must change the docs too.
func TestOpenShiftFeatureAnnotations(t *testing.T) {
	csv := loadBundle(t).CSV
	want := map[string]string{
		"cnf": "false", "cni": "false", "csi": "false",
		"disconnected":   "false",
		"fips-compliant": "false",
		"proxy-aware":    "false",
		"tls-profiles":   "false",
		"token-auth-aws": "false", "token-auth-azure": "false", "token-auth-gcp": "false",
	}
	docs, err := os.ReadFile("../../docs/reference.md")
	if err != nil {
		t.Fatal(err)
	}
	for feature, value := range want {
		key := "features.operators.openshift.io/" + feature
		if got, ok := csv.Annotations[key]; !ok || got != value {
			t.Errorf("%s = %q (present %v), want %q", key, got, ok, value)
		}
		if row := fmt.Sprintf("| `%s` | `%s` |", feature, value); !strings.Contains(string(docs), row) {
			t.Errorf("docs/reference.md has no row %q explaining it", row)
		}
	}
	for key := range csv.Annotations {
		if feature, ok := strings.CutPrefix(key, "features.operators.openshift.io/"); ok {
			if _, known := want[feature]; !known {
				t.Errorf("%s is not one of the annotations this test and the docs know", key)
			}
		}
	}
}

// TestManagerEnvironment checks that the manager watches the OperatorGroup's
// target namespaces and that its operand image is a related image, so that
// mirroring the bundle for a disconnected cluster copies it.
func TestManagerEnvironment(t *testing.T) {
	csv := loadBundle(t).CSV
	deps := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs
	if len(deps) != 1 {
		t.Fatalf("want exactly one deployment in the CSV, got %d", len(deps))
	}
	containers := deps[0].Spec.Template.Spec.Containers
	if len(containers) != 1 {
		t.Fatalf("want exactly one container, got %d", len(containers))
	}
	c := containers[0]
	if c.Image != csv.Annotations["containerImage"] {
		t.Errorf("manager image %q differs from the containerImage annotation %q", c.Image, csv.Annotations["containerImage"])
	}
	var watch, operand bool
	var operandImage string
	for _, e := range c.Env {
		switch e.Name {
		case "WATCH_NAMESPACE":
			watch = true
			if e.ValueFrom == nil || e.ValueFrom.FieldRef == nil ||
				e.ValueFrom.FieldRef.FieldPath != "metadata.annotations['olm.targetNamespaces']" {
				t.Errorf("WATCH_NAMESPACE must come from the olm.targetNamespaces annotation, got %+v", e)
			}
		case operandEnv:
			operand, operandImage = true, e.Value
		}
	}
	if !watch || !operand {
		t.Fatalf("manager env lacks WATCH_NAMESPACE (%v) or %s (%v)", watch, operandEnv, operand)
	}
	var related bool
	for _, ri := range csv.Spec.RelatedImages {
		related = related || ri.Image == operandImage
	}
	if operandImage == "" || !related {
		t.Errorf("operand image %q is not in relatedImages %+v", operandImage, csv.Spec.RelatedImages)
	}
}

// TestDescriptorsCoverTheAPI fails when a field is added to the PodSet spec or
// status without a descriptor in the CSV base (the console would not show it,
// and the scorecard's descriptor tests only look at the sample's fields).
func TestDescriptorsCoverTheAPI(t *testing.T) {
	b := loadBundle(t)
	if len(b.V1CRDs) != 1 {
		t.Fatalf("want one CRD in the bundle, got %d", len(b.V1CRDs))
	}
	crd := b.V1CRDs[0]
	var desc *operatorsv1alpha1.CRDDescription
	for i, o := range b.CSV.Spec.CustomResourceDefinitions.Owned {
		if o.Name == crd.Name {
			desc = &b.CSV.Spec.CustomResourceDefinitions.Owned[i]
		}
	}
	if desc == nil {
		t.Fatalf("CRD %s is not listed as owned by the CSV", crd.Name)
	}
	var pods bool
	for _, r := range desc.Resources {
		pods = pods || (r.Kind == "Pod" && r.Version == "v1")
	}
	if !pods {
		t.Errorf("owned CRD resources %+v do not list the v1 Pods the operator creates", desc.Resources)
	}

	props := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties
	spec := map[string]bool{}
	for _, d := range desc.SpecDescriptors {
		spec[d.Path] = true
	}
	status := map[string]bool{}
	for _, d := range desc.StatusDescriptors {
		status[d.Path] = true
	}
	for _, f := range sortedKeys(props["spec"].Properties) {
		if !spec[f] {
			t.Errorf("spec.%s has no specDescriptor", f)
		}
	}
	for _, f := range sortedKeys(props["status"].Properties) {
		if !status[f] {
			t.Errorf("status.%s has no statusDescriptor", f)
		}
	}
	if len(props["spec"].Properties) == 0 || len(props["status"].Properties) == 0 {
		t.Fatal("the CRD schema has no spec or status properties")
	}
}

// The console's status x-descriptors that render a list or an object
// (openshift/console, packages/operator-lifecycle-manager, descriptors):
// every other one, text and podCount among them, is for a single value, and
// on a list or an object the console ignores it and prints the value as a
// string ("[object Object]" for an object).
const hiddenDescriptor = "urn:alm:descriptor:com.tectonic.ui:hidden"

var structuredStatusDescriptors = map[string]string{
	"urn:alm:descriptor:io.kubernetes.conditions":    "array",
	"urn:alm:descriptor:com.tectonic.ui:podStatuses": "object",
	hiddenDescriptor: "",
}

// TestStatusDescriptorsRender fails when the details page the console draws
// from the status descriptors would show a field as a raw string: a single
// value needs an x-descriptor that renders it, a list one that renders lists
// (or hidden), and an object without one is shown as a group only when each
// of its fields has a descriptor of its own.
func TestStatusDescriptorsRender(t *testing.T) {
	b := loadBundle(t)
	status := b.V1CRDs[0].Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"]
	descriptors := map[string][]string{}
	for _, d := range b.CSV.Spec.CustomResourceDefinitions.Owned[0].StatusDescriptors {
		descriptors[d.Path] = d.XDescriptors
	}
	var check func(path string, schema apiextensionsv1.JSONSchemaProps)
	check = func(path string, schema apiextensionsv1.JSONSchemaProps) {
		xds, ok := descriptors[path]
		if !ok {
			t.Errorf("status.%s has no statusDescriptor", path)
			return
		}
		structured := schema.Type == "object" || schema.Type == "array"
		for _, xd := range xds {
			kind, forStructure := structuredStatusDescriptors[xd]
			switch {
			case structured && !forStructure:
				t.Errorf("status.%s is an %s: the console ignores %s there and prints it as a string", path, schema.Type, xd)
			case structured && kind != "" && kind != schema.Type:
				t.Errorf("status.%s is an %s, but %s renders an %s", path, schema.Type, xd, kind)
			case !structured && forStructure && xd != hiddenDescriptor:
				t.Errorf("status.%s is a single %s value, but %s renders an %s", path, schema.Type, xd, kind)
			}
		}
		switch {
		case len(xds) > 0:
		case schema.Type == "object" && len(schema.Properties) > 0:
			for _, field := range sortedKeys(schema.Properties) {
				check(path+"."+field, schema.Properties[field])
			}
		default:
			t.Errorf("status.%s (%s) has no x-descriptor: give it one that renders it, or hide it", path, schema.Type)
		}
	}
	for _, field := range sortedKeys(status.Properties) {
		check(field, status.Properties[field])
	}
}

// TestBundleIsCurrent fails when config/ changed without `make bundle`.
func TestBundleIsCurrent(t *testing.T) {
	b := loadBundle(t)

	var want apiextensionsv1.CustomResourceDefinition
	readYAML(t, crdFile, &want)
	if got := b.V1CRDs[0]; !reflect.DeepEqual(got.Spec, want.Spec) {
		t.Errorf("bundle CRD differs from %s: run `make bundle`", crdFile)
	}

	var base operatorsv1alpha1.ClusterServiceVersion
	readYAML(t, baseCSV, &base)
	csv := b.CSV
	// operator-sdk stamps the time of generation; `make bundle` restores the
	// base's value so that regenerating leaves the tree unchanged.
	if got, want := csv.Annotations["createdAt"], base.Annotations["createdAt"]; got != want || want == "" {
		t.Errorf("createdAt: bundle %q, base %q", got, want)
	}
	if !reflect.DeepEqual(csv.Spec.CustomResourceDefinitions.Owned[0].SpecDescriptors, base.Spec.CustomResourceDefinitions.Owned[0].SpecDescriptors) ||
		!reflect.DeepEqual(csv.Spec.CustomResourceDefinitions.Owned[0].StatusDescriptors, base.Spec.CustomResourceDefinitions.Owned[0].StatusDescriptors) {
		t.Errorf("bundle descriptors differ from %s: run `make bundle`", baseCSV)
	}

	// alm-examples is generated from config/samples.
	var examples []map[string]any
	if err := json.Unmarshal([]byte(csv.Annotations["alm-examples"]), &examples); err != nil {
		t.Fatalf("alm-examples: %v", err)
	}
	samples, err := filepath.Glob("../../config/samples/app_*.yaml")
	if err != nil || len(samples) == 0 {
		t.Fatalf("no samples: %v", err)
	}
	if len(examples) != len(samples) {
		t.Fatalf("alm-examples has %d objects, config/samples has %d", len(examples), len(samples))
	}
	for _, s := range samples {
		var sample map[string]any
		readYAML(t, s, &sample)
		found := false
		for _, e := range examples {
			found = found || reflect.DeepEqual(e, sample)
		}
		if !found {
			t.Errorf("%s is not in alm-examples (or differs): run `make bundle`", s)
		}
	}
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// controller-gen writes a leading document separator.
	data = []byte(strings.TrimPrefix(string(data), "---\n"))
	if err := yaml.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestCatalogMatchesBundle fails when catalog/ was not re-rendered after
// `make bundle`: the file-based catalog embeds every bundle manifest (as
// olm.bundle.object properties), and that copy is what OLM installs. It
// also checks the upgrade edge: beside this bundle the catalog keeps the
// earlier releases' bundles, and in every channel this bundle's entry
// replaces the channel's previous head and skips the CSV's olm.skipRange.
func TestCatalogMatchesBundle(t *testing.T) {
	data, err := os.ReadFile("../../catalog/podset-operator/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b := loadBundle(t)
	var (
		bundles         int
		earlier         = map[string]bool{} // earlier releases' bundles
		embedded        = map[string]any{}
		defaultChannel  string
		channelsWithCSV = map[string]bool{}
		// per channel: the entry before this bundle's, and this bundle's edge
		previousHead = map[string]string{}
		replaces     = map[string]string{}
		skipRange    = map[string]string{}
	)
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var m struct {
			Schema         string `json:"schema"`
			Name           string `json:"name"`
			DefaultChannel string `json:"defaultChannel"`
			Entries        []struct {
				Name      string `json:"name"`
				Replaces  string `json:"replaces"`
				SkipRange string `json:"skipRange"`
			} `json:"entries"`
			Properties []struct {
				Type  string          `json:"type"`
				Value json.RawMessage `json:"value"`
			} `json:"properties"`
		}
		if err := yaml.Unmarshal([]byte(strings.TrimPrefix(doc, "---\n")), &m); err != nil {
			t.Fatalf("catalog document: %v", err)
		}
		switch m.Schema {
		case "olm.package":
			defaultChannel = m.DefaultChannel
		case "olm.channel":
			for i, e := range m.Entries {
				if e.Name == b.CSV.Name {
					channelsWithCSV[m.Name] = true
					replaces[m.Name], skipRange[m.Name] = e.Replaces, e.SkipRange
					if i > 0 {
						previousHead[m.Name] = m.Entries[i-1].Name
					}
				}
			}
		case "olm.bundle":
			if m.Name != b.CSV.Name {
				earlier[m.Name] = true
				continue
			}
			bundles++
			for _, p := range m.Properties {
				if p.Type != "olm.bundle.object" {
					continue
				}
				var v struct {
					Data []byte `json:"data"` // base64 in JSON
				}
				if err := json.Unmarshal(p.Value, &v); err != nil {
					t.Fatal(err)
				}
				var obj map[string]any
				if err := json.Unmarshal(v.Data, &obj); err != nil {
					t.Fatal(err)
				}
				embedded[objectKey(obj)] = obj
			}
		}
	}
	if bundles != 1 {
		t.Fatalf("want one olm.bundle of %s in the catalog, got %d: run `make catalog`", b.CSV.Name, bundles)
	}
	for ch := range channelsWithCSV {
		if head := previousHead[ch]; head != "" {
			if !earlier[head] {
				t.Errorf("channel %s lists %s, which has no olm.bundle", ch, head)
			}
			if replaces[ch] != head {
				t.Errorf("channel %s: %s replaces %q, want the previous head %q", ch, b.CSV.Name, replaces[ch], head)
			}
		}
		if want := b.CSV.Annotations["olm.skipRange"]; skipRange[ch] != want {
			t.Errorf("channel %s: %s skipRange %q, want the CSV's olm.skipRange %q", ch, b.CSV.Name, skipRange[ch], want)
		}
	}
	if defaultChannel == "" || !channelsWithCSV[defaultChannel] {
		t.Errorf("default channel %q does not contain %s (channels with it: %v)", defaultChannel, b.CSV.Name, channelsWithCSV)
	}

	files, err := filepath.Glob(filepath.Join(bundleDir, "manifests", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no bundle manifests: %v", err)
	}
	if len(files) != len(embedded) {
		t.Errorf("catalog embeds %d objects, bundle/manifests has %d: run `make catalog`", len(embedded), len(files))
	}
	for _, f := range files {
		var obj map[string]any
		readYAML(t, f, &obj)
		if got, ok := embedded[objectKey(obj)]; !ok || !reflect.DeepEqual(got, obj) {
			t.Errorf("%s differs from the catalog's copy (present %v): run `make catalog`", f, ok)
		}
	}
}

func objectKey(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	return fmt.Sprintf("%v/%v", obj["kind"], meta["name"])
}

// TestReplacesThePreviousRelease checks that the CSV names the release it
// replaces, as OperatorHub's pipeline requires, and that the catalog's
// channel entries for it say the same.
func TestReplacesThePreviousRelease(t *testing.T) {
	csv := loadBundle(t).CSV
	if csv.Spec.Replaces == "" || csv.Spec.Replaces == csv.Name {
		t.Fatalf("spec.replaces = %q", csv.Spec.Replaces)
	}
	if csv.Annotations["olm.skipRange"] == "" {
		t.Errorf("the CSV lost its olm.skipRange annotation")
	}
	data, err := os.ReadFile("../../catalog/podset-operator/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	entries := 0
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var ch struct {
			Schema  string `json:"schema"`
			Name    string `json:"name"`
			Entries []struct {
				Name     string `json:"name"`
				Replaces string `json:"replaces"`
			} `json:"entries"`
		}
		if err := yaml.Unmarshal([]byte(doc), &ch); err != nil || ch.Schema != "olm.channel" {
			continue
		}
		for _, e := range ch.Entries {
			if e.Name == csv.Name {
				entries++
				if e.Replaces != csv.Spec.Replaces {
					t.Errorf("channel %s: %s replaces %q in the catalog, %q in the CSV", ch.Name, e.Name, e.Replaces, csv.Spec.Replaces)
				}
			}
		}
	}
	if entries == 0 {
		t.Errorf("no channel of the catalog has %s", csv.Name)
	}
}

// TestPlatforms holds three lists to each other: the platforms the Makefile
// builds the manager image for (PLATFORMS, which make docker-buildx builds
// and test/multiarch checks in the pushed manifest list), the CSV's
// operatorframework.io/arch.* and os.* labels (what OLM and OperatorHub
// offer the operator on) and the manager Deployment's node affinity (where
// the scheduler may put its pod). A platform in one and not another is an
// install that fails with "exec format error", or one that is never offered.
func TestPlatforms(t *testing.T) {
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	var built []string
	for _, line := range strings.Split(string(makefile), "\n") {
		if v, ok := strings.CutPrefix(line, "PLATFORMS ?= "); ok {
			built = strings.Split(strings.TrimSpace(v), ",")
		}
	}
	if len(built) == 0 {
		t.Fatal("the Makefile sets no PLATFORMS")
	}
	wantOS, wantArch := map[string]bool{}, map[string]bool{}
	for _, p := range built {
		os, arch, ok := strings.Cut(p, "/")
		if !ok {
			t.Fatalf("PLATFORMS entry %q is not OS/ARCH", p)
		}
		wantOS[os], wantArch[arch] = true, true
	}

	csv := loadBundle(t).CSV
	gotOS, gotArch := map[string]bool{}, map[string]bool{}
	for k, v := range csv.Labels {
		if arch, ok := strings.CutPrefix(k, "operatorframework.io/arch."); ok {
			gotArch[arch] = v == "supported"
		}
		if os, ok := strings.CutPrefix(k, "operatorframework.io/os."); ok {
			gotOS[os] = v == "supported"
		}
	}
	if !reflect.DeepEqual(gotArch, wantArch) || !reflect.DeepEqual(gotOS, wantOS) {
		t.Errorf("CSV labels say arch %v, os %v (true: supported); PLATFORMS builds %v", gotArch, gotOS, built)
	}

	deps := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs
	if len(deps) != 1 {
		t.Fatalf("want exactly one deployment in the CSV, got %d", len(deps))
	}
	aff := deps[0].Spec.Template.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		t.Fatal("the manager Deployment has no required node affinity")
	}
	terms := aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 {
		t.Fatalf("want one node selector term (the terms are ORed), got %d", len(terms))
	}
	affinity := map[string]map[string]bool{}
	for _, e := range terms[0].MatchExpressions {
		if e.Operator != "In" {
			t.Errorf("node affinity on %s uses %s, want In", e.Key, e.Operator)
		}
		affinity[e.Key] = map[string]bool{}
		for _, v := range e.Values {
			affinity[e.Key][v] = true
		}
	}
	if !reflect.DeepEqual(affinity["kubernetes.io/arch"], wantArch) || !reflect.DeepEqual(affinity["kubernetes.io/os"], wantOS) {
		t.Errorf("the manager's node affinity allows %v; PLATFORMS builds %v", affinity, built)
	}
}

// TestCRDFitsAClientSideApply holds the CRD to what `kubectl apply` without
// --server-side (and any tool that applies the same way) can write: it
// stores the whole object, as JSON, in the last-applied-configuration
// annotation, and the API server allows a total of 256 KiB of annotations.
// make manifests keeps the CRD under it by dropping the pod template's
// field descriptions (hack/crd-trim).
func TestCRDFitsAClientSideApply(t *testing.T) {
	const annotationsLimit = 256 << 10
	var crd map[string]any
	readYAML(t, crdFile, &crd)
	b, err := json.Marshal(crd)
	if err != nil {
		t.Fatal(err)
	}
	// Room for the annotation's key and the other annotations.
	if len(b) > annotationsLimit*3/4 {
		t.Errorf("the CRD is %d bytes of JSON; kubectl apply's last-applied annotation, with the others, may hold at most %d", len(b), annotationsLimit)
	}
	t.Logf("the CRD is %d bytes of JSON (%d%% of the annotations limit)", len(b), len(b)*100/annotationsLimit)
}

// openShiftKubernetes is the Kubernetes minor version of each OpenShift 4
// minor release that the catalogs still serve.
var openShiftKubernetes = map[int]int{16: 29, 17: 30, 18: 31, 19: 32, 20: 33, 21: 34}

// TestOpenShiftVersions: the OpenShift releases the bundle claims
// (com.redhat.openshift.versions, which OpenShift's catalogs read from the
// bundle's metadata and its image's label alike) begin with the one whose
// Kubernetes is the CSV's minKubeVersion: an older one would list the
// operator where it cannot install, a newer one hide it where it can.
func TestOpenShiftVersions(t *testing.T) {
	const key = "com.redhat.openshift.versions"
	versions := readAnnotations(t, filepath.Join(bundleDir, "metadata", "annotations.yaml"))[key]
	if versions == "" {
		t.Fatalf("bundle/metadata/annotations.yaml has no %s", key)
	}
	dockerfile, err := os.ReadFile("../../bundle.Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	if label := fmt.Sprintf("LABEL %s=%q", key, versions); !strings.Contains(string(dockerfile), label+"\n") {
		t.Errorf("bundle.Dockerfile has no %s, the metadata's value", label)
	}
	checkOpenShiftVersions(t, "bundle/", versions, loadBundle(t).CSV.Spec.MinKubeVersion)
}
