package bundle_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/manifests"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	ocpvalidation "github.com/redhat-openshift-ecosystem/ocp-olm-catalog-validator/pkg/validation"
	"sigs.k8s.io/yaml"
)

const packageName = "podset-operator"

// TestOperatorHubSubmission checks the submission `make operatorhub`
// writes as the community-operators repositories' static checks and
// Red Hat's OpenShift validator check it, offline: the layout, each
// directory's bundle named for its version, a replaces graph that is one
// chain from the first release to the newest within the tree (a catalog
// built from the tree alone upgrades every release to the newest), and the
// OpenShift releases each bundle claims. The operator-sdk validators the
// pipelines run go over the same tree in make verify-operatorhub.
func TestOperatorHubSubmission(t *testing.T) {
	out := t.TempDir()
	cmd := exec.Command("make", "--no-print-directory", "-s", "-C", "../..", "operatorhub", "OPERATORHUB_DIR="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make operatorhub: %v\n%s", err, b)
	}
	dir := filepath.Join(out, "operators", packageName)

	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var versions []semver.Version
	for _, e := range entries {
		if e.Name() == "ci.yaml" {
			continue
		}
		v, err := semver.Parse(e.Name())
		if err != nil || !e.IsDir() {
			t.Errorf("operators/%s/%s: only ci.yaml and a directory per version belong here", packageName, e.Name())
			continue
		}
		versions = append(versions, v)
	}
	slices.SortFunc(versions, func(a, b semver.Version) int { return a.Compare(b) })
	if len(versions) < 2 {
		t.Fatalf("versions %v: want every release and the work tree's", versions)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "ci.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var ci struct {
		UpdateGraph string `json:"updateGraph"`
	}
	if err := yaml.Unmarshal(raw, &ci); err != nil || ci.UpdateGraph != "replaces-mode" {
		t.Errorf("ci.yaml: updateGraph %q (%v), want replaces-mode: each bundle upgrades from what its CSV replaces", ci.UpdateGraph, err)
	}

	replaces := map[string]string{} // CSV name -> the CSV it replaces
	for _, v := range versions {
		vdir := filepath.Join(dir, v.String())
		sub, err := os.ReadDir(vdir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range sub {
			names = append(names, s.Name())
		}
		if !slices.Equal(names, []string{"manifests", "metadata"}) {
			t.Errorf("%s holds %v, want manifests and metadata", v, names)
		}
		b, err := manifests.GetBundleFromDir(vdir)
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if want := packageName + ".v" + v.String(); b.CSV.Name != want || b.CSV.Spec.Version.String() != v.String() {
			t.Errorf("%s: CSV %s version %s, want %s version %s", v, b.CSV.Name, b.CSV.Spec.Version, want, v)
		}
		annotations := readAnnotations(t, filepath.Join(vdir, "metadata", "annotations.yaml"))
		if got := annotations["operators.operatorframework.io.bundle.package.v1"]; got != packageName {
			t.Errorf("%s: package %q, want %q", v, got, packageName)
		}
		checkOpenShiftVersions(t, v.String(), annotations["com.redhat.openshift.versions"], b.CSV.Spec.MinKubeVersion)
		replaces[b.CSV.Name] = b.CSV.Spec.Replaces

		// Red Hat's validator, with the metadata as the file of labels.
		for _, r := range ocpvalidation.OpenShiftValidator.Validate(b, map[string]string{ocpvalidation.FilePathKey: filepath.Join(vdir, "metadata", "annotations.yaml")}) {
			for _, e := range r.Errors {
				t.Errorf("%s: OpenShift validator error: %v", v, e)
			}
			for _, w := range r.Warnings {
				t.Errorf("%s: OpenShift validator warning: %v", v, w)
			}
		}
	}

	// One chain, newest to first: each replaces names the previous version
	// in the tree, and the first replaces nothing.
	for i := len(versions) - 1; i >= 0; i-- {
		name := packageName + ".v" + versions[i].String()
		want := ""
		if i > 0 {
			want = packageName + ".v" + versions[i-1].String()
		}
		if replaces[name] != want {
			t.Errorf("%s replaces %q, want %q: in a catalog that holds only this tree, every replaces must name a bundle of it", name, replaces[name], want)
		}
	}
}

func readAnnotations(t *testing.T, path string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var metadata struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(raw, &metadata); err != nil {
		t.Fatal(err)
	}
	return metadata.Annotations
}

// checkOpenShiftVersions fails unless versions, a com.redhat.openshift.versions
// value, begins with the OpenShift release whose Kubernetes is minKube.
func checkOpenShiftVersions(t *testing.T, what, versions, minKube string) {
	t.Helper()
	if versions == "" {
		t.Errorf("%s: no com.redhat.openshift.versions", what)
		return
	}
	// "v4.16" (and later), "v4.16-v4.18" (a range) or "=v4.16" (only it).
	lowest, _, _ := strings.Cut(strings.TrimPrefix(versions, "="), "-")
	v, err := semver.ParseTolerant(lowest)
	if err != nil || v.Major != 4 {
		t.Errorf("%s: com.redhat.openshift.versions %q: want v4.<minor>, a range or =v4.<minor> (%v)", what, versions, err)
		return
	}
	kube, known := openShiftKubernetes[int(v.Minor)]
	if !known {
		t.Errorf("%s: com.redhat.openshift.versions %q: OpenShift 4.%d is not one the table knows", what, versions, v.Minor)
		return
	}
	if want := fmt.Sprintf("1.%d.0", kube); minKube != want {
		t.Errorf("%s: com.redhat.openshift.versions begins with OpenShift 4.%d (Kubernetes 1.%d), but the CSV's minKubeVersion is %s: make them agree (Makefile OPENSHIFT_VERSIONS)",
			what, v.Minor, kube, minKube)
	}
}

// TestCSVAsksForNoSCC: the operator never lends its own rights to a
// PodSet's author. OpenShift lets a pod run under any SCC that either its
// creator (here the operator's ServiceAccount) or its own ServiceAccount
// may use; were the CSV to grant the operator use of a wider SCC
// (nonroot-v2, anyuid), every PodSet's pods could run under it.
func TestCSVAsksForNoSCC(t *testing.T) {
	csv := loadBundle(t).CSV
	spec := csv.Spec.InstallStrategy.StrategySpec
	var rules int
	for _, perms := range [][]operatorsv1alpha1.StrategyDeploymentPermissions{spec.Permissions, spec.ClusterPermissions} {
		for _, p := range perms {
			for _, r := range p.Rules {
				rules++
				group := slices.Contains(r.APIGroups, "security.openshift.io") || slices.Contains(r.APIGroups, "*")
				resource := slices.Contains(r.Resources, "securitycontextconstraints") || slices.Contains(r.Resources, "*")
				verb := slices.Contains(r.Verbs, "use") || slices.Contains(r.Verbs, "*")
				if group && resource && verb {
					t.Errorf("ServiceAccount %s may use SCCs %v (rule %+v): every PodSet author would get pods under them", p.ServiceAccountName, r.ResourceNames, r)
				}
			}
		}
	}
	if rules == 0 {
		t.Fatal("the CSV grants no rule at all; was the install strategy read?")
	}
}
